/*
 * The shim's role, from its arguments to its exec: --signal,
 * --private-cleanup, or a command to run as the agent (its --help and
 * --version are src/main.ts's, in the audit's bundle). It runs when the
 * executable is started under the shim's name (but --spawner):
 * private-start.ts, the private-job bundle's entry (build.mjs).
 */
import { parseAgentExecArgs } from "./cli.ts";
import { type PrivateJobs, runAgentExec, runPrivateCleanup, runSignal } from "./run.ts";

/** `jobs`: a private job's code, given by the private-job bundle's entry (private-start.ts) alone. */
export function runAgentExecRole(argv: readonly string[], jobs?: PrivateJobs): number {
  const request = parseAgentExecArgs(argv);
  switch (request.kind) {
    case "help":
    case "version":
      // build.mjs's main script starts the audit's bundle (src/main.ts) for these: no help text on the spawn path.
      throw new Error(`clankie-agent-exec ${argv[0]} reached the shim's bundle: build.mjs's main script routes it to src/main.ts's`);
    case "signal":
      return runSignal(request);
    case "private-cleanup":
      return runPrivateCleanup(request, jobs);
    case "run":
      return runAgentExec(request, jobs);
  }
}
