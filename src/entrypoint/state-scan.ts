/*
 * The restart's fast path. On a /state that already fits its layout the
 * walk (tree-walk.ts) would change nothing, yet it costs one lstat(2) per
 * entry from Node, about twice what find(1) takes over the same tree
 * (docs/benchmarks.md). So the start first asks find, read-only, to list the
 * entries that break the rules (stateScanExpressions in src/layout/state.ts,
 * generated from the rules' own data), and walks only when it lists
 * anything or cannot answer.
 *
 * find runs as root over a tree an attacker may have written; what it is
 * asked to do, and why that is safe (docs/security.md, "The restart scan"):
 *   -P      never follow a symlink, starting points included (find(1));
 *   -xdev   never enter another filesystem; and the scan is not used at all
 *           when /proc/self/mountinfo shows a mount point inside /state other
 *           than the agent's home, so the walk warns about it as it always did;
 *   -files0-from -  starting points read from a pipe, NUL-separated: names
 *           are bytes, never an option or an expression, and no argv limit;
 *   -print0 the only action: no -exec, -delete or -fprint, nothing written.
 * Whatever is uncertain sends the start to the safe walk: any byte on
 * stdout (an entry listed) or on stderr (a warning, an entry that vanished,
 * a loop), an exit status other than 0, a signal, a failure to start. The
 * first byte ends the scan (SIGKILL to every find still running): a first
 * start, where every entry is listed, loses almost nothing to it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import type { Identities } from "../accounts.ts";
import { STATE_DIR } from "../constants.ts";
import { kindOf } from "../os/file-kind.ts";
import { parseMountinfo } from "../os/mountinfo.ts";
import { STATE_LAYOUT, stateRules, stateScanExpressions, topLevelZone } from "../layout/state.ts";

export type ScanVerdict = { fits: true } | { fits: false; reason: string };

/** Whether the rules would leave /state itself as it is (it is not a starting point of the scan). */
function topFits(ids: Identities, root: string): boolean {
  const st = lstatSync(root);
  if (!st.isDirectory()) return false;
  const decision = stateRules(ids)({ path: root, name: Buffer.from(root), kind: kindOf(st), st, depth: 0 }, "top");
  return decision.action === "fix" && st.uid === decision.uid && st.gid === decision.gid && (st.mode & 0o7777) === decision.mode?.(st.mode & 0o7777);
}

/** A mount point inside `root` that the walk would warn about (any but the agent's home and what lies below it). */
function mountInside(root: string): boolean {
  const home = `${root}/${STATE_LAYOUT.pruned}`;
  const points = parseMountinfo(readFileSync("/proc/self/mountinfo", "latin1")).map((m) => m.point);
  return points.some((point) => point.startsWith(`${root}/`) && point !== home && !point.startsWith(`${home}/`));
}

/** The starting points of each zone's find: `root/NAME\0` for every top-level name in that zone. */
function startingPoints(root: string): { private: Buffer[]; release: Buffer[] } {
  const points = { private: [] as Buffer[], release: [] as Buffer[] };
  const prefix = Buffer.from(`${root}/`);
  for (const name of readdirSync(root, { encoding: "buffer" })) {
    const zone = topLevelZone(name);
    if (zone !== "pruned") points[zone].push(prefix, name, Buffer.from([0]));
  }
  return points;
}

/** One find: its arguments and the starting points it reads on stdin. */
export interface ScanJob {
  args: string[];
  input: Buffer;
}

/**
 * The finds that scan `root`, one per zone with top-level entries in it. The
 * tests run the same jobs to completion (spawnSync) to see every entry
 * listed; the start stops at the first.
 */
export function scanJobs(ids: Identities, root: string): ScanJob[] {
  const points = startingPoints(root);
  const expressions = stateScanExpressions(ids, root);
  return (["private", "release"] as const)
    .filter((zone) => points[zone].length > 0)
    .map((zone) => ({ args: ["-P", "-files0-from", "-", "-xdev", ...expressions[zone], "-print0"], input: Buffer.concat(points[zone]) }));
}

/** Runs each find; resolves when all have ended: fits only if every one ended with status 0 and printed nothing at all. */
function runScanners(findPath: string, jobs: readonly ScanJob[]): Promise<ScanVerdict> {
  return new Promise((resolve) => {
    let verdict: ScanVerdict = { fits: true };
    let running = jobs.length;
    const children: ChildProcess[] = [];
    const fail = (reason: string): void => {
      if (verdict.fits) verdict = { fits: false, reason };
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    };
    const ended = (): void => {
      if (--running === 0) resolve(verdict);
    };
    if (running === 0) {
      resolve(verdict);
      return;
    }
    for (const job of jobs) {
      // An empty environment (the C locale, no POSIXLY_CORRECT) and / as the working directory.
      const child = spawn(findPath, job.args, { argv0: "find", cwd: "/", env: {}, stdio: ["pipe", "pipe", "pipe"] });
      children.push(child);
      child.stdout!.once("data", () => fail("the scan listed an entry to change"));
      child.stderr!.once("data", () => fail("the scan reported a problem"));
      child.stdin!.on("error", () => fail("the scan stopped reading its starting points"));
      child.once("error", () => fail("the scan could not start"));
      child.once("close", (code, signal) => {
        if (code !== 0) fail(`the scan ended with ${signal ?? `status ${code}`}`);
        ended();
      });
      child.stdin!.end(job.input);
    }
  });
}

/**
 * Starts the scan of `root` (/state) with find at `findPath` (TOOLS.find,
 * vetted by the caller); the promise says whether every entry already fits
 * the layout. Read-only: nothing on disk changes until the caller has the
 * answer.
 */
export function scanState(ids: Identities, findPath: string, root: string = STATE_DIR): Promise<ScanVerdict> {
  let jobs: ScanJob[];
  try {
    if (!topFits(ids, root)) return Promise.resolve({ fits: false, reason: `${root} itself does not fit` });
    if (mountInside(root)) return Promise.resolve({ fits: false, reason: "a filesystem is mounted inside" });
    jobs = scanJobs(ids, root);
  } catch {
    // Whatever the scan could not look at, the walk will, and it reports what it finds.
    return Promise.resolve({ fits: false, reason: "the scan could not look at the tree" });
  }
  return runScanners(findPath, jobs);
}
