/*
 * The single executable's entry: pick the role from the name it was started
 * as, run it, and turn any refusal into one line on stderr and an exit code.
 */
import { basename } from "node:path";
import { parseAgentExecArgs, parseEntrypointArgs } from "./cli.ts";
import { AGENT_EXEC_NAME, ENTRYPOINT_NAME, EXIT } from "./constants.ts";
import { runEntrypoint } from "./entrypoint/run.ts";
import { runVerifyService } from "./entrypoint/verify-service.ts";
import { runAgentExec, runSignal, runVerifyAgent } from "./agent-exec/run.ts";
import { runSelfCheck } from "./self-check/run.ts";
import { PROBE_AGENT_FLAG, runProbeAgent } from "./self-check/probe-agent.ts";
import { helpText, versionText } from "./help.ts";
import { Refusal, reportError, setProgramName, writeLine } from "./report.ts";

function role(): string {
  for (const candidate of [basename(process.argv0), basename(process.execPath)]) {
    if (candidate === ENTRYPOINT_NAME || candidate === AGENT_EXEC_NAME) return candidate;
  }
  throw new Refusal(EXIT.usage, `started under an unknown name ${JSON.stringify(basename(process.argv0))}`, `start it as ${ENTRYPOINT_NAME} or ${AGENT_EXEC_NAME}`);
}

/** --help and --version, the same for both roles. */
function inform(kind: "help" | "version", name: string): number {
  writeLine(1, kind === "help" ? helpText() : versionText(name));
  return EXIT.ok;
}

function main(argv: readonly string[]): number {
  const name = role();
  setProgramName(name);
  if (name === AGENT_EXEC_NAME) {
    const request = parseAgentExecArgs(argv);
    switch (request.kind) {
      case "help":
      case "version":
        return inform(request.kind, name);
      case "signal":
        return runSignal(request);
      case "verify-agent":
        return runVerifyAgent(request);
      case "run":
        return runAgentExec(request);
    }
  }
  // The inside half of --self-check --probe, started through the shim as the agent.
  if (argv[0] === PROBE_AGENT_FLAG) return runProbeAgent(argv.slice(1));
  const request = parseEntrypointArgs(argv);
  switch (request.kind) {
    case "help":
    case "version":
      return inform(request.kind, name);
    case "self-check":
      return runSelfCheck(request);
    case "verify-service":
      return runVerifyService(request);
    case "run":
      return runEntrypoint(request.command);
  }
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (error) {
  process.exitCode = reportError(error);
}
