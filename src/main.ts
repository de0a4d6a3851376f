/*
 * The entry of the audit's bundle: the single executable's main script
 * (build.mjs) runs it for --self-check (and the probe's inside half),
 * --help and --version, and for a start under a name that is neither role's,
 * which it refuses. A service command is the entrypoint's own bundle
 * (src/entrypoint/start.ts), the shim's name the shim's (src/agent-exec/start.ts):
 * each runs only its role's code, and the root start none of this.
 */
import { basename } from "node:path";
import { AGENT_EXEC_NAME, ENTRYPOINT_NAME, EXIT, PROBE_AGENT_FLAG } from "./constants.ts";
import { parseEntrypointArgs } from "./entrypoint/cli.ts";
import { helpText, versionText } from "./help.ts";
import { Refusal, reportError, setProgramName, writeLine } from "./report.ts";

/*
 * The audit's modules are imported when it runs, not before: the bundle
 * evaluates only what the request needs, which keeps --version close to a
 * bare `node -e 0` (docs/benchmarks.md).
 */

/** The name the executable was started as, as the main script judges it: argv[0], else the file it runs from. */
function role(): string {
  for (const candidate of [basename(process.argv0), basename(process.execPath)]) {
    if (candidate === ENTRYPOINT_NAME || candidate === AGENT_EXEC_NAME) return candidate;
  }
  throw new Refusal(EXIT.usage, `started under an unknown name ${JSON.stringify(basename(process.argv0))}`, `start it as ${ENTRYPOINT_NAME} or ${AGENT_EXEC_NAME}`);
}

async function main(argv: readonly string[]): Promise<number> {
  const name = role();
  setProgramName(name);
  // The inside half of --self-check --probe, started through the shim as the agent.
  if (argv[0] === PROBE_AGENT_FLAG) return (await import("./self-check/probe-agent.ts")).runProbeAgent(argv.slice(1));
  if (argv[0] === "--self-check") {
    const audit = await import("./self-check/run.ts");
    return audit.runSelfCheck(audit.parseSelfCheckArgs(argv.slice(1)));
  }
  const request = parseEntrypointArgs(argv);
  if (request.kind === "run") throw new Error(`a service command reached the audit's bundle: build.mjs's main script routes it to src/entrypoint/start.ts's`);
  writeLine(1, request.kind === "help" ? helpText() : versionText(name));
  return EXIT.ok;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.exitCode = reportError(error);
  },
);
