/*
 * scripts/kill-checks.mjs deletes each security check listed in
 * scripts/kill-checks/checks.ts and runs the tests named for it. This holds
 * the list to the code: every refusal site and post-check of the stage, the
 * shim and the private-job code lies in exactly one listed snippet, and each
 * snippet in exactly one place, so a check added without an entry (and a
 * test that kills it) fails here, and so does an entry whose code moved.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { REPO } from "../../helpers/paths.ts";
import { transformSync } from "esbuild";
import { CHECKS, checkSites, deleteCheck, SCOPE, snippetSpan, syntaxProblem } from "../../../scripts/kill-checks/checks.ts";

const text = (file: string): string => readFileSync(join(REPO, file), "utf8");
const lineOf = (source: string, at: number): number => source.slice(0, at).split("\n").length;

test("every check site of the stage, the shim and the private-job code is listed once; every listed snippet holds one site", () => {
  const counts: string[] = [];
  for (const file of SCOPE) {
    const source = text(file);
    const sites = checkSites(file, source);
    const spans = CHECKS.filter((c) => c.file === file && !c.guard).map((check) => ({ check, span: snippetSpan(source, check) }));
    for (const { check, span } of spans) {
      assert.is(span.problem, undefined, `${check.id}: ${span.problem}`);
      if (span.problem !== undefined) continue;
      const inside = sites.filter((at) => at >= span.start && at < span.end);
      assert.is(inside.length, 1, `${check.id} holds ${inside.length} sites (lines ${inside.map((at) => lineOf(source, at)).join(", ")})`);
    }
    for (const at of sites) {
      const holders = spans.filter(({ span }) => span.problem === undefined && at >= span.start && at < span.end);
      assert.is(holders.length, 1, `${file}:${lineOf(source, at)} is a check site that ${holders.length === 0 ? "no entry of scripts/kill-checks/checks.ts lists: add one, with a test that fails without it" : "several entries list"}`);
    }
    counts.push(`${file} ${sites.length}`);
  }
  assert.ok(CHECKS.every((c) => SCOPE.includes(c.file)), "a check outside the scope");
  assert.is(new Set(CHECKS.map((c) => c.id)).size, CHECKS.length, "ids are unique");
  // The counts the docs give (README, "Tests"): sites, and guards that refuse nothing.
  assert.is(CHECKS.filter((c) => !c.guard).length, 195, counts.join("; "));
  assert.is(CHECKS.filter((c) => c.guard).length, 13);
});

test("a site the list does not cover is found: the control adds a refusal to stage.pl", () => {
  const source = text("src/stage/stage.pl");
  const planted = source.replace("\nsub exec_command {", '\nsub exec_command {\n  refuse(EXIT_USAGE, "planted", "none") if $ENV{X};');
  assert.is(checkSites("src/stage/stage.pl", planted).length, checkSites("src/stage/stage.pl", source).length + 1);
  // Comment lines and the helpers' definitions are no sites.
  assert.is(checkSites("x.pl", "# refuse(1)\nsub refuse { x() }\nmy $short = sub { refuse(1) };\nrefuse(2);\n").length, 1);
});

test("each edit removes its site and leaves the rest of the file as it was", () => {
  for (const check of CHECKS) {
    const source = text(check.file);
    const edited = deleteCheck(source, check);
    assert.is(checkSites(check.file, edited).length, checkSites(check.file, source).length - (check.guard ? 0 : 1), check.id);
    assert.not.equal(edited, source, check.id);
    const span = snippetSpan(source, check);
    if (span.problem !== undefined) continue;
    assert.is(edited.slice(0, span.start), source.slice(0, span.start), check.id);
    assert.is(edited.slice(span.start + (check.replace ?? "").length), source.slice(span.end), check.id);
  }
});

test("each edit leaves a program that compiles (else its tests would fail for a syntax error, not for the missing check)", () => {
  const transform = (code: string) => transformSync(code, { loader: "ts" });
  for (const check of CHECKS) assert.is(syntaxProblem(check.file, deleteCheck(text(check.file), check), transform), undefined, check.id);
  // The control: a cut through a string is caught, in both languages.
  assert.ok(syntaxProblem("src/stage/stage.pl", text("src/stage/stage.pl").replace('"setsid failed (" . errname()', '"setsid failed (" . errname('), transform));
  assert.ok(syntaxProblem("src/agent-exec/run.ts", text("src/agent-exec/run.ts").replace("(spawnAgent does)\");", "(spawnAgent does)"), transform));
});

test("every test file a check names exists, and names a test of its own", () => {
  for (const check of CHECKS) {
    assert.ok(Object.keys(check.tests).length > 0, `${check.id} names no test`);
    for (const [file, names] of Object.entries(check.tests)) {
      assert.ok(existsSync(join(REPO, file)), `${check.id}: ${file} does not exist`);
      // A name built in a loop matches a template literal of the file, each ${...} standing for any text.
      const source = text(file);
      const templates = [...source.matchAll(/`([^`\n]*\$\{[^`\n]*)`/g)].map((m) => new RegExp(`^${m[1]!.split(/\$\{[^}]*\}/).map((part) => part.replace(/[.*+?^$()|[\]\\{}]/g, "\\$&")).join(".+")}$`));
      for (const name of names) assert.ok(source.includes(JSON.stringify(name).slice(1, -1)) || templates.some((t) => t.test(name)), `${check.id}: ${file} has no test ${JSON.stringify(name)}`);
    }
  }
});

test.run();
