/*
 * clankie-agent-exec's command line: --help, --version, --signal,
 * --private-cleanup, or the options of a command to run as the agent
 * (src/agent-exec/run-args.ts, which the spawner parses alone). Pure: argv
 * in, a request out, or a usage refusal (exit 64, src/cli.ts).
 */
import { AGENT_EXEC_NAME, AGENT_SIGNALS } from "../constants.ts";
import { optionValue, parseInteger, usage } from "../cli.ts";
import { parseRunArgs, type RunRequest } from "./run-args.ts";

export type AgentExecRequest =
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "signal"; signal: string; pgid: number }
  | { kind: "private-cleanup"; pid: number }
  | RunRequest;

const SIGNALS: ReadonlySet<string> = new Set(AGENT_SIGNALS);

function parseSignal(program: string, value: string | undefined): string {
  const name = value === undefined ? "" : value.startsWith("SIG") ? value : `SIG${value}`;
  if (!SIGNALS.has(name)) {
    throw usage(program, `--signal needs one of ${[...SIGNALS].map((s) => s.slice(3)).join(", ")}, got ${JSON.stringify(value ?? "")}`, "name the signal");
  }
  return name;
}

export function parseAgentExecArgs(argv: readonly string[]): AgentExecRequest {
  const program = AGENT_EXEC_NAME;
  const first = argv[0];
  if (first === "--help" || first === "-h") return { kind: "help" };
  if (first === "--version") return { kind: "version" };
  if (first === "--signal" || first?.startsWith("--signal=")) {
    let signal: string | undefined;
    let pgid: number | undefined;
    let i = 0;
    while (i < argv.length) {
      const { name, value, next } = optionValue(argv, i);
      if (name === "--signal") {
        signal = parseSignal(program, value);
      } else if (name === "--pgid") {
        pgid = parseInteger(program, name, value, 2, 0x3fffffff);
      } else {
        throw usage(program, `unknown option ${JSON.stringify(name)} with --signal`, "use --signal SIGNAL --pgid PGID");
      }
      i = next;
    }
    if (signal === undefined || pgid === undefined) throw usage(program, "--signal needs --pgid", "use --signal SIGNAL --pgid PGID");
    return { kind: "signal", signal, pgid };
  }
  if (first === "--private-cleanup" || first?.startsWith("--private-cleanup=")) {
    const { value, next } = optionValue(argv, 0);
    if (next !== argv.length) throw usage(program, "--private-cleanup takes no other option", "use --private-cleanup PID");
    return { kind: "private-cleanup", pid: parseInteger(program, "--private-cleanup", value, 2, 0x3fffffff) };
  }
  return parseRunArgs(argv);
}
