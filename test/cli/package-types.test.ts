/*
 * How a service gets the package, and the types it gets: `npm pack` of the
 * built tree (package.json's files: dist/lib; execa bundled), installed with
 * `npm install --offline` into a project of its own in a temporary
 * directory, as a Node project consumes a tarball (no network: execa travels
 * inside the tarball). Then, with skipLibCheck off and the package's types
 * from its installed dist/lib (as its exports name them, not src/):
 *   - the import works at run time, execa resolved from the bundle;
 *   - the sample service of README's API section, the API's type test
 *     (test/unit/project/api-types.ts) and the service pattern of issue 36
 *     (test/fixtures/service-from-readme.ts, which also holds no `!` and no
 *     cast) type-check;
 *   - every `ts` block of README.md type-checks, each as a project of its
 *     own, so a README example that does not compile fails npm test.
 * The repository's own tsc run maps the package name to src/ (tsconfig.json
 * paths), so this is what checks the declarations the build ships.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { NODE24, REPO } from "../helpers/paths.ts";
import { SAMPLE_SERVICE } from "../helpers/sample-service.ts";

const test = suite("package-types");

const SERVICE_PATTERN = "test/fixtures/service-from-readme.ts";
const TSCONFIG = { compilerOptions: { target: "es2023", module: "nodenext", moduleResolution: "nodenext", strict: true, noEmit: true, skipLibCheck: false, types: ["node"] }, include: ["*.ts"] };

/** The `ts` blocks of a Markdown text, in order, with the line each starts on. */
export function typeScriptBlocks(markdown: string): { line: number; code: string }[] {
  const blocks: { line: number; code: string }[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```ts") continue;
    const end = lines.indexOf("```", i + 1);
    blocks.push({ line: i + 1, code: lines.slice(i + 1, end).join("\n") });
    i = end;
  }
  return blocks;
}

let root = "";
let installed = "";

/** A project of its own in `dir`: the installed package (and @types/node, from this repository) in its node_modules. */
function project(dir: string): void {
  mkdirSync(join(dir, "node_modules/@types"), { recursive: true });
  symlinkSync(join(REPO, "node_modules/@types/node"), join(dir, "node_modules/@types/node"));
  symlinkSync(join(installed, "node_modules/clankie-separate"), join(dir, "node_modules/clankie-separate"));
  writeFileSync(join(dir, "package.json"), '{ "name": "a-service", "private": true, "type": "module" }\n');
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG));
}

/** tsc's error lines for the project in `dir`, and its stdout. */
function typeCheck(dir: string): { errors: string[]; stdout: string; status: number | null; stderr: string } {
  const tsc = spawnSync(NODE24, [join(REPO, "node_modules/typescript/bin/tsc"), "-p", dir, "--traceResolution"], { encoding: "utf8", cwd: dir, maxBuffer: 64 << 20 });
  return { errors: tsc.stdout.split("\n").filter((line) => /error TS\d+/.test(line)), stdout: tsc.stdout, status: tsc.status, stderr: tsc.stderr };
}

test.before(() => {
  root = mkdtempSync(join(tmpdir(), "clankie-consumer-"));
  const packed = spawnSync("npm", ["pack", "--ignore-scripts", "--pack-destination", root], { cwd: REPO, encoding: "utf8" });
  assert.is(packed.status, 0, packed.stderr);
  const tarball = readdirSync(root).find((name) => name.endsWith(".tgz"));
  assert.ok(tarball, `npm pack wrote no tarball: ${packed.stdout}`);
  installed = join(root, "installed");
  mkdirSync(installed);
  writeFileSync(join(installed, "package.json"), '{ "name": "a-service", "private": true, "type": "module" }\n');
  const install = spawnSync("npm", ["install", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", join(root, tarball!)], { cwd: installed, encoding: "utf8" });
  assert.is(install.status, 0, `npm install --offline of the tarball: ${install.stdout}\n${install.stderr}`);
});

test.after(() => {
  if (root !== "") rmSync(root, { recursive: true, force: true });
});

test("npm pack's tarball holds dist/lib and execa, not the executables; installed offline, it imports and execa resolves from it", () => {
  const pkg = join(installed, "node_modules/clankie-separate");
  assert.ok(existsSync(join(pkg, "dist/lib/system-exec.js")) && existsSync(join(pkg, "dist/lib/system-exec.d.ts")), "dist/lib");
  assert.not.ok(existsSync(join(pkg, "dist/clankie-separate")), "the executables come from the image, not the package");
  assert.ok(existsSync(join(pkg, "node_modules/execa/package.json")), "execa bundled");
  assert.not.ok(existsSync(join(installed, "node_modules/execa")), "execa is the bundle's, not installed beside it");
  // system-exec.js imports execa at its top: the import succeeds only if execa resolves from the package.
  const script = 'const m = await import("clankie-separate/system-exec"); console.log(JSON.stringify({ busy: m.EXIT_CODES.busy, spawnAgent: typeof m.spawnAgent }))';
  const run = spawnSync(NODE24, ["--input-type=module", "-e", script], { cwd: installed, encoding: "utf8" });
  assert.is(run.status, 0, run.stderr);
  assert.equal(JSON.parse(run.stdout), { busy: 75, spawnAgent: "function" });
});

test("a service's own project type-checks the sample service, the API's type test and the service pattern against the installed declarations, no `!` and no cast", () => {
  const dir = join(root, "service");
  project(dir);
  for (const file of [SAMPLE_SERVICE, "test/unit/project/api-types.ts", SERVICE_PATTERN]) copyFileSync(join(REPO, file), join(dir, file.split("/").at(-1)!));
  const tsc = typeCheck(dir);
  assert.equal(tsc.errors, [], "tsc found errors");
  assert.is(tsc.status, 0, tsc.stderr);
  assert.match(tsc.stdout, /Module name 'clankie-separate\/system-exec' was successfully resolved to '[^']*\/installed\/node_modules\/clankie-separate\/dist\/lib\/system-exec\.d\.ts'/, "the installed declarations, not src/");
  // The pattern is written without `!` (non-null) and without `as` (a cast): the types alone carry it.
  const code = readFileSync(join(REPO, SERVICE_PATTERN), "utf8").split("\n").filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line)).join("\n");
  assert.not.match(code, /[\w)\]]!(?!=)/, "a non-null assertion");
  assert.not.match(code, /\bas\s+(?!const\b)[A-Za-z{[(]/, "a cast");
});

test("every ts block of README.md type-checks as a project of its own against the installed package", () => {
  const blocks = typeScriptBlocks(readFileSync(join(REPO, "README.md"), "utf8"));
  assert.ok(blocks.length >= 3, `README's ts blocks: ${blocks.length}`);
  const failures: string[] = [];
  for (const [n, block] of blocks.entries()) {
    const dir = join(root, `readme-${n}`);
    project(dir);
    // Each block a module of its own (top-level await, names of its own).
    writeFileSync(join(dir, "block.ts"), `${block.code}\nexport {};\n`);
    const tsc = typeCheck(dir);
    if (tsc.errors.length > 0 || tsc.status !== 0) failures.push(`README.md:${block.line}: ${tsc.errors.join("; ") || tsc.stderr}`);
  }
  assert.equal(failures, [], "README blocks that do not compile");
});

test("no README block in another language uses the package (a js block would escape the type-check)", () => {
  const text = readFileSync(join(REPO, "README.md"), "utf8");
  const others = [...text.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].filter(([, lang, code]) => lang !== "ts" && /clankie-separate\/system-exec|spawnAgent\(|signalAgent\(/.test(code!));
  assert.equal(others.map(([, lang]) => lang), []);
});

test.run();
