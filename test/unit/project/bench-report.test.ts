/*
 * npm run bench rewrites docs/benchmarks.md: what was written by hand below
 * its marker stays (bench/lib/markdown.mjs, keptPart; bench/run.mjs).
 */
import { readFileSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { KEPT_MARKER, keptPart } from "../../../bench/lib/markdown.mjs";
import { REPO } from "../../helpers/paths.ts";

const test = suite("the benchmarks report");

test("a new run keeps the marker and everything below it, word for word, and nothing above it", () => {
  const previous = `# Benchmarks\n\n## Summary\n\nold figures\n\n${KEPT_MARKER}\n\n## Partial run: by hand\n\n| a | b |\n\nlast line\n`;
  assert.is(keptPart(previous), `${KEPT_MARKER}\n\n## Partial run: by hand\n\n| a | b |\n\nlast line\n`);
});

test("a report without the marker keeps nothing (a first run, or --out to a new file)", () => {
  assert.is(keptPart("# Benchmarks\n\n## Summary\n"), "");
  assert.is(keptPart(""), "");
});

test("docs/benchmarks.md holds the marker once, above every section written by hand", () => {
  const doc = readFileSync(`${REPO}/docs/benchmarks.md`, "utf8");
  assert.is(doc.split(KEPT_MARKER).length, 2);
  const kept = keptPart(doc);
  for (const heading of ["## Partial run: issue 34 item 3", "## The resident spawner against the per-spawn shim"]) assert.ok(kept.includes(heading), heading);
});

test.run();
