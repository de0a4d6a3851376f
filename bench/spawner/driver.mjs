// One side of bench/spawner.mjs, run inside the launch sandbox by pair.pl:
//   driver.mjs spawner ROUNDS   the capless service: spawnAgent through the resident spawner
//   driver.mjs shim ROUNDS      a service holding SETUID+SETGID (ADR 0272 as at ca9f2fb): the
//                               per-spawn shim, started with execa as spawnAgent started it
// Prints one JSON line of milliseconds (medians) and the spawner's RSS.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { execa } from "execa";
import { signalAgent, spawnAgent } from "../../dist/lib/system-exec.js";

const [mode, roundsText] = process.argv.slice(2);
const rounds = Number(roundsText);
const SHIM = "/usr/local/sbin/clankie-agent-exec";
const MB = 1 << 20;
const NPROC = 8192;
const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One agent job to its end, the way this side starts it. */
function job(command, args, options = {}) {
  // RLIMIT_NPROC counts the agent uid's tasks host-wide: a larger limit than the default 512 (docs/benchmarks.md).
  if (mode === "spawner") return spawnAgent(command, args, { reject: false, nproc: NPROC, ...options });
  return execa(SHIM, ["--nproc", String(NPROC), "--", command, ...args], { reject: false, detached: true, ...options });
}
async function timed(fn) {
  const start = now();
  await fn();
  return now() - start;
}
async function series(fn) {
  const out = [];
  for (let i = 0; i < rounds; i++) out.push(await timed(fn));
  return median(out);
}
function spawnerRss() {
  for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      if (/clankie-agent-exec\0--spawner\0$/.test(readFileSync(`/proc/${name}/cmdline`, "latin1"))) return Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${name}/status`, "latin1"))[1]) / 1024;
    } catch {}
  }
  return null;
}

const out = { mode };
out.nodeE0 = await series(async () => spawnSync(process.execPath, ["-e", "0"]));
out.true = await series(() => job("/bin/true", []));
out.out1mb = await series(async () => {
  const r = await job("/usr/bin/head", ["-c", String(MB), "/dev/zero"], { encoding: "buffer" });
  if (r.stdout.length !== MB) throw new Error(`1 MB out: got ${r.stdout.length}`);
});
out.in1mb = await series(async () => {
  const r = await job("/usr/bin/wc", ["-c"], { input: Buffer.alloc(MB) });
  if (r.stdout.trim() !== String(MB)) throw new Error(`1 MB in: got ${r.stdout}`);
});
out.fifty = await series(async () => {
  const all = await Promise.all(Array.from({ length: 50 }, (_, i) => job("/bin/echo", [String(i)])));
  if (!all.every((r, i) => r.exitCode === 0 && r.stdout === String(i))) throw new Error("50 at once: a wrong result");
});
async function oneStop() {
  const child = job("/bin/sleep", ["30"]);
  for (let i = 0; i < 400 && child.pid === undefined; i++) await sleep(2);
  // Until the agent's command runs: a stop is timed against a running job.
  for (let i = 0; i < 400; i++) {
    try {
      if (/^Uid:\s+1001/m.test(readFileSync(`/proc/${child.pid}/status`, "latin1")) && readFileSync(`/proc/${child.pid}/comm`, "latin1") === "sleep\n") break;
    } catch {}
    await sleep(2);
  }
  const start = now();
  if (mode === "spawner") await signalAgent(child.pid, "SIGTERM");
  else await execa(SHIM, ["--signal", "SIGTERM", "--pgid", String(child.pid)]);
  const ms = now() - start;
  await child;
  return ms;
}
const stops = [];
for (let i = 0; i < rounds; i++) stops.push(await oneStop());
out.stop = median(stops);
if (mode === "spawner") {
  out.rssBefore = spawnerRss();
  for (let i = 0; i < 1000; i++) await job("/bin/true", []);
  out.rssAfter1000 = spawnerRss();
}
process.stdout.write(`${JSON.stringify(out)}\n`);
