/*
 * Every test is registered before its suite runs. uvu's `run()` takes the
 * tests registered so far: one written below it is never run and never
 * counted, so it passes without having been tried (test/cli/binary.test.ts
 * held such a test until this check). This reads every test file and fails
 * on a suite that registers a test after its last `.run()`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { REPO } from "../../helpers/paths.ts";

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? testFiles(join(dir, entry.name)) : entry.name.endsWith(".test.ts") ? [join(dir, entry.name)] : [],
  );
}

/** The suites of `text` that register a test after their last run(): `name(`, `name.skip(`, `name.only(` or `rootTest(name, `. */
export function registeredAfterRun(text: string): string[] {
  const suites = new Set([...text.matchAll(/^const (\w+) = suite\(/gm)].map((m) => m[1]!));
  if (/import \{[^}]*\btest\b[^}]*\} from "uvu"/.test(text)) suites.add("test");
  return [...suites].filter((name) => {
    const last = text.lastIndexOf(`${name}.run()`);
    const after = last < 0 ? "" : text.slice(last);
    return new RegExp(`(?<![\\w.])${name}(?:\\.skip|\\.only)?\\(|\\w+Test\\(${name}\\b`).test(after);
  });
}

test("registeredAfterRun: finds a test written below run(), and none above it", () => {
  const suite = 'import { test } from "uvu";\ntest("a", () => {});\n';
  assert.equal(registeredAfterRun(`${suite}test.run();\n`), []);
  assert.equal(registeredAfterRun(`${suite}test.run();\ntest("b", () => {});\n`), ["test"]);
  assert.equal(registeredAfterRun('const s = suite("s");\ns.run();\nrootTest(s, "b", () => {});\n'), ["s"]);
});

test("no test file registers a test after its suite's run()", () => {
  const late = testFiles(join(REPO, "test")).flatMap((file) => registeredAfterRun(readFileSync(file, "utf8")).map((name) => `${relative(REPO, file)}: ${name}`));
  assert.equal(late, []);
});

test.run();
