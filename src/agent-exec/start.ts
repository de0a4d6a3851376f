/*
 * The entry of the shim's own bundle. The single executable's main script
 * (build.mjs) runs this bundle when it is started as clankie-agent-exec, and
 * src/main.ts's bundle for every other name: the shim, started for every
 * piece of agent work, then neither compiles nor loads the entrypoint's and
 * the audit's code (docs/benchmarks.md, "Agent spawn").
 */
import { AGENT_EXEC_NAME, SPAWNER_FLAG } from "../constants.ts";
import { reportError, setProgramName } from "../report.ts";
import { runAgentExecRole } from "./main.ts";
import { runSpawner } from "./spawner.ts";

setProgramName(AGENT_EXEC_NAME);
if (process.argv[2] === SPAWNER_FLAG && process.argv.length === 3) {
  // The resident spawner (spawner.ts), started by the root phase alone.
  // Called inside the promise: a refusal before the channel opens (the caller, CLANKIE_SPAWNER_FD) is one line too.
  Promise.resolve().then(runSpawner).then(
    (code) => (process.exitCode = code),
    (error: unknown) => (process.exitCode = reportError(error)),
  );
} else {
  try {
    process.exitCode = runAgentExecRole(process.argv.slice(2));
  } catch (error) {
    process.exitCode = reportError(error);
  }
}
