#!/usr/bin/env node
/*
 * The resident spawner against the per-spawn shim, paired in one run (root,
 * the launch sandbox): bench/spawner/pair.pl alternates a capless service
 * asking the spawner (spawnAgent) with a service holding SETUID+SETGID that
 * starts the per-spawn shim as spawnAgent did at ca9f2fb (the same
 * executable's shim role, which the spawner still starts for a private
 * job). Each side reports medians (bench/spawner/driver.mjs), each measure
 * beside a `node -e 0` run before each of its rounds; this prints one
 * markdown table (each side's ratio to its paired node -e 0; medians over
 * the pairs), with the CPU time a spawn costs all its processes (the
 * burst's floor on a machine of few cores), and the spawner's RSS every 250
 * spawns over 1,000 (or RSS_SPAWNS, after the rounds). A benchmark, not a
 * test.
 *
 *   node --import ./scripts/text-modules.mjs bench/spawner.mjs [ROUNDS] [PAIRS] [RSS_SPAWNS]
 *                                                default 7 rounds, 2 pairs, 1,000 spawns
 */
import { chownSync } from "node:fs";
import { loadAverage } from "./lib/machine.mjs";
import { evictFromPageCache, evictionNote } from "./lib/page-cache.mjs";
import { Body, IDS, SANDBOX_NODE, SANDBOX_REPO } from "../test/helpers/sandbox.ts";


const rounds = Number(process.argv[2] ?? 7);
const pairs = Number(process.argv[3] ?? 2);
const rssSpawns = Number(process.argv[4] ?? 1000);
const body = new Body();
try {
  chownSync(body.state, IDS.service, IDS.service);
  chownSync(body.workspace, IDS.service, IDS.service);
  // The executable's pages as a body finds them (bench/lib/page-cache.mjs): cached as build.mjs wrote it, a
  // process that maps it gets more of it resident (a one-line Node 24 single executable: VmRSS 56.4 MB, against
  // 39.7 MB once evicted), which the spawner's RSS below would count.
  const evicted = evictFromPageCache([new URL("../dist/clankie-agent-exec", import.meta.url).pathname]);
  const loadBefore = loadAverage();
  const run = body.run({ as: "root", direct: true, command: ["/usr/bin/perl", `${SANDBOX_REPO}/bench/spawner/pair.pl`, SANDBOX_NODE, `${SANDBOX_REPO}/bench/spawner/driver.mjs`, String(rounds), String(pairs), String(rssSpawns)], timeoutMs: 1_800_000 });
  if (run.status !== 0) throw new Error(`the sandbox exited ${run.status}: ${run.stderr}`);
  const sides = run.stdout.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line));
  // pair.pl does not judge its sides' exits: a side that failed printed no result.
  for (const mode of ["spawner", "shim"]) {
    const got = sides.filter((side) => side.mode === mode).length;
    if (got !== pairs) throw new Error(`the ${mode} side gave ${got} results of ${pairs}: ${run.stderr.trim() || "(no stderr)"}`);
  }
  const med = (mode, key, field) => {
    const xs = sides.filter((s) => s.mode === mode).map((s) => s[key][field]).sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)];
  };
  const ratio = (mode, key) => med(mode, key, "ms") / med(mode, key, "e0");
  const f = (x) => (typeof x === "number" ? x.toFixed(1) : String(x));
  const rows = [
    ["spawn of /bin/true", "true"],
    ["CPU time of a spawn of /bin/true, all its processes (mean of 100; beside node -e 0's)", "cpu"],
    ["1 MB out (head -c)", "out1mb"],
    ["1 MB in (wc -c)", "in1mb"],
    ["50 spawns of echo at once, all settled", "fifty"],
    ["a stop of a running sleep (SIGTERM delivered)", "stop"],
  ];
  const lines = [
    `load average ${loadBefore} at the start, ${loadAverage()} at the end; ${rounds} rounds per side, ${pairs} pairs (sides alternate); medians in ms, each beside the median of a node -e 0 run before each round`,
    "",
    "| measure | spawner (node -e 0) | per-spawn shim (node -e 0) | spawner ÷ node -e 0 | shim ÷ node -e 0 | spawner ÷ shim |",
    "|---|---|---|---|---|---|",
    ...rows.map(([what, key]) => {
      const a = med("spawner", key, "ms");
      const b = med("shim", key, "ms");
      return `| ${what} | ${f(a)} (${f(med("spawner", key, "e0"))}) | ${f(b)} (${f(med("shim", key, "e0"))}) | ${ratio("spawner", key).toFixed(2)}x | ${ratio("shim", key).toFixed(2)}x | ${(a / b).toFixed(2)}x |`;
    }),
    "",
    `CPU time of a spawn of /bin/true through the spawner, by process (ms): ${sides.filter((s) => s.mode === "spawner").map((s) => `the service ${f(s.cpu.service.self)} and its acceptor and holders ${f(s.cpu.service.below)}, the spawner ${f(s.cpu.spawner.self)} and its grabs with their chains ${f(s.cpu.spawner.below)}`).join("; ")}; through the shim: ${sides.filter((s) => s.mode === "shim").map((s) => `the service ${f(s.cpu.service.self)} and the shim with its chain ${f(s.cpu.service.below)}`).join("; ")}`,
    "",
    `spawner VmRSS (RssAnon) in MB every 250 spawns of /bin/true from 0 to ${rssSpawns}: ${sides.filter((s) => s.mode === "spawner").map((s) => s.rss.map((r) => `${f(r.rss)} (${f(r.anon)})`).join(", ")).join("; ")}`,
    "",
    evictionNote(evicted),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  body.cleanup();
}
