/*
 * The privileged path stays small (docs/architecture.md, "The privileged
 * path"): scripts/code-lines.mjs counts the code lines of what each bundle of
 * the built executable can run (esbuild's metafiles in .build/, written by
 * build.mjs), and the entrypoint's bundle, which runs as root, holds the
 * root start alone, under its ceiling; the resident spawner's bundle, which
 * holds SETUID+SETGID for the body's life and carries the grab and the stage
 * of every spawn, holds no private job's code and no shim command line's
 * run, under its ceiling.
 * Needs a build (npm test builds first).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { REPO } from "../../helpers/paths.ts";
import { PRIVATE_SECTION, ROLE_SECTION } from "../../../src/stage/sections.ts";
import { measure, perlCodeLines, scriptCodeLines } from "../../../scripts/code-lines.mjs";

/** Issue 27's goal for everything the root start can run. */
const ROOT_START_CEILING = 2300;
/** Issue 35's goal for what runs with SETUID+SETGID for every spawn: the resident spawner, its grab and the stage (issue 27's for the shim before it). */
const SPAWNER_CEILING = 1500;

const built = () => {
  assert.ok(existsSync(join(REPO, ".build/clankie-separate.meta.json")), "no .build/clankie-separate.meta.json: build first (node build.mjs)");
  return measure(join(REPO, ".build"));
};

test("the root start (the entrypoint's bundle) is at most 2,300 code lines", () => {
  const root = built().rows.find((row) => row.row === "root start")!;
  assert.ok(root.lines <= ROOT_START_CEILING, `the root start is ${root.lines} code lines, over ${ROOT_START_CEILING}: ${root.files.map((f) => `${f.path} ${f.lines}`).join(", ")}`);
  assert.ok(root.lines > 1000, `${root.lines}: the count missed most of it`);
});

test("the spawner (its bundle, the grab and the stage) is at most 1,500 code lines, and holds no private job's, help or shim command line's code", () => {
  const rows = built().rows;
  const spawner = rows.find((row) => row.row === "spawner (resident + grab + stage)")!;
  assert.ok(spawner.lines <= SPAWNER_CEILING, `the spawner is ${spawner.lines} code lines, over ${SPAWNER_CEILING}: ${spawner.files.map((f) => `${f.path} ${f.lines}`).join(", ")}`);
  assert.ok(spawner.lines > 800, `${spawner.lines}: the count missed most of it`);
  const paths = spawner.files.map((f) => f.path);
  assert.ok(paths.includes("src/agent-exec/spawner.ts") && paths.includes("src/perl/spawn-grab.pl") && paths.includes(".build/clankie-agent-exec.stage.pl"), paths.join(" "));
  assert.equal(paths.filter((path) => /^src\/(agent-exec\/(private-job|run|main)|private-groups|exec\/(capture|replace)|help|build-info)\.ts$/.test(path)), []);
  const stage = readFileSync(join(REPO, ".build/clankie-agent-exec.stage.pl"), "utf8");
  assert.not.ok(stage.includes(`${ROLE_SECTION}${PRIVATE_SECTION}] `) || stage.includes(`${ROLE_SECTION}cleanup] `) || stage.includes(`${ROLE_SECTION}service] `), "the spawner's stage holds a private, cleanup or service section");
  const shim = rows.find((row) => row.row === "shim, private job (shim + stage)")!;
  assert.ok(shim.files.some((f) => f.path === "src/agent-exec/private-job.ts") && shim.files.some((f) => f.path === "src/agent-exec/run.ts"), shim.files.map((f) => f.path).join(" "));
  assert.ok(readFileSync(join(REPO, ".build/clankie-private-job.stage.pl"), "utf8").includes(`${ROLE_SECTION}${PRIVATE_SECTION}] `));
});

test("the entrypoint's bundle holds no audit, help text, shim or confinement tables; the audit's and the shim's bundles are counted", () => {
  const { rows } = built();
  assert.equal(rows.map((row) => row.row), ["root start", "audit", "spawner (resident + grab + stage)", "shim, private job (shim + stage)"]);
  const root = rows[0]!.files.map((f) => f.path);
  const offPath = root.filter((path) => /^src\/(self-check|agent-exec|service)\/|^src\/(help|confinement|seccomp-filter|embedded-bundle|main)\.ts$|^src\/stage\/stage(-source\.ts|\.pl)$/.test(path));
  assert.equal(offPath, []);
  assert.ok(root.includes("src/entrypoint/run.ts") && root.includes(".build/clankie-separate.stage.pl"), root.join(" "));
  assert.ok(rows[1]!.files.some((f) => f.path === "src/self-check/run.ts"));
  assert.ok(rows[2]!.files.some((f) => f.path === "src/agent-exec/spawner.ts") && rows[2]!.files.some((f) => f.path === ".build/clankie-agent-exec.stage.pl"));
});

test("a code line: comments, blank lines and JSDoc are not; a // in a string, a regular expression or a template is", () => {
  const text = [
    "/*",
    " * a block comment",
    " */",
    "",
    "/** JSDoc */",
    'const url = "http://example"; // trailing comment',
    "const re = /\\/\\/ not a comment/;",
    "const t = `line one",
    "// inside a template",
    "`;",
    "// a comment alone",
    "   ",
    "function f() { /* inline */ return 1; }",
  ].join("\n");
  assert.is(scriptCodeLines(text, "x.ts"), 6);
  assert.is(scriptCodeLines("// only\n/* comments */\n", "x.mjs"), 0);
});

test("a Perl code line: not blank, not a # comment, not POD, nothing after __END__", () => {
  const text = ["#!/usr/bin/perl", "use strict; # trailing", "", "=pod", "", "my $x = 1;", "", "=cut", "my $y = 2;", "  # indented comment", 'print "# not a comment\\n";', "__END__", "my $z = 3;"].join("\n");
  assert.is(perlCodeLines(text), 3);
});

test.run();
