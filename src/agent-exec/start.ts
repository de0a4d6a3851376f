/*
 * The entry of the resident spawner's bundle (spawner.ts). The single
 * executable's main script (build.mjs) runs this bundle when it is started
 * as clankie-agent-exec --spawner (that one argument), and the private-job
 * bundle (private-start.ts: the shim) for every other command line of that
 * name: the process that holds SETUID+SETGID for the body's life neither
 * compiles nor loads the shim's command-line run, the entrypoint's or the
 * audit's code (docs/architecture.md, "The privileged path").
 */
import { AGENT_EXEC_NAME } from "../constants.ts";
import { reportError, setProgramName } from "../report.ts";
import { runSpawner } from "./spawner.ts";

setProgramName(AGENT_EXEC_NAME);
// Called inside the promise: a refusal before the channel opens (the caller, CLANKIE_SPAWNER_FD) is one line too.
Promise.resolve().then(runSpawner).then(
  (code) => (process.exitCode = code),
  (error: unknown) => (process.exitCode = reportError(error)),
);
