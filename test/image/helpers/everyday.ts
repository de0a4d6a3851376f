/*
 * The verdict on the everyday battery (test/fixtures/image/everyday.mjs,
 * actions in everyday-actions.ts): an action that works as the agent's uid
 * alone must work in each confined mode (a plain job, a private job, a job
 * without network), unless that mode's list below names it as a denial the
 * boundary needs, with the rule that refuses it. What fails only confined
 * and is not listed is collateral: the image test allows at most two per
 * mode, each named in README's list of what changes for everyday agent work
 * with a workaround that the battery shows working (documentedCollateral).
 *
 * Listing an action here is a design decision, not a way to make the test
 * pass: each rule names what the boundary holds against other jobs. `ls /`,
 * globs and `find /` on the root, `strace` of the job's own children and
 * `mktemp -p /var/tmp` in a plain job are deliberately not listed: the
 * confinement must let them work (the Landlock domain's read-dir right on
 * `/`, ptrace within the job's own domain, /var/tmp writable as /tmp is).
 * Renaming itself through /proc/PID/comm is not listed either: no rule needs
 * it refused (it is collateral of "no write under /proc", documented).
 */
import { REPO_MOUNT } from "./engine.ts";

export const EVERYDAY = `${REPO_MOUNT}/test/fixtures/image/everyday.mjs`;

export const MODES = ["shim", "private", "no-network"] as const;
export type Mode = (typeof MODES)[number];

/** A rule behind listed denials: what it holds, and the error its refusal gives (a listed action that fails otherwise is collateral). */
export interface Rule {
  why: string;
  error: RegExp;
}

export const RULES = {
  pid: {
    why:
      "seccomp sees only a call's arguments: setpriority, ioprio_set, sched_setaffinity and prlimit64 naming a pid cannot tell the job's own " +
      "processes from another job's or from the stop route's stage (one job starving another, or its stop), so only who 0 (itself, its " +
      "process group) is let through; the command forms and -g 0 / -P 0 work",
    error: /Operation not permitted/,
  },
  sharedTrees: {
    why:
      "a private job neither reads nor writes /tmp, /var/tmp and /dev/shm, where every other job writes (a planted file, a socket or a " +
      "symbolic link there would reach it); its TMPDIR and HOME are its own",
    error: /Permission denied/,
  },
  semaphores: {
    why:
      "POSIX semaphores are files in /dev/shm (glibc sem_open), IPC objects every job of the uid shares: hidden from a private job as SysV IPC " +
      "and message queues are; multiprocessing.Process with a Pipe, and Manager(), work",
    error: /PermissionError/,
  },
  guard: {
    why:
      "a private job's guard ends everything the job started when its command exits (nothing of it outlives its lease); a helper that must " +
      "outlive one call runs as a job of its own (own-job-tcp, own-job-unix)",
    error: /ConnectionRefusedError/,
  },
  noInet: {
    why: "network none: socket(2) makes unix sockets only (AF_INET and AF_INET6 answer EAFNOSUPPORT), loopback included",
    error: /EAFNOSUPPORT|Address family not supported/,
  },
} as const satisfies Record<string, Rule>;

const PID_DENIALS = { "renice-self": RULES.pid, "renice-child": RULES.pid, "ionice-self": RULES.pid, "taskset-self": RULES.pid, "prlimit-pid": RULES.pid };

/** Per mode: the actions whose refusal the boundary needs, with the rule. */
export const NEEDED_DENIALS: Readonly<Record<Mode, Readonly<Record<string, Rule>>>> = {
  shim: PID_DENIALS,
  private: {
    ...PID_DENIALS,
    "tmp-file": RULES.sharedTrees,
    "mktemp-var-tmp": RULES.sharedTrees,
    "dev-shm": RULES.sharedTrees,
    "mp-pool": RULES.semaphores,
    "mp-lock": RULES.semaphores,
    "mp-queue": RULES.semaphores,
    "mp-executor": RULES.semaphores,
    "across-tcp": RULES.guard,
    "across-unix": RULES.guard,
  },
  "no-network": {
    ...PID_DENIALS,
    "node-http": RULES.noInet,
    "python-http": RULES.noInet,
    "python-udp": RULES.noInet,
    "across-tcp": RULES.noInet,
    "own-job-tcp": RULES.noInet,
  },
};

interface Run {
  exitCode: number | null;
  stderr: string;
}

export interface EverydayResult {
  id: string;
  what: string;
  control: Run;
  modes: Record<Mode, Run>;
}

export interface ModeVerdict {
  /** Judged actions (they work as the uid alone) that work in this mode. */
  works: string[];
  /** Judged actions that fail in this mode, are listed for it, and fail with the rule's error. */
  byDesign: string[];
  /** Judged actions that fail in this mode and are not listed, or fail with another error than the rule's: each id. */
  collateral: string[];
  /** The same, each with the error it gave. */
  collateralErrors: string[];
  /** Listed for this mode, work as the uid alone, and work in it too: the list is wrong. */
  stale: string[];
}

export interface EverydayVerdict {
  /** Actions that work as the agent's uid alone: the ones the battery can judge. */
  meaningful: number;
  modes: Record<Mode, ModeVerdict>;
  /** One line per action: as the uid alone, then each mode (works, by design, COLLATERAL, STALE, or not judged). */
  table: string[];
  /** One line per mode: its counts. */
  summary: string[];
}

const firstLines = (run: Run): string => run.stderr.split("\n").slice(0, 2).join(" | ") || `exit ${run.exitCode}`;

export function judgeEveryday(results: readonly EverydayResult[]): EverydayVerdict {
  const modes = Object.fromEntries(MODES.map((m) => [m, { works: [], byDesign: [], collateral: [], collateralErrors: [], stale: [] }])) as unknown as Record<Mode, ModeVerdict>;
  const table = [`${"action".padEnd(20)} ${"uid alone".padEnd(10)} ${MODES.map((m) => m.padEnd(11)).join(" ")}`];
  let meaningful = 0;
  for (const r of results) {
    const controlOk = r.control.exitCode === 0;
    if (controlOk) meaningful++;
    const cells = MODES.map((mode) => {
      const run = r.modes[mode];
      const ok = run.exitCode === 0;
      const rule = NEEDED_DENIALS[mode][r.id];
      const listed = rule !== undefined;
      const verdict = modes[mode];
      if (!controlOk) return ok ? "works*" : `fails (${run.exitCode})`;
      if (ok && listed) {
        verdict.stale.push(r.id);
        return "STALE";
      }
      if (ok) {
        verdict.works.push(r.id);
        return "works";
      }
      // By design only when it fails with the rule's error: failing for another reason is collateral.
      if (listed && rule.error.test(run.stderr)) {
        verdict.byDesign.push(r.id);
        return "by design";
      }
      verdict.collateral.push(r.id);
      verdict.collateralErrors.push(`${r.id} (${r.what}): ${firstLines(run)}`);
      return "COLLATERAL";
    });
    const control = controlOk ? "works" : `fails (${r.control.exitCode})`;
    table.push(`${r.id.padEnd(20)} ${control.padEnd(10)} ${cells.map((c) => c.padEnd(11)).join(" ")}`);
  }
  table.push("(not judged where the uid alone fails; works* = works only confined)");
  const summary = MODES.map((m) => `${m.padEnd(10)} ${modes[m].works.length} work, ${modes[m].byDesign.length} fail by design, ${modes[m].collateral.length} collateral${modes[m].collateral.length ? ` (${modes[m].collateral.join(", ")})` : ""}`);
  return { meaningful, modes, table, summary };
}

/** At most this much collateral per mode. */
export const MAX_COLLATERAL = 2;

/**
 * What the image test holds the verdict to, per mode: no stale listing, at
 * most MAX_COLLATERAL collateral, each documented in README (its marker)
 * with a workaround that works in that mode. One line per problem.
 */
export function collateralProblems(verdict: EverydayVerdict, documented: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  for (const mode of MODES) {
    const { collateral, collateralErrors, stale, works } = verdict.modes[mode];
    for (const id of stale) problems.push(`${mode}: ${id} is listed as a denial the boundary needs, yet it works`);
    if (collateral.length > MAX_COLLATERAL) problems.push(`${mode}: ${collateral.length} collateral, at most ${MAX_COLLATERAL}`);
    collateral.forEach((id, i) => {
      const workaround = documented.get(id);
      if (workaround === undefined) problems.push(`${mode}: collateral README's list does not document: ${collateralErrors[i]}`);
      else if (!works.includes(workaround)) problems.push(`${mode}: README's workaround for ${id}, ${workaround}, does not work in this mode`);
    });
  }
  return problems;
}

/**
 * README's markers for documented collateral, in its section "What changes
 * for everyday agent work": `<!-- everyday collateral: ID; workaround: ID -->`,
 * both ids actions of the battery. Returns each collateral id's workaround.
 */
export function documentedCollateral(readme: string): Map<string, string> {
  const start = readme.indexOf("### What changes for everyday agent work");
  if (start < 0) return new Map();
  const end = readme.indexOf("\n#", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return new Map([...section.matchAll(/<!-- everyday collateral: ([\w-]+); workaround: ([\w-]+) -->/g)].map((m) => [m[1]!, m[2]!] as const));
}
