/*
 * The shim's role, from its arguments to its exec: --signal,
 * --private-cleanup, or a command to run as the agent (its --help and
 * --version are src/main.ts's, in the audit's bundle). src/main.ts calls it when the
 * executable is started under the shim's name, and so does start.ts, the
 * entry of the shim's own bundle (build.mjs), which holds nothing else.
 */
import { parseAgentExecArgs } from "./cli.ts";
import { runAgentExec, runPrivateCleanup, runSignal } from "./run.ts";

export function runAgentExecRole(argv: readonly string[]): number {
  const request = parseAgentExecArgs(argv);
  switch (request.kind) {
    case "help":
    case "version":
      // build.mjs's main script starts the audit's bundle (src/main.ts) for these: no help text on the spawn path.
      throw new Error(`clankie-agent-exec ${argv[0]} reached the shim's bundle: build.mjs's main script routes it to src/main.ts's`);
    case "signal":
      return runSignal(request);
    case "private-cleanup":
      return runPrivateCleanup(request);
    case "run":
      return runAgentExec(request);
  }
}
