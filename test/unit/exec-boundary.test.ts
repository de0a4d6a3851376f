/*
 * src/system-exec.ts is the only module that starts programs: no other file
 * under src/ may import child_process or execa. This test fails the build
 * (npm test) when one does.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { REPO } from "../helpers/paths.ts";

const SRC = join(REPO, "src");
const ALLOWED = new Set(["src/system-exec.ts"]);
const IMPORT = /(?:from\s*|import\s*\(\s*|require\s*\(\s*|getBuiltinModule\s*\(\s*)["'](?:node:)?(child_process|execa)(?:\/[^"']*)?["']/g;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

export function offenders(sources: ReadonlyArray<readonly [string, string]>): string[] {
  return sources.flatMap(([name, text]) => (ALLOWED.has(name) ? [] : [...text.matchAll(IMPORT)].map((m) => `${name} imports ${m[1]}`)));
}

test("only src/system-exec.ts imports child_process or execa", () => {
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
  ];
  assert.is(offenders(forms.map((text, i) => [`src/x${i}.ts`, text] as const)).length, forms.length);
  assert.equal(offenders([["src/system-exec.ts", forms[0]!]]), []);
});

test.run();
