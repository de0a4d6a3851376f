/*
 * The single executable's entry: pick the role from the name it was started
 * as, run it, and turn any refusal into one line on stderr and an exit code.
 */
import { basename } from "node:path";
import { parseSelfCheckArgs } from "./cli.ts";
import { AGENT_EXEC_NAME, ENTRYPOINT_NAME, EXIT, PROBE_AGENT_FLAG } from "./constants.ts";
import { parseEntrypointArgs } from "./entrypoint/cli.ts";
import { helpText, versionText } from "./help.ts";
import { Refusal, reportError, setProgramName, writeLine } from "./report.ts";

/*
 * Each role's modules are imported when that role runs, not before: the
 * bundle evaluates only what the role needs, which keeps --version close to
 * a bare `node -e 0` (docs/benchmarks.md). The shim's start does not come
 * here at all when it is started under its own name: build.mjs gives it a
 * bundle of its own (src/agent-exec/start.ts).
 */

function role(): string {
  for (const candidate of [basename(process.argv0), basename(process.execPath)]) {
    if (candidate === ENTRYPOINT_NAME || candidate === AGENT_EXEC_NAME) return candidate;
  }
  throw new Refusal(EXIT.usage, `started under an unknown name ${JSON.stringify(basename(process.argv0))}`, `start it as ${ENTRYPOINT_NAME} or ${AGENT_EXEC_NAME}`);
}

async function main(argv: readonly string[]): Promise<number> {
  const name = role();
  setProgramName(name);
  if (name === AGENT_EXEC_NAME) return (await import("./agent-exec/main.ts")).runAgentExecRole(argv);
  // The inside half of --self-check --probe, started through the shim as the agent.
  if (argv[0] === PROBE_AGENT_FLAG) return (await import("./self-check/probe-agent.ts")).runProbeAgent(argv.slice(1));
  if (argv[0] === "--self-check") return (await import("./self-check/run.ts")).runSelfCheck(parseSelfCheckArgs(argv.slice(1)));
  const request = parseEntrypointArgs(argv);
  switch (request.kind) {
    case "help":
    case "version":
      writeLine(1, request.kind === "help" ? helpText() : versionText(name));
      return EXIT.ok;
    case "run":
      return (await import("./entrypoint/run.ts")).runEntrypoint(request.command);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.exitCode = reportError(error);
  },
);
