// One side of bench/spawner.mjs, run inside the launch sandbox by pair.pl:
//   driver.mjs spawner ROUNDS   the capless service: spawnAgent through the resident spawner
//   driver.mjs shim ROUNDS      a service holding SETUID+SETGID (ADR 0272 as at ca9f2fb): the
//                               per-spawn shim, started with execa as spawnAgent started it
// Prints one JSON line: for each measure the median in ms and the median of a `node -e 0` run
// just before each round (paired, so that a change of load between measures moves both); the
// CPU time a spawn of /bin/true costs every process it runs in, beside a `node -e 0`'s; and
// the spawner's VmRSS and RssAnon (MB) every 250 spawns over 1,000 more.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { execa } from "execa";
import { signalAgent, spawnAgent } from "../../dist/lib/system-exec.js";

const [mode, roundsText, rssText] = process.argv.slice(2);
const rounds = Number(roundsText);
const SHIM = "/usr/local/sbin/clankie-agent-exec";
const MB = 1 << 20;
const NPROC = 8192;
const CPU_SPAWNS = 100;
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
const nodeE0 = () => timed(async () => spawnSync(process.execPath, ["-e", "0"]));
async function series(fn) {
  const out = [];
  const e0 = [];
  for (let i = 0; i < rounds; i++) {
    e0.push(await nodeE0());
    out.push(await timed(fn));
  }
  return { ms: median(out), e0: median(e0) };
}
const TICK_MS = 1000 / Number(spawnSync("/usr/bin/getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout);
/** Every process's parent, its own CPU time, and the CPU time of the children it has reaped, in ms (proc(5), /proc/PID/stat: ppid; utime + stime; cutime + cstime). */
function processTable() {
  const table = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "latin1");
    } catch {
      continue; // gone since the readdir
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
    table.set(Number(name), { ppid: fields[1], self: (fields[11] + fields[12]) * TICK_MS, reaped: (fields[13] + fields[14]) * TICK_MS });
  }
  return table;
}
/** The CPU time of `pid` itself, and of everything below it: the children it has reaped (with theirs), and every descendant still running (a resident grab, an idle one) with what each has reaped. */
function treeCpu(table, pid) {
  const root = table.get(pid);
  const tree = new Set([pid]);
  let below = root.reaped;
  for (let grew = true; grew; ) {
    grew = false;
    for (const [child, entry] of table) {
      if (tree.has(child) || !tree.has(entry.ppid)) continue;
      tree.add(child);
      below += entry.self + entry.reaped;
      grew = true;
    }
  }
  return { self: root.self, below };
}
let spawnerPid;
/**
 * The spawner: pair.pl's other child, beside this driver (its forked
 * children bear its command line until they exec, and pids wrap: the
 * parent tells it apart).
 */
function spawner() {
  const cmdline = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "latin1");
    } catch {
      return ""; // gone since the table was read
    }
  };
  spawnerPid ??= [...processTable()].find(([pid, entry]) => entry.ppid === process.ppid && /clankie-agent-exec\0--spawner\0$/.test(cmdline(pid)))?.[0];
  if (spawnerPid === undefined) throw new Error(`no spawner runs beside this driver (a child of process ${process.ppid} running clankie-agent-exec --spawner)`);
  return spawnerPid;
}
/** The spawner's VmRSS and RssAnon. */
function spawnerRss() {
  const status = readFileSync(`/proc/${spawner()}/status`, "latin1");
  const mb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(status)[1]) / 1024;
  return { rss: mb("VmRSS"), anon: mb("RssAnon") };
}

/**
 * The CPU time of a spawn of /bin/true in every process it runs in, over
 * `n` spawns one after another: the service and what runs below it (the
 * acceptor and any holders; the shims and their chains), and the spawner and what runs below
 * it (the grabs and the chains they start); beside the CPU time of `n` node
 * -e 0.
 */
async function cpuPerSpawn(n) {
  const pids = mode === "spawner" ? [process.pid, spawner()] : [process.pid];
  const sample = () => {
    const table = processTable();
    return pids.map((pid) => treeCpu(table, pid));
  };
  await job("/bin/true", []); // the spawner's next grab started, as before every later spawn
  const before = sample();
  for (let i = 0; i < n; i++) await job("/bin/true", []);
  const [service, spawnerSide] = sample().map((after, i) => ({ self: (after.self - before[i].self) / n, below: (after.below - before[i].below) / n }));
  const e0Before = sample()[0].below;
  for (let i = 0; i < n; i++) spawnSync(process.execPath, ["-e", "0"]);
  const ms = service.self + service.below + (spawnerSide ? spawnerSide.self + spawnerSide.below : 0);
  return { ms, e0: (sample()[0].below - e0Before) / n, service, spawner: spawnerSide };
}

const out = { mode };
out.true = await series(() => job("/bin/true", []));
out.cpu = await cpuPerSpawn(CPU_SPAWNS);
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
const stopE0 = [];
for (let i = 0; i < rounds; i++) {
  stopE0.push(await nodeE0());
  stops.push(await oneStop());
}
out.stop = { ms: median(stops), e0: median(stopE0) };
if (mode === "spawner") {
  out.rss = [spawnerRss()];
  for (let i = 1; i <= Number(rssText ?? 1000); i++) {
    await job("/bin/true", []);
    if (i % 250 === 0) out.rss.push(spawnerRss());
  }
}
process.stdout.write(`${JSON.stringify(out)}\n`);
