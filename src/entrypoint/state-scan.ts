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
 * first byte kills that find (SIGKILL): a first start, where every entry is
 * listed, loses almost nothing to the scan. A second find still running
 * goes on to its end (at most one scan's time, and only on a start that
 * walks anyway).
 */
import { lstatSync, readdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import type { Identities } from "../accounts.ts";
import { STATE_DIR, TOOLS } from "../constants.ts";
import { type CaptureResult, startCapture } from "../exec/capture.ts";
import { kindOf } from "../os/file-kind.ts";
import { STATE_LAYOUT, stateRules, stateScanExpressions, topLevelZone } from "../layout/state.ts";
import { mountPointsBelow } from "./tree-walk.ts";

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
  return [...mountPointsBelow(root)].some((point) => point !== home && !point.startsWith(`${home}/`));
}

/** The starting points of each zone's find: `root/NAME\0` for every top-level name in that zone. */
function startingPoints(root: string): { private: Buffer[]; release: Buffer[] } {
  const points = { private: [] as Buffer[], release: [] as Buffer[] };
  const prefix = Buffer.from(`${root}/`);
  for (const name of readdirSync(root, { encoding: "buffer" })) {
    const zone = topLevelZone(name);
    if (zone !== "pruned") points[zone].push(Buffer.concat([prefix, name, Buffer.from([0])]));
  }
  return points;
}

/** One find: its arguments and the starting points it reads on stdin. */
export interface ScanJob {
  args: string[];
  input: Buffer;
}

/**
 * The finds that scan `root`: the release's, and the private zone's top-level
 * entries dealt round-robin to one find per CPU (two at most). find is one
 * thread, and a restart's scan is most of its time: two finds over halves of
 * a tree take about half the wall time on two idle CPUs. The tests run the
 * same jobs to completion (spawnSync) to see every entry listed; the start
 * stops at the first.
 */
export function scanJobs(ids: Identities, root: string, parallel: number = Math.min(2, availableParallelism())): ScanJob[] {
  const points = startingPoints(root);
  const expressions = stateScanExpressions(ids, root);
  const job = (expression: string[], input: Buffer[]): ScanJob => ({ args: ["-P", "-files0-from", "-", "-xdev", ...expression, "-print0"], input: Buffer.concat(input) });
  const privateShares = Array.from({ length: parallel }, (_, share) => points.private.filter((_, i) => i % parallel === share));
  return [
    ...privateShares.filter((share) => share.length > 0).map((share) => job(expressions.private, share)),
    ...(points.release.length > 0 ? [job(expressions.release, points.release)] : []),
  ];
}

/** What one find's end says: nothing (it fits), or why the walk must run. */
export function judgeCapture(result: CaptureResult): string | undefined {
  // maxBytes 0: the first byte on stdout or stderr kills find (SIGKILL) and sets ENOBUFS.
  if (result.error === "ENOBUFS") return "the scan listed an entry to change or reported a problem";
  if (result.error !== undefined) return `the scan failed: ${result.error}`;
  if (result.status !== 0) return `the scan ended with ${result.signal ?? `status ${result.status}`}`;
  if (result.stdout.length > 0 || result.stderr.length > 0) return "the scan listed an entry to change or reported a problem";
  return undefined;
}

/**
 * Runs the finds side by side (startCapture: the exec gate, an allowlisted
 * environment, / as the working directory) and waits for all; fits only if
 * every one ended with status 0 and printed nothing at all.
 */
async function runScanners(jobs: readonly ScanJob[]): Promise<ScanVerdict> {
  const results = await Promise.all(
    jobs.map((job) =>
      startCapture({
        command: TOOLS.find,
        args: job.args,
        // The C locale whatever the launch set: messages and name matching in bytes.
        env: { LC_ALL: "C" },
        input: job.input,
        maxBytes: 0,
        // No deadline of its own: a tree too big to scan in time is too big to walk in less.
        timeoutMs: 2 ** 31 - 1,
      }),
    ),
  );
  for (const result of results) {
    const reason = judgeCapture(result);
    if (reason !== undefined) return { fits: false, reason };
  }
  return { fits: true };
}

/**
 * Starts the scan of `root` (/state); the promise says whether every entry
 * already fits the layout. Read-only: nothing on disk changes until the
 * caller has the answer. TOOLS.find passes the exec gate (vetPrograms
 * checks it first, so a find that is not root's refuses the start).
 */
export function scanState(ids: Identities, root: string = STATE_DIR): Promise<ScanVerdict> {
  let jobs: ScanJob[];
  try {
    if (!topFits(ids, root)) return Promise.resolve({ fits: false, reason: `${root} itself does not fit` });
    if (mountInside(root)) return Promise.resolve({ fits: false, reason: "a filesystem is mounted inside" });
    jobs = scanJobs(ids, root);
  } catch {
    // Whatever the scan could not look at, the walk will, and it reports what it finds.
    return Promise.resolve({ fits: false, reason: "the scan could not look at the tree" });
  }
  return runScanners(jobs);
}
