/*
 * clankie-separate's command line: --help, --version, or the service
 * command (--self-check is the audit's, parsed in src/cli.ts). Pure.
 */
import { ENTRYPOINT_NAME } from "../constants.ts";
import { parseCommand, usage } from "../cli.ts";

export type EntrypointRequest = { kind: "help" } | { kind: "version" } | { kind: "run"; command: string[] };

export function parseEntrypointArgs(argv: readonly string[]): EntrypointRequest {
  const program = ENTRYPOINT_NAME;
  const first = argv[0];
  if (first === undefined) throw usage(program, "no service command given", `name the service command: ${program} -- COMMAND [ARG...]`);
  if (first === "--help" || first === "-h") return { kind: "help" };
  if (first === "--version") return { kind: "version" };
  if (first === "--") return { kind: "run", command: parseCommand(program, argv.slice(1)) };
  if (first.startsWith("-")) {
    throw usage(program, `unknown option ${JSON.stringify(first)}`, `put the service command after --: ${program} -- COMMAND [ARG...]`);
  }
  return { kind: "run", command: parseCommand(program, argv) };
}
