/*
 * Programs are started in three places only, one per audience, each through
 * the gate of src/exec/rules.ts: src/exec/replace.ts (the executable's
 * exec-replace, the only process.execve), src/exec/capture.ts (the audit's
 * run-and-capture) and the service's package API (src/system-exec.ts,
 * src/service/). No other file under src/ may import child_process or execa,
 * or call process.execve. This test fails the build (npm test) when one does.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { REPO } from "../../helpers/paths.ts";

const SRC = join(REPO, "src");
const ALLOWED = new Set(["src/exec/capture.ts", "src/exec/start-child.ts", "src/system-exec.ts", "src/service/agent-stop.ts", "src/service/private-release.ts", "src/service/agent-start.ts", "src/service/stream-acceptor.ts", "src/service/job-process.ts"]);
const EXECVE = /process\.execve\b/g;
const IMPORT = /(?:from\s*|import\s*\(\s*|require\s*\(\s*|getBuiltinModule\s*\(\s*)["'](?:node:)?(child_process|execa)(?:\/[^"']*)?["']/g;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

export function offenders(sources: ReadonlyArray<readonly [string, string]>): string[] {
  return sources.flatMap(([name, text]) => [
    ...(ALLOWED.has(name) ? [] : [...text.matchAll(IMPORT)].map((m) => `${name} imports ${m[1]}`)),
    ...(name === "src/exec/replace.ts" ? [] : [...text.matchAll(EXECVE)].map(() => `${name} calls process.execve`)),
  ]);
}

test("only src/exec/capture.ts and the service's API import child_process or execa; only src/exec/replace.ts calls process.execve", () => {
  const sources = files(SRC).map((file) => [relative(REPO, file), readFileSync(file, "utf8")] as const);
  assert.ok(sources.length > 10);
  assert.equal(offenders(sources), []);
});

test("the rule sees every import form", () => {
  const forms = [
    'import { spawn } from "node:child_process";',
    "import * as cp from 'child_process';",
    'const cp = require("child_process");',
    'const { execa } = await import("execa");',
    'import { execaSync } from "execa";',
    'const cp = process.getBuiltinModule("node:child_process");',
    "process.execve(path, argv, env);",
  ];
  assert.is(offenders(forms.map((text, i) => [`src/x${i}.ts`, text] as const)).length, forms.length);
  assert.equal(offenders([["src/system-exec.ts", forms[0]!]]), []);
  assert.equal(offenders([["src/exec/replace.ts", forms.at(-1)!]]), []);
  assert.equal(offenders([["src/exec/capture.ts", forms.at(-1)!]]), ["src/exec/capture.ts calls process.execve"]);
});

test.run();
