/*
 * The entry of the private-job bundle (build.mjs): the shim's role with a
 * private job's code (private-job.ts: the lease, its release, the cleanup
 * stage). The single executable's main script runs it instead of start.ts's
 * bundle when clankie-agent-exec is started with --private-cleanup first or
 * --private-job before the "--", so that an ordinary spawn neither compiles
 * nor loads that code. It runs every request start.ts's bundle does, alike.
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
