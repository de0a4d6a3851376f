/*
 * The snapshot: every fact the audit judges, read once, each a value or the
 * reason it could not be read (with the fix for that). The readers are here
 * and in the few modules they name (state.ts for /state,
 * image-scan.ts for the image walk, probe.ts for the probe); the judges of
 * checks.ts only ever see these values. Nothing here writes: the audit reads
 * /proc, /etc/passwd and /etc/group, /state, the top of /workspace and the
 * image, and starts perl (and, with --probe, the shim) through capture.ts.
 *
 * What another process's /proc/<pid>/environ and /proc/<pid>/exe show needs
 * ptrace read access (proc(5), ptrace(2) "Ptrace access mode checking"): the
 * same uid AND effective capabilities covering the target's permitted set, or
 * CAP_SYS_PTRACE. Root in the launch of ADR 0272 (no SYS_PTRACE) and
 * `docker exec --user node` cannot read the service's; its own children can.
 * Those reads are values that carry their error, judged as such.
 */
import { lstatSync, readdirSync, readFileSync, readlinkSync, statSync, type Stats } from "node:fs";
import { parsePasswd } from "../accounts.ts";
import { builtInBundleSha256 } from "../build-info.ts";
import { AGENT_EXEC_NAME, AGENT_HOME, ENTRYPOINT_NAME, GROUP_FILE, INSTALL_DIR, PASSWD_FILE, PRIVATE_DIR, SERVICE_USER, STATE_DIR, TOOLS, WORKSPACE_DIR } from "../constants.ts";
import { embeddedHashes } from "../embedded-bundle.ts";
import { type CaptureResult, runCapture } from "../exec/capture.ts";
import { checkTrustedExecutable } from "../exec/rules.ts";
import { readMarkerText } from "../layout/marker.ts";
import { type AclWalk, parseAclWalk, startStateAclWalk } from "../layout/state-acl.ts";
import { parseMountinfo } from "../os/mountinfo.ts";
import { codeOf, Refusal } from "../report.ts";
import { howItEnded, octal, reasonOf, saying } from "./check.ts";
import { type ConfinementFacts, LANDLOCK_ABI_SCRIPT, type LandlockFact, parseLandlockAnswer, SECCOMP_ACTIONS_FILE } from "./confinement.ts";
import { excludedDirectories, IMAGE_WALK_SKIP, type ImageScan, parseImageScan, startImageScan } from "./image-scan.ts";
import { isSpawnerCommand, spawnedTree, usableCapabilities } from "./processes.ts";
import { chooseJudged, handedDownByService, parseEnviron, relationTo } from "./judged.ts";
import { KERNEL_SETTINGS } from "./kernel.ts";
import { boundaryOf, classifyMode } from "./mode.ts";
import { runProbe } from "./probe.ts";
import { parseProcessStatus, parseSeccompStatus, type ProcessEntry, readProcessTable } from "./process-table.ts";
import { parseStateWalk, READ_ONLY_WALK, releasePresent, type StateAudit, startStateAudit } from "./state.ts";
import { resolveAccounts } from "./accounts.ts";
import type { BuiltInHash, Lstat, PrivateRoot, Program, Readable } from "./fact-types.ts";

/** A fact: its value, or why it could not be read and what to do about it. */
export type Fact<T> = { ok: true; value: T } | { ok: false; error: string; fix: string };
export type { BuiltInHash, Lstat, Program, Readable };

export function known<T>(value: T): { ok: true; value: T } {
  return { ok: true, value };
}

/** Runs a reader; what it throws becomes the fact's error (a Refusal brings its own fix). */
export function attempt<T>(fix: string, reader: () => T): Fact<T> {
  try {
    return { ok: true, value: reader() };
  } catch (error) {
    return { ok: false, error: reasonOf(error), fix: error instanceof Refusal ? error.fix : fix };
  }
}

/** Runs a reader; what it throws is worded by `describe`: "read PATH: EACCES" (failedCall), or as the error gives it (reasonOf: message and code). */
export function readable<T>(reader: () => T, describe: (error: unknown) => string = reasonOf): Readable<T> {
  try {
    return { ok: true, value: reader() };
  } catch (error) {
    return { ok: false, error: describe(error), code: (error as NodeJS.ErrnoException).code };
  }
}
export const failedCall = (syscall: string, path: string) => (error: unknown): string => `${syscall} ${path}: ${codeOf(error)}`;

/** An lstat(2) whose failure a judge words itself. */
const lstatOf = (path: string): Lstat => readable(() => lstatSync(path));

/** PRIVATE_DIR's lstat and the lease directories in it (its owner, the service, or root may list it). */
function readPrivateRoot(): PrivateRoot {
  return readable(() => {
    const stats = lstatSync(PRIVATE_DIR);
    return { stats, leases: stats.isDirectory() ? readdirSync(PRIVATE_DIR).filter((name) => /^\d{1,2}$/.test(name)).sort((a, b) => Number(a) - Number(b)) : [] };
  });
}

/** One program file under the exec rules (checkTrustedExecutable), and its own lstat. */

function readProgram(path: string): Program {
  const st = lstatOf(path);
  const file = st.ok ? { path, uid: st.value.uid, gid: st.value.gid, mode: octal(st.value.mode), dev: st.value.dev, ino: st.value.ino } : { path, error: st.error };
  const problems: string[] = [];
  try {
    checkTrustedExecutable(path, [0]);
    const target = statSync(path);
    if (!target.isFile()) problems.push(`${path} is not a regular file`);
    if (target.mode & 0o6000) problems.push(`${path} has mode ${octal(target.mode)}: set-user-ID or set-group-ID`);
  } catch (error) {
    problems.push(reasonOf(error));
  }
  return { path, present: st.ok, problems, file };
}

/** The hash the build recorded for the bundle: a SEA asset, else a root-owned SHA256SUMS beside the executable. */
function readBuiltInHash(executable: string): BuiltInHash {
  const asset = builtInBundleSha256();
  if (asset !== undefined && /^[0-9a-f]{64}$/.test(asset)) return { value: asset, from: "the SEA asset bundle.sha256" };
  const sums = `${executable.slice(0, executable.lastIndexOf("/")) || "/"}/SHA256SUMS`;
  try {
    const st = lstatSync(sums);
    if (!st.isFile() || st.uid !== 0 || (st.mode & 0o022) !== 0) return { error: `${sums} is not a root-owned file writable by root only` };
    const match = /^([0-9a-f]{64}) {2}bundle\.cjs$/m.exec(readFileSync(sums, "latin1"));
    return match ? { value: match[1]!, from: sums } : { error: `${sums} has no bundle.cjs line` };
  } catch (error) {
    return { error: `no built-in hash (no SEA asset bundle.sha256; ${reasonOf(error)})` };
  }
}

/** What the kernel and the engine offer: perl asks for the Landlock ABI, /proc tells about seccomp. */
function readConfinement(selfStatus: string): ConfinementFacts {
  let landlock: LandlockFact;
  try {
    const result = runCapture({ command: TOOLS.perl, args: ["-e", LANDLOCK_ABI_SCRIPT], timeoutMs: 10_000, maxBytes: 4096 });
    landlock = result.error !== undefined || result.status !== 0 ? { error: captureFailure(result) } : parseLandlockAnswer(result.stdout.toString("latin1"));
  } catch (error) {
    landlock = { error: `could not run perl: ${reasonOf(error)}` };
  }
  const actions = readable(() => readFileSync(SECCOMP_ACTIONS_FILE, "latin1").trim().split(/\s+/), failedCall("read", SECCOMP_ACTIONS_FILE));
  return { landlock, seccomp: { ...parseSeccompStatus(selfStatus), actions: actions.ok ? actions.value : { error: actions.error } } };
}

export function captureFailure(result: { path: string; status: number | null; signal: string | null; stderr: Buffer; error?: string }): string {
  return saying(`${result.path} failed (${howItEnded(result)})`, result.stderr);
}

const ACCOUNTS_FIX = "fix the accounts check first";
const PROC_FIX = "mount /proc in the container";
const INSTALLED_FIX = "run the installed executable";
const PERL_FIX = "keep perl-base in the image (it is Essential in Debian): the audit walks the image and reads security.capability through it";
export const INSTALLED = [`${INSTALL_DIR}/${ENTRYPOINT_NAME}`, `${INSTALL_DIR}/${AGENT_EXEC_NAME}`] as const;

/** The snapshot, as readFacts builds it: each fact's type is its reader's. */
export type Facts = Awaited<ReturnType<typeof readFacts>>;

function unread(error: string, fix: string): Fact<never> {
  return { ok: false, error, fix };
}

/** Reads every fact once. The perl walks (/state, the image, /workspace's default ACLs) start after the process table, and run beside each other and the rest. */
export async function readFacts(request: { probe: boolean }) {
  /* 1. Who is asking, and which process stands for the body. */
  const selfStatus = readFileSync("/proc/self/status", "latin1");
  const own = { ...parseProcessStatus(process.pid, selfStatus), seccomp: parseSeccompStatus(selfStatus) };
  let table: ProcessEntry[];
  try {
    table = readProcessTable();
  } catch {
    table = [own];
  }
  if (!table.some((entry) => entry.pid === own.pid)) table.push(own);
  const accounts = attempt("the image must have readable /etc/passwd and /etc/group", () => {
    const [passwd, group] = [readFileSync(PASSWD_FILE, "utf8"), readFileSync(GROUP_FILE, "utf8")];
    return { passwd, resolved: resolveAccounts(passwd, group) };
  });
  const resolved = accounts.ok ? accounts.value.resolved : undefined;
  const ids = resolved && !(resolved instanceof Refusal) ? known(resolved) : unread("the users and groups of ADR 0272 are not all defined (see accounts)", ACCOUNTS_FIX);
  const serviceUid = ids.ok ? ids.value.service.uid : accounts.ok ? parsePasswd(accounts.value.passwd).find((user) => user.name === SERVICE_USER)?.uid : undefined;
  // Command lines, which any process may read (the spawner's exe link is closed to a process holding fewer capabilities): how the spawner is found.
  const cmdlines = new Map<number, readonly string[]>();
  for (const entry of table) {
    if (serviceUid === undefined || !entry.creds.uids.some((uid) => uid === serviceUid)) continue;
    try {
      cmdlines.set(entry.pid, readFileSync(`/proc/${entry.pid}/cmdline`, "latin1").split("\0").slice(0, -1));
    } catch {
      // ended meanwhile
    }
  }
  const choice = chooseJudged(table, own, serviceUid, (entry) => isSpawnerCommand(cmdlines.get(entry.pid)));
  const isSelf = choice.entry.pid === own.pid;
  const environ: Readable<Record<string, string>> = isSelf ? { ok: true, value: process.env as Record<string, string> } : readable(() => parseEnviron(readFileSync(`/proc/${choice.entry.pid}/environ`)), failedCall("read", `/proc/${choice.entry.pid}/environ`));
  const handed = serviceUid !== undefined && handedDownByService(table, own.pid, choice.entry.pid, serviceUid);
  const spawnerRuns = table.some((entry) => isSpawnerCommand(cmdlines.get(entry.pid)));
  const mode = classifyMode(choice.entry.creds, environ, ids.ok ? ids.value : undefined, spawnerRuns);
  const boundary = boundaryOf(mode.mode, { pid: choice.entry.pid, environ }, { env: process.env, handedDownByService: handed });
  const exes = new Map<number, Readable<string>>();
  const spawned = serviceUid === undefined ? new Set<number>() : spawnedTree(table, serviceUid, cmdlines);
  for (const entry of table) {
    // The exe links of the spawner and of what it runs holding a capability (a running job's grab, its parent) are closed to the audit: processes.spawner and processes.capabilities judge them.
    const closed = isSpawnerCommand(cmdlines.get(entry.pid)) || (spawned.has(entry.pid) && usableCapabilities(entry.creds) !== 0n);
    if (entry.pid === own.pid || serviceUid === undefined || !entry.creds.uids.some((uid) => uid === serviceUid) || closed) continue;
    exes.set(entry.pid, readable(() => readlinkSync(`/proc/${entry.pid}/exe`, "latin1"), failedCall("readlink", `/proc/${entry.pid}/exe`)));
  }

  /* 2. The perl walks, started now (after the process table, which their processes are not in) so that they run beside each other and the reads below. */
  const mounts = attempt(PROC_FIX, () => parseMountinfo(readFileSync("/proc/self/mountinfo", "latin1")));
  // /state (src/self-check/state.ts): the start's walk of it, read-only, owners, modes and ACLs in one pass; first, as the longest on a large /state.
  const mountsBelow = (dir: string): string[] => (mounts.ok ? mounts.value.map((m) => m.point).filter((point) => point.startsWith(`${dir}/`)) : []);
  const stateScanning = !ids.ok ? ids : mounts.ok ? attempt(PERL_FIX, () => startStateAudit(ids.value, mountsBelow(STATE_DIR))) : mounts;
  const excluded = mounts.ok ? excludedDirectories(mounts.value, IMAGE_WALK_SKIP) : new Set<string>();
  const scanning = mounts.ok ? attempt(PERL_FIX, () => startImageScan(excluded)) : mounts;
  // The default ACLs of /workspace's directories (the same walk, reading directories only), a third.
  const defaultsScanning = mounts.ok ? attempt(PERL_FIX, () => startStateAclWalk("defaults", WORKSPACE_DIR, { uid: -1, gid: -1 }, mountsBelow(WORKSPACE_DIR), READ_ONLY_WALK)) : mounts;

  /* 3. /workspace, the image's programs, the kernel: read while perl walks. */
  const stateTop = lstatOf(STATE_DIR);
  const running = attempt(INSTALLED_FIX, () => readlinkSync("/proc/self/exe"));
  const programs = new Map<string, Program>();
  for (const path of [...(running.ok ? [running.value] : []), ...INSTALLED, ...Object.values(TOOLS)]) if (!programs.has(path)) programs.set(path, readProgram(path));
  const facts = {
    /** The audit's own process (its status read once: ids, capabilities, seccomp) and environment. */
    self: known(own),
    env: known(process.env),
    table: known(table),
    /** passwd(5) as read (the service uid is found in it when the rest is wrong), and the identities or the entrypoint's refusal. */
    accounts,
    ids,
    /** The service uid even when the accounts as a whole are wrong: the judged process is found by it. */
    serviceUid: serviceUid === undefined ? unread("the service user is not defined", ACCOUNTS_FIX) : known(serviceUid),
    judged: known({ ...choice, self: isSelf, environ, relation: relationTo(table, own.pid, choice.entry.pid) }),
    mode: known(mode),
    boundary: known(boundary),
    stateTop: known(stateTop),
    agentHome: known(lstatOf(AGENT_HOME)),
    workspaceTop: known(lstatOf(WORKSPACE_DIR)),
    marker: known(readMarkerText()),
    running,
    programs: known(programs),
    bundle: running.ok ? attempt(INSTALLED_FIX, () => ({ executable: running.value, ...embeddedHashes("/proc/self/exe"), expected: readBuiltInHash(running.value) })) : running,
    mounts,
    /** The executable of every other process of the service uid, where it could be read. */
    exes: known(exes),
    /** The command line of every process of the service uid (the spawner's among them). */
    cmdlines: known(cmdlines),
    sysctls: known(new Map(KERNEL_SETTINGS.map((setting) => [setting.path, readable(() => readFileSync(setting.path, "latin1"), failedCall("read", setting.path))]))),
    confinement: known(readConfinement(selfStatus)),
    /** The private jobs' root and the lease directories in it. */
    privateRoot: known(readPrivateRoot()),
  };

  /* 4. The image walk's result, then the probe (after everything else: its processes are not the body's). */
  const perlFailed = (why: string): Fact<ImageScan> => ({ ok: false, error: `the image walk (perl) did not complete: ${why}`, fix: PERL_FIX });
  let imageScan: Fact<ImageScan>;
  if (!mounts.ok) imageScan = mounts;
  else if (!scanning.ok) imageScan = perlFailed(scanning.error);
  else {
    const output = await scanning.value;
    const parsed = output.error !== undefined || output.status !== 0 ? undefined : attempt(PERL_FIX, () => parseImageScan(output.stdout, mounts.value, excluded));
    imageScan = parsed?.ok ? parsed : perlFailed(parsed?.error ?? captureFailure(output));
  }
  const aclWalk = async <W extends AclWalk>(scanning: Fact<Promise<CaptureResult>>, root: string, parse: (stdout: Buffer) => W): Promise<Fact<W>> => {
    if (!scanning.ok) return scanning;
    const output = await scanning.value;
    const parsed = output.error !== undefined || output.status !== 0 ? undefined : attempt(PERL_FIX, () => parse(output.stdout));
    return parsed?.ok && parsed.value.complete ? parsed : { ok: false, error: `the walk of ${root} (perl) did not complete: ${parsed?.ok === false ? parsed.error : captureFailure(output)}`, fix: PERL_FIX };
  };
  const stateWalk = await aclWalk(stateScanning, STATE_DIR, parseStateWalk);
  const stateAudit: Fact<StateAudit> = stateWalk.ok ? known({ root: STATE_DIR, walk: stateWalk.value, releasePresent: releasePresent() }) : stateWalk;
  const workspaceAcls = await aclWalk(defaultsScanning, WORKSPACE_DIR, (stdout) => parseAclWalk(stdout));
  /** What the probe did; absent without --probe. */
  const probe = request.probe ? runProbe({ mode: mode.mode, self: own.creds, ids: ids.ok ? ids.value : undefined, servicePid: choice.entry.pid }) : undefined;
  return { ...facts, imageScan, stateAudit, workspaceAcls, probe: known(probe) };
}
