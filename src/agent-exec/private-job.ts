/*
 * A private job's lease (clankie-agent-exec --private-job, spawnAgent's
 * privateJob): one group of the pool (clankie-private-N, no members) and
 * its directory PRIVATE_DIR/N, node:clankie-private-N 02070.
 *
 * Every agent job runs as the one agent uid, and Landlock (ABI 7) does not
 * mediate connect(2) to a pathname unix socket, chmod(2) or path traversal:
 * a socket only hidden by another job's domain is still reachable. DAC
 * closes it: the agent uid without group N cannot even search the lease
 * directory (others 0), and the owner, the service, gets nothing by its
 * owner bits either (the owner class is checked alone, acl(5)'s order). Only
 * processes descended from the lease hold group N: setgroups(2) needs
 * CAP_SETGID, which no agent process has.
 *
 * The shim (the service uid, CAP_SETGID effective) takes a group by
 * mkdir(2) of its directory: EEXIST is a group taken, so two shims never
 * hold the same one. It records which job holds it as a symbolic link
 * PRIVATE_DIR/pid-PID -> N (the shim's pid is the job's: it execs into it),
 * so that spawnAgent can release it by the job's pid.
 *
 * Also a private job's alone, so here and not on the ordinary spawn's path:
 * the image the job may read (privateImageTree, which the lease carries to
 * its confinement) and the cleanup chain that ends a lease (cleanupArgv).
 */
import { existsSync, lstatSync, mkdirSync, chmodSync, readdirSync, readlinkSync, rmdirSync, symlinkSync, unlinkSync } from "node:fs";
import { agentIds, type Identities } from "../accounts.ts";
import { type PrivateGroup, privateGroupsOf } from "../private-groups.ts";
import { EXIT, PRIVATE_DIR, PRIVATE_GROUP_PREFIX, TOOLS } from "../constants.ts";
import { readStatus } from "../os/proc-status.ts";
import { formatRefusal, osCall, osFailure, Refusal, writeLine } from "../report.ts";
import { prepareExec } from "../exec/replace.ts";
import { runCapture } from "../exec/capture.ts";
import { imageTopLevel } from "../confinement.ts";
import { stageArgv } from "../stage/stage-argv.ts";
import { agentIdentity, type PrivateJobLease, type PrivateLease } from "./plan.ts";
import { agentDropArgv } from "./setpriv-chain.ts";

/** The lease directory's mode: setgid (what is made in it gets group N), group rwx, owner and others nothing. */
export const LEASE_MODE = 0o2070;
/** PRIVATE_DIR's own mode: the agent may search it (to reach its lease) but not list or write it. */
export const PRIVATE_DIR_MODE = 0o711;

const errnoCode = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;
const pidLink = (pid: number): string => `${PRIVATE_DIR}/pid-${pid}`;
const leaseOf = (group: PrivateGroup): PrivateLease => ({ group: group.gid, dir: `${PRIVATE_DIR}/${group.index}` });

/**
 * What a private job may not read or execute either: where every other job
 * writes. Landlock only adds access, so the parents of the nested ones are
 * granted child by child (privateImageTree).
 */
export const PRIVATE_HIDDEN: readonly string[] = ["/tmp", "/var/tmp", "/dev/shm"];

/**
 * The image as a private job may read it: the top-level directories but
 * /state and /tmp, and /var and /dev child by child without /var/tmp and
 * /dev/shm (symbolic links among them are left out by the stage, which
 * takes a rule only on a path that names itself).
 */
export function privateImageTree(root = "/"): string[] {
  const paths: string[] = [];
  for (const top of imageTopLevel(root)) {
    if (PRIVATE_HIDDEN.includes(top)) continue;
    if (!PRIVATE_HIDDEN.some((hidden) => hidden.startsWith(`${top}/`))) {
      paths.push(top);
      continue;
    }
    let names: string[] = [];
    try {
      names = readdirSync(`${root}${top.slice(1)}`);
    } catch {
      continue;
    }
    for (const name of names.sort()) if (!PRIVATE_HIDDEN.includes(`${top}/${name}`)) paths.push(`${top}/${name}`);
  }
  return paths;
}

/** PRIVATE_DIR must be the one the root entrypoint made at this start: node's, 0711, a real directory. */
function checkPrivateDir(ids: Identities): void {
  const fix = "start the container through the root entrypoint (docker run --user 0:0 ..., docs/launch.md), which makes it";
  let st;
  try {
    st = lstatSync(PRIVATE_DIR);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") throw new Refusal(EXIT.launchRefused, `${PRIVATE_DIR} is missing: private jobs need the separated launch`, fix);
    throw osFailure("lstat", PRIVATE_DIR, error);
  }
  if (!st.isDirectory() || st.uid !== ids.service.uid || (st.mode & 0o7777) !== PRIVATE_DIR_MODE) {
    throw new Refusal(EXIT.launchRefused, `${PRIVATE_DIR} is not a directory of ${ids.service.name} with mode 0711`, fix);
  }
}

/**
 * mkdir(2) as egid N, so that the directory is born with group N; false when
 * another job holds it (EEXIST). The shim holds N among its supplementary
 * groups from before the mkdir until setpriv hands it to the job, so that a
 * lease is never held by no process while its job starts: another shim that
 * finds the pool exhausted takes back a lease whose group no process holds
 * (leasePrivateGroup), and killed a job that had just taken one when the shim
 * took the group only at setpriv (11 of 20 rounds of two spawns, test/sandbox/private-jobs.test.ts).
 */
function tryLease(group: PrivateGroup, serviceGid: number, serviceGroups: readonly number[]): boolean {
  const { dir } = leaseOf(group);
  osCall("setgroups", `gid ${group.gid}`, () => process.setgroups!([...serviceGroups, group.gid]));
  let taken = false;
  process.setegid!(group.gid);
  try {
    try {
      mkdirSync(dir, 0o070);
    } catch (error) {
      if (errnoCode(error) === "EEXIST") return false;
      throw osFailure("mkdir", dir, error);
    }
    // chmod(2) keeps S_ISGID only for a caller in the file's group: egid N, here.
    osCall("chmod", dir, () => chmodSync(dir, LEASE_MODE));
    taken = true;
    return true;
  } finally {
    process.setegid!(serviceGid);
    if (!taken) osCall("setgroups", "the service's groups", () => process.setgroups!([...serviceGroups]));
  }
}

/** Records which job holds the lease: PRIVATE_DIR/pid-PID -> N (a stale link of a reused pid is replaced). */
function recordHolder(group: PrivateGroup, pid: number): void {
  try {
    unlinkSync(pidLink(pid));
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw osFailure("unlink", pidLink(pid), error);
  }
  osCall("symlink", pidLink(pid), () => symlinkSync(String(group.index), pidLink(pid)));
}

/** The gids some live process holds as a supplementary group (/proc/PID/status Groups). */
export function heldGroups(): Set<number> {
  const held = new Set<number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    for (const gid of groupsOfProcess(Number(name)) ?? []) held.add(gid);
  }
  return held;
}

/**
 * Whether no process holds `gid`, asked until none does for up to 2 s: the
 * job's processes the guard killed are zombies until init reaps them.
 */
function groupFreed(gid: number): boolean {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; waited < 2_000; waited += 10) {
    if (!heldGroups().has(gid)) return true;
    Atomics.wait(pause, 0, 0, 10);
  }
  return false;
}

/** The supplementary groups of process `pid`, or undefined when it does not run (any more). */
function groupsOfProcess(pid: number): number[] | undefined {
  try {
    return readStatus(pid).groups;
  } catch {
    return undefined;
  }
}

/**
 * Takes a free group of the pool for the job this shim becomes: one whose
 * directory does not exist and that no process holds. When every one is
 * taken, a lease whose group no live process holds (its job and all it
 * started have ended, and the service did not release it: it died, or the
 * shim was run by hand) is released and taken.
 */
export function leasePrivateGroup(ids: Identities, startedFd?: number): PrivateJobLease {
  const pool = privateGroupsOf(ids);
  if (pool.length === 0) {
    throw new Refusal(EXIT.noUser, `no ${PRIVATE_GROUP_PREFIX}N group is defined in /etc/group`, "rebuild the image from this project's Dockerfile, which creates the pool");
  }
  checkPrivateDir(ids);
  const serviceGid = process.getegid!();
  const serviceGroups = readStatus().groups;
  const take = (group: PrivateGroup): PrivateJobLease | undefined => {
    if (!tryLease(group, serviceGid, serviceGroups)) return undefined;
    recordHolder(group, process.pid);
    return { ...leaseOf(group), tree: privateImageTree() };
  };
  // A group that some process still holds is never handed out, whatever its
  // directory says: that process would reach the next job's files. Its
  // job's guard ended everything the job started, and the release checked
  // it (releaseLease); this is asked again here, once per private spawn.
  const held = heldGroups();
  for (const group of pool) {
    if (held.has(group.gid)) continue;
    const lease = take(group);
    if (lease) return lease;
  }
  for (const group of pool) {
    if (held.has(group.gid)) continue;
    const unlock = lockRelease(group);
    if (!unlock) continue; // another shim, or the service, is releasing it
    let released: boolean;
    try {
      // Asked again under the lock: a release that ended since the scan may have let a new job take it.
      released = !existsSync(leaseOf(group).dir) || (!heldGroups().has(group.gid) && releaseLease(ids, leaseOf(group), startedFd) === 0);
    } finally {
      unlock();
    }
    const lease = released ? take(group) : undefined;
    if (lease) return lease;
  }
  throw new Refusal(EXIT.busy, `all ${pool.length} private-job groups are leased to running jobs`, "wait for a private job to end, then try again");
}

/**
 * One release of a lease at a time: mkdir(2) of PRIVATE_DIR/release-N, EEXIST
 * being a release under way; returns the unlock, or undefined. The cleanup
 * stage kills every process that holds group N: one that ran after another
 * release had ended and a new job had taken N killed that job, and two at
 * once killed each other (a pool of one under three loops of private jobs
 * for 8 s: 5 of 145 jobs killed, 7 spawns failing 71, test/sandbox/
 * private-jobs.test.ts; none with the lock). A release killed midway leaves its lock,
 * and group N out of the pool until the next start clears PRIVATE_DIR.
 */
function lockRelease(group: PrivateGroup): (() => void) | undefined {
  const lock = `${PRIVATE_DIR}/release-${group.index}`;
  try {
    mkdirSync(lock, 0o700);
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return undefined;
    throw osFailure("mkdir", lock, error);
  }
  return () => osCall("rmdir", lock, () => rmdirSync(lock));
}

/** Waits for the release lock of `group` (a reclaiming shim's release takes up to the cleanup's 60 s). */
function waitForRelease(group: PrivateGroup): () => void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; waited < 65_000; waited += 20) {
    const unlock = lockRelease(group);
    if (unlock) return unlock;
    Atomics.wait(pause, 0, 0, 20);
  }
  throw new Refusal(EXIT.busy, `the lease of group ${group.gid} has been being released for over a minute`, `try again; if it stays so, restart the container (the start clears ${PRIVATE_DIR})`);
}

/** find(1) -delete removes depth first and never follows a symbolic link (-P, the default); -xdev stays on the lease's filesystem. */
export function leaseRemovalArgv(dir: string): string[] {
  return [TOOLS.find, dir, "-xdev", "-mindepth", "1", "-delete"];
}

/**
 * The cleanup chain: setpriv to the agent with the lease's group, then the
 * stage's cleanup role, which runs no agent code: it kills what holds the
 * group, then removes the lease's contents. `startedFd`: the started marker
 * of the shim that takes back a lease for its own job, which the stage
 * closes at its exec (Node cannot keep it from the child).
 */
export function cleanupArgv(ids: Identities, lease: PrivateLease, startedFd?: number): string[] {
  const identity = agentIdentity(agentIds(ids), [], lease);
  return agentDropArgv(identity, stageArgv({ ...identity, role: "cleanup", lease: lease.dir, group: lease.group, startedFd, action: { path: TOOLS.find, argv: leaseRemovalArgv(lease.dir) } }));
}

/**
 * Ends a lease (under its release lock): the cleanup stage, as the agent with group N, kills every
 * process that still holds N and removes the directory's contents (find
 * -delete, never following a link); then the service, its owner, removes
 * the directory and every pid link that names it. Returns the exit status.
 */
export function releaseLease(ids: Identities, lease: PrivateLease, startedFd?: number): number {
  for (const tool of [TOOLS.perl, TOOLS.find]) prepareExec({ command: tool, args: [], env: {}, trustedUids: [0] });
  // A run's started marker (CLANKIE_STARTED_FD) is inherited by this child, as Node cannot mark it close-on-exec: the stage is told, keeps it through its checks and closes it at its exec.
  const argv = cleanupArgv(ids, lease, startedFd);
  // Nothing of the shim's environment reaches setpriv, which holds SETUID and SETGID (src/stage/stage.ts).
  const run = runCapture({ command: argv[0]!, args: argv.slice(1), from: {}, env: {}, timeoutMs: 60_000 });
  if (run.stderr.length > 0) process.stderr.write(run.stderr);
  if (run.error !== undefined) throw new Refusal(EXIT.osError, `the cleanup of ${lease.dir} failed: ${run.error}`, "report this with the command line used");
  if (run.signal !== null) throw new Refusal(EXIT.osError, `the cleanup stage of ${lease.dir} was killed by ${run.signal}`, "report this with the command line used");
  if (run.status !== 0) return run.status ?? EXIT.osError;
  // A release never reports success while a process holds the group: the lease then stays, and
  // is taken back once none does (leasePrivateGroup).
  if (!groupFreed(lease.group)) {
    writeLine(2, formatRefusal(`a process still holds group ${lease.group} after the cleanup of ${lease.dir}`, "the lease stays until none does, then the next private job takes it back; if it stays so, restart the container"));
    return EXIT.busy;
  }
  osCall("rmdir", lease.dir, () => rmdirSync(lease.dir));
  const index = lease.dir.slice(PRIVATE_DIR.length + 1);
  for (const name of readdirSync(PRIVATE_DIR)) {
    if (!name.startsWith("pid-")) continue;
    try {
      if (readlinkSync(`${PRIVATE_DIR}/${name}`) === index) unlinkSync(`${PRIVATE_DIR}/${name}`);
    } catch {
      // Gone meanwhile, or not a link: nothing of this lease.
    }
  }
  return 0;
}

/** The lease index PRIVATE_DIR/pid-PID names, or undefined when there is no such link. */
function recordedLease(pid: number): string | undefined {
  try {
    return readlinkSync(pidLink(pid));
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return undefined;
    throw osFailure("readlink", pidLink(pid), error);
  }
}

/** clankie-agent-exec --private-cleanup PID: releases the lease job PID held. */
export function releaseJobLease(ids: Identities, pid: number): number {
  const pool = privateGroupsOf(ids);
  checkPrivateDir(ids);
  const index = recordedLease(pid);
  if (index === undefined) throw new Refusal(EXIT.dataRefused, `no private lease is recorded for job ${pid}`, "pass the pid of a job started with --private-job (spawnAgent's child.pid)");
  const group = pool.find((g) => String(g.index) === index);
  if (!group) throw new Refusal(EXIT.dataRefused, `${pidLink(pid)} names ${JSON.stringify(index)}, no group of the pool`, `remove it; the next start clears ${PRIVATE_DIR}`);
  const unlock = waitForRelease(group);
  try {
    // A shim that found the pool exhausted may have released it meanwhile (removing this link), and a new job taken it.
    if (recordedLease(pid) !== index) return 0;
    // Asked for a job that has not ended, or whose pid is now a new private job's: releasing would kill that job.
    // (The new job's shim replaced the pid link with its own lease, recordHolder, and holds its group
    // from before it took the lease, tryLease, until the job ends.)
    if (groupsOfProcess(pid)?.includes(group.gid)) {
      throw new Refusal(
        EXIT.busy,
        `process ${pid} runs and holds the lease's group ${group.gid}: job ${pid} has not ended, or its pid now belongs to a new private job`,
        "release a lease once its job has exited (spawnAgent does); a lease whose pid link was replaced is taken back when the pool runs out",
      );
    }
    return releaseLease(ids, leaseOf(group));
  } finally {
    unlock();
  }
}
