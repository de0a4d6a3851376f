/*
 * hyperfine(1) from Debian, always with --export-json. Figures are read from
 * the JSON (seconds) and kept in milliseconds. Every command runs with
 * -N (no intermediate shell): hyperfine splits the command line like a shell
 * and execs it, so argv[0] is the path as written.
 */
import { readFileSync } from "node:fs";
import { run, shellLine } from "./process.mjs";

export const HYPERFINE = "/usr/bin/hyperfine";

/**
 * One hyperfine run as groups of arguments: the options, then per command its
 * --prepare (when any command has one, every command gets one: hyperfine pairs
 * them by position; `true` stands in), its --command-name and the command.
 */
export function hyperfineGroups({ warmup, runs, json, commands, ignoreFailure = false }) {
  const groups = [[HYPERFINE, "-N", ...(ignoreFailure ? ["-i"] : []), "--style", "basic", "--warmup", String(warmup), "--runs", String(runs), "--export-json", json]];
  const anyPrepare = commands.some((c) => c.prepare);
  for (const command of commands) {
    groups.push([...(anyPrepare ? ["--prepare", shellLine(command.prepare ?? ["true"])] : []), "--command-name", command.name, shellLine(command.argv)]);
  }
  return groups;
}

export function hyperfineArgv(spec) {
  return hyperfineGroups(spec).flat();
}

/** The invocation as a shell command, one benchmarked command per line. */
export function formatInvocation(spec) {
  return hyperfineGroups(spec).map(shellLine).join(" \\\n    ");
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Results in the order of `commands`, in milliseconds. Given several files
 * (rounds of the same commands, run one after another), each command's times
 * are pooled across them, and its CPU time is the mean over every run.
 */
export function readHyperfineJson(paths, commands) {
  const rounds = [paths].flat().map((path) => JSON.parse(readFileSync(path, "utf8")).results);
  return commands.map((command) => {
    // By name: a round may run the commands in another order (bench/agent-exec.mjs rotates them).
    const own = rounds.map((results) => {
      const found = results.find((result) => result.command === command.name);
      if (!found) throw new Error(`bench: hyperfine's results hold no command named ${JSON.stringify(command.name)}`);
      return found;
    });
    const times = own.flatMap((result) => result.times).map((t) => t * 1000).sort((a, b) => a - b);
    const mean = times.reduce((sum, t) => sum + t, 0) / times.length;
    const cpuSum = own.reduce((sum, result) => sum + (result.user + result.system) * result.times.length, 0);
    return {
      name: command.name,
      runs: times.length,
      median: median(times),
      mean,
      stddev: Math.sqrt(times.reduce((sum, t) => sum + (t - mean) ** 2, 0) / Math.max(1, times.length - 1)),
      min: times[0],
      max: times[times.length - 1],
      /** CPU time of the command and its children (mean): steadier than wall time on a busy machine. */
      cpu: (cpuSum / times.length) * 1000,
    };
  });
}

/** Runs hyperfine on this host. Returns the invocation (for the report) and the results. */
export function runHyperfine(spec, options = {}) {
  const argv = hyperfineArgv(spec);
  run(argv[0], argv.slice(1), options);
  return { invocation: formatInvocation(spec), results: readHyperfineJson(spec.json, spec.commands) };
}
