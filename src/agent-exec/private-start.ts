/*
 * The entry of the private-job bundle (build.mjs): the shim's role with a
 * private job's code (private-job.ts: the lease, its release, the cleanup
 * stage). The single executable's main script runs it for every command
 * line of clankie-agent-exec but --spawner (start.ts's bundle, the resident
 * spawner) and the help text's: a command after --, --signal, --private-job
 * (the spawner starts it so for a private job) and --private-cleanup.
 */
import { AGENT_EXEC_NAME } from "../constants.ts";
import { reportError, setProgramName } from "../report.ts";
import { runAgentExecRole } from "./main.ts";
import { leasePrivateGroup, releaseJobLease } from "./private-job.ts";

setProgramName(AGENT_EXEC_NAME);
try {
  process.exitCode = runAgentExecRole(process.argv.slice(2), { leasePrivateGroup, releaseJobLease });
} catch (error) {
  process.exitCode = reportError(error);
}
