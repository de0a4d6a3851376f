/*
 * Running programs for the benchmark: synchronously, never through a shell
 * unless the command is itself a shell, and with the exact argv kept so that
 * docs/benchmarks.md can print what was run.
 */
import { spawnSync } from "node:child_process";

/** Quotes one argument for sh(1) (and for hyperfine -N, which splits like a shell). */
export function shellQuote(arg) {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${String(arg).replace(/'/g, `'\\''`)}'`;
}

export function shellLine(argv) {
  return argv.map(shellQuote).join(" ");
}

/** Runs a program with the terminal attached; throws on a non-zero exit. */
export function run(file, args, options = {}) {
  const result = spawnSync(file, args, { stdio: ["ignore", "inherit", "inherit"], ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`${shellLine([file, ...args])} exited ${result.status ?? result.signal}`);
  return result;
}

/** Runs a program and returns its stdout; throws with its stderr on a non-zero exit. */
export function capture(file, args, options = {}) {
  const result = spawnSync(file, args, { encoding: "utf8", maxBuffer: 64 << 20, ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    throw new Error(`${shellLine([file, ...args])} exited ${result.status ?? result.signal}: ${(result.stderr ?? "").trim()}`);
  }
  return result.stdout;
}
