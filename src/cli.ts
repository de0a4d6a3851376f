/*
 * What both roles' command lines share: the usage refusal (exit 64) that
 * names the problem and the fix, whole numbers in a range, the command
 * after --, and "--name=value" or "--name value". Each role parses its own
 * options (src/entrypoint/cli.ts, src/agent-exec/cli.ts, and the audit's
 * src/self-check/run.ts).
 * Pure: argv in, a request out, or a Refusal.
 */
import { EXIT } from "./constants.ts";
import { Refusal } from "./report.ts";

export function usage(program: string, what: string, fix: string): Refusal {
  return new Refusal(EXIT.usage, what, `${fix} (see ${program} --help)`);
}

export function parseInteger(program: string, option: string, text: string | undefined, min: number, max: number): number {
  if (text === undefined || !/^-?\d{1,10}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw usage(program, `${option} needs a whole number from ${min} to ${max}, got ${JSON.stringify(text ?? "")}`, `give ${option} a number in range`);
  }
  return Number(text);
}

/** The command after --: never empty, and a copy (the caller's argv is left alone). */
export function parseCommand(program: string, rest: readonly string[]): string[] {
  if (rest.length === 0 || rest[0] === "" || rest[0] === undefined) throw usage(program, "no command given", `put the command after --: ${program} -- COMMAND [ARG...]`);
  return [...rest];
}

/** Splits "--name=value" or takes the value from the next argument. */
export function optionValue(argv: readonly string[], index: number): { name: string; value: string | undefined; next: number } {
  const arg = argv[index]!;
  const equals = arg.indexOf("=");
  if (arg.startsWith("--") && equals > 0) return { name: arg.slice(0, equals), value: arg.slice(equals + 1), next: index + 1 };
  return { name: arg, value: argv[index + 1], next: index + 2 };
}
