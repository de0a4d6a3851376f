/*
 * The shim's role, from its arguments to its exec: --help, --version,
 * --signal, --private-cleanup, or a command to run as the agent. src/main.ts calls it when the
 * executable is started under the shim's name, and so does start.ts, the
 * entry of the shim's own bundle (build.mjs), which holds nothing else.
 */
import { AGENT_EXEC_NAME, EXIT } from "../constants.ts";
import { helpText, versionText } from "../help.ts";
import { writeLine } from "../report.ts";
import { parseAgentExecArgs } from "./cli.ts";
import { runAgentExec, runPrivateCleanup, runSignal } from "./run.ts";

export function runAgentExecRole(argv: readonly string[]): number {
  const request = parseAgentExecArgs(argv);
  switch (request.kind) {
    case "help":
      writeLine(1, helpText());
      return EXIT.ok;
    case "version":
      writeLine(1, versionText(AGENT_EXEC_NAME));
      return EXIT.ok;
    case "signal":
      return runSignal(request);
    case "private-cleanup":
      return runPrivateCleanup(request);
    case "run":
      return runAgentExec(request);
  }
}
