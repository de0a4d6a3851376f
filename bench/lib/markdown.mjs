/* Formatting for docs/benchmarks.md. Pure. */
import { shellQuote } from "./process.mjs";

export function ms(value) {
  if (value === undefined || Number.isNaN(value)) return "n/a";
  if (value >= 1000) return `${(value / 1000).toFixed(2)} s`;
  if (value >= 100) return `${value.toFixed(0)} ms`;
  return `${value.toFixed(1)} ms`;
}

export function megabytes(bytes) {
  return `${(bytes / 1e6).toFixed(1)} MB (${bytes.toLocaleString("en-US")} bytes)`;
}

export function ratio(value, reference) {
  return `${(value / reference).toFixed(2)}x`;
}

export function verdict(met) {
  return met ? "**met**" : "**not met**";
}

export function codeBlock(text, lang = "sh") {
  return `\`\`\`${lang}\n${text.replace(/\n$/, "")}\n\`\`\``;
}

/** A block folded away by default (GitHub renders <details>). */
export function folded(summary, body) {
  return `<details><summary>${summary}</summary>\n\n${body}\n\n</details>`;
}

export function table(header, rows) {
  return [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

/** One row per hyperfine result, with the ratio of medians to each named reference. */
export function resultsTable(results, references = []) {
  const byName = new Map(results.map((r) => [r.name, r]));
  const header = ["command", "median", "mean ± σ", "min … max", "runs", "user + sys (mean)", ...references.map((name) => `median ÷ ${name}`), ...references.map((name) => `user + sys ÷ ${name}`)];
  const rows = results.map((r) => [
    r.name,
    ms(r.median),
    `${ms(r.mean)} ± ${ms(r.stddev)}`,
    `${ms(r.min)} … ${ms(r.max)}`,
    String(r.runs),
    ms(r.cpu),
    ...references.map((name) => ratio(r.median, byName.get(name).median)),
    ...references.map((name) => ratio(r.cpu, byName.get(name).cpu)),
  ]);
  return table(header, rows);
}

export { shellQuote };

/**
 * The line in docs/benchmarks.md below which measurements were written by
 * hand (partial runs, changes tried and not kept): a new run writes
 * everything above it and keeps everything from it on (keptPart).
 */
export const KEPT_MARKER = "<!-- Below: measurements written by hand (partial runs, changes tried and not kept). npm run bench writes everything above this line and keeps this line and everything below it as they are. -->";

/** Pure: what a new report keeps of the `previous` one: KEPT_MARKER and everything after it, or "" without the marker. */
export function keptPart(previous) {
  const at = previous.indexOf(KEPT_MARKER);
  return at < 0 ? "" : previous.slice(at);
}
