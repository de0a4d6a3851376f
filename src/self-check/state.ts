/*
 * /state against the layout contract of the root entrypoint, from one
 * read-only perl walk (src/layout/state-acl.ts, mode audit): a dry run of the
 * start's own walk, which judges every entry as the start does and reports
 * what the start would change (an owner, a mode, an ACL), refuse (a device
 * node, a hard link to another user's file) or could not reach (another
 * filesystem mounted inside /state, a directory at the depth limit). The
 * agent's home is left alone, as the start leaves it; its top is checked on
 * its own, and whether it shares /state's filesystem too.
 *
 * The layout is its mode bits, and no entry may carry a POSIX ACL beside
 * them: every ACL found breaks the contract of its zone, named entries shown
 * as getfacl(1) writes them. Each start removes them.
 */
import { lstatSync } from "node:fs";
import type { Identities } from "../accounts.ts";
import { AGENT_HOME, STATE_DIR, STATE_INSTALL_NAME } from "../constants.ts";
import type { CaptureResult } from "../exec/capture.ts";
import { DEPTH_LIMIT } from "../layout/rules.ts";
import { stateModes, stateRefusals } from "../layout/state.ts";
import { type AclFound, type AclWalk, parseAclWalk, type StateOwner, startStateAclWalk } from "../layout/state-acl.ts";
import STATE_AUDIT_PART from "../perl/state-audit.pl";
import { bounded, cannotLook, failUnlessSingle, fail, octal, pass, plural, problemLines, SHOWN_ITEMS, type Verdict, warn } from "./check.ts";
import type { Lstat, Mode } from "./fact-types.ts";
import { printablePath } from "../report.ts";

export interface StateViolation {
  path: string;
  kind: string;
  mode: string;
  uid: number;
  gid: number;
  /** What the start would set; absent when it refuses the entry or cannot reach it. */
  want?: { uid: number; gid: number; mode?: string };
  /** Why the start refuses or cannot reach it. */
  reason?: string;
  /** The start's own fix for a refused entry. */
  fix?: string;
}

/** An entry the start would change (`want`: the mode it would give, absent for a symlink) or refuse, or a mount point it never enters. */
export interface WrongEntry {
  path: string;
  /** Its st_mode (type and permission bits), owner and link count. */
  mode: number;
  uid: number;
  gid: number;
  links: number;
  want?: number;
  why: "" | "device" | "link" | "mount";
}

/** The audit's walk: the records it kept (SHOWN_ITEMS of each kind per zone) and how many there were, per zone ([the rest, the release root]); umask: entries excused as the service's umask's group bits. */
export interface StateWalk extends AclWalk {
  wrong: WrongEntry[];
  tally: { wrong: [number, number]; acls: [number, number]; deep: [number, number]; umask: number };
}

/** The walk's findings, and whether the release root exists. */
export interface StateAudit {
  root: string;
  walk: StateWalk;
  releasePresent: boolean;
}

/** The read-only modes of the walk (audit, and defaults for /workspace), which this bundle alone carries. */
export const READ_ONLY_WALK = { part: STATE_AUDIT_PART, keep: SHOWN_ITEMS } as const;

/** Pure: the audit's walk from its output (src/perl/state-audit.pl's M and T records beside the walk's own). Throws on output it does not know. */
export function parseStateWalk(stdout: Buffer): StateWalk {
  const wrong: WrongEntry[] = [];
  let tally: StateWalk["tally"] = { wrong: [0, 0], acls: [0, 0], deep: [0, 0], umask: 0 };
  const readWrong = ([raw, mode, uid, gid, links, want, why]: string[]): void => {
    if (why !== "" && why !== "device" && why !== "link" && why !== "mount") throw new Error(`the walk found an entry wrong for an unknown reason ${JSON.stringify(why)}`);
    wrong.push({ path: printablePath(Buffer.from(raw!, "latin1")), mode: Number(mode), uid: Number(uid), gid: Number(gid), links: Number(links), ...(want === "" ? {} : { want: Number(want) }), why });
  };
  const readTally = (fields: string[]): void => {
    const [m0, m1, a0, a1, s0, s1, umask] = fields.map(Number) as [number, number, number, number, number, number, number];
    tally = { wrong: [m0, m1], acls: [a0, a1], deep: [s0, s1], umask };
  };
  const walk = parseAclWalk(stdout, { M: { fields: 7, read: readWrong }, T: { fields: 7, read: readTally } });
  return { ...walk, wrong, tally };
}

/** Starts the walk of `root` as the audit's (mode audit), mount points below it left alone; the owner is the service's. */
export function startStateAudit(ids: Identities, mountPoints: Iterable<string>, root: string = STATE_DIR): Promise<CaptureResult> {
  return startStateAclWalk("audit", root, { uid: ids.service.uid, gid: ids.service.gid }, mountPoints, READ_ONLY_WALK);
}

/** Whether `root`'s release root exists (any kind: the walk judges what it is). */
export function releasePresent(root: string = STATE_DIR): boolean {
  return lstatSync(`${root}/${STATE_INSTALL_NAME}`, { throwIfNoEntry: false }) !== undefined;
}

const MOUNTED_INSIDE = "another filesystem is mounted here; the entrypoint does not enter it";
const KINDS: Readonly<Record<number, string>> = { 0o040000: "directory", 0o100000: "file", 0o120000: "symlink", 0o010000: "fifo", 0o140000: "socket" };

/** Pure: one entry the walk found wrong, as the check shows it: what it is, and what the start would make it or why it refuses it. */
export function violationOf(entry: WrongEntry, owner: StateOwner): StateViolation {
  const seen = { path: entry.path, kind: KINDS[entry.mode & 0o170000] ?? "device", mode: octal(entry.mode), uid: entry.uid, gid: entry.gid };
  if (entry.why === "mount") return { ...seen, reason: MOUNTED_INSIDE };
  if (entry.why !== "") {
    const refusal = entry.why === "device" ? stateRefusals.device(entry.path) : stateRefusals.foreignHardLink(entry.path, entry.links, entry.uid);
    return { ...seen, reason: refusal.message, fix: refusal.fix };
  }
  return { ...seen, want: { uid: owner.uid, gid: owner.gid, ...(entry.want !== undefined ? { mode: octal(entry.want) } : {}) } };
}

/** The first characters of a long path (one DEPTH_LIMIT levels down is kilobytes of it). */
function shortened(path: string): string {
  return path.length > 120 ? `${path.slice(0, 120)}...` : path;
}

/** The first three of `count`, as "path (kind mode uid:gid, want mode uid:gid)" or with the reason the start refuses it. */
function examples(violations: readonly StateViolation[], count: number): string {
  const shown = violations.slice(0, 3).map(({ path, kind, mode, uid, gid, reason, want }) => `${path} (${kind} ${mode} ${uid}:${gid}${reason ? `: ${reason}` : `, want ${want!.mode ? `${want!.mode} ` : ""}${want!.uid}:${want!.gid}`})`).join("; ");
  return count > 3 ? `${shown}; and ${count - 3} more` : shown;
}

const RESTART_FIX = "restart the container (docker restart CONTAINER): at every separated start the root entrypoint puts /state back under its layout";
const SINGLE_UID_NOTE = "this body runs single-uid, so the entrypoint has not applied the layout; it does at the first start with the launch flags of ADR 0272";

function refusedFirst(violations: readonly StateViolation[]): string {
  const refused = violations.find((v) => v.fix !== undefined);
  return refused ? `${refused.fix}; then ${RESTART_FIX}` : RESTART_FIX;
}

/** One entry of an ACL (acl(5)): ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER. */
export interface AclEntry {
  tag: "user::" | "user" | "group::" | "group" | "mask" | "other";
  /** The uid or gid of a named entry. */
  id?: number;
  perm: string;
}

const TAGS: Readonly<Record<number, AclEntry["tag"]>> = { 1: "user::", 2: "user", 4: "group::", 8: "group", 0x10: "mask", 0x20: "other" };

/** Pure: the value of a system.posix_acl_* attribute (posix_acl_xattr.h: a u32 version 2, then u16 tag, u16 perm, u32 id, little-endian). */
export function decodeAcl(hex: string): AclEntry[] {
  const data = Buffer.from(hex, "hex");
  const entries: AclEntry[] = [];
  for (let at = 4; at + 8 <= data.length; at += 8) {
    const tag = TAGS[data.readUInt16LE(at)] ?? "other";
    const p = data.readUInt16LE(at + 2);
    const perm = `${p & 4 ? "r" : "-"}${p & 2 ? "w" : "-"}${p & 1 ? "x" : "-"}`;
    entries.push(tag === "user" || tag === "group" ? { tag, id: data.readUInt32LE(at + 4), perm } : { tag, perm });
  }
  return entries;
}

/** Pure: the named entries, as getfacl(1) writes them ("user:1001:r--"); the base entries say nothing the mode does not. */
export function namedEntries(hex: string): string[] {
  return decodeAcl(hex)
    .filter((e) => e.id !== undefined)
    .map((e) => `${e.tag}:${e.id}:${e.perm}`);
}

/** Pure: one ACL as the check shows it: "/state (default ACL: user:1001:r--)". */
export function describeAcl(found: AclFound): string {
  const part = (what: string, hex: string): string[] => {
    if (hex === "") return [];
    const named = namedEntries(hex);
    return [`${what}${named.length > 0 ? `: ${named.join(", ")}` : ", no named entry"}`];
  };
  return `${found.path} (${[...part("ACL", found.access), ...part("default ACL", found.default)].join("; ")})`;
}

/** Pure: state.layout ("layout") or state.release ("release") from the walk; `owner` the service's, which the start gives every entry. */
export function judgeStateZone(audit: StateAudit, zone: "layout" | "release", mode: Mode, owner: StateOwner): Verdict {
  const { walk } = audit;
  const releaseRoot = `${audit.root}/${STATE_INSTALL_NAME}`;
  const release = zone === "release";
  const at = release ? 1 : 0;
  const inZone = (p: { path: string }): boolean => (p.path === releaseRoot || p.path.startsWith(`${releaseRoot}/`)) === release;
  // A problem with the root itself leaves both unchecked.
  const problems = problemLines(walk.problems.filter((p) => p.path === audit.root || inZone(p)));
  // The walk's records, at most SHOWN_ITEMS of each kind per zone, and its counts of them.
  const violations = walk.wrong.filter(inZone).map((entry) => violationOf(entry, owner));
  const violationCount = walk.tally.wrong[at];
  const withAcl = walk.found.filter(inZone).map(describeAcl);
  const aclCount = walk.tally.acls[at];
  const deep = { count: walk.tally.deep[at], examples: walk.left.filter((left) => left.why === "deep" && inZone(left)).slice(0, 3).map((left) => shortened(left.path)) };
  const umask = walk.tally.umask;
  const found = {
    root: release ? releaseRoot : audit.root,
    checked: walk.visited,
    violations: bounded(violations, violationCount),
    acls: bounded(withAcl, aclCount),
    unreadable: bounded(problems),
    ...(release ? {} : { umaskGroupBits: umask }),
    ...(deep.count > 0 ? { deep } : {}),
  };
  if (violationCount > 0 || aclCount > 0) {
    const broken = violationCount > 0 ? [`${plural(violationCount, "entry", "entries")}${release ? " of the release root" : ""} break${violationCount === 1 ? "s" : ""} the layout contract: ${examples(violations, violationCount)}`] : [];
    const shown = withAcl.slice(0, 3).join("; ") + (aclCount > 3 ? `; and ${aclCount - 3} more` : "");
    const acl = aclCount > 0 ? [`${plural(aclCount, "entry", "entries")}${release ? " of the release root" : ""} carr${aclCount === 1 ? "ies an ACL" : "y ACLs"}, which the layout does not allow (its mode bits are all the access there may be): ${shown}`] : [];
    return failUnlessSingle(mode === "single-uid", [...broken, ...acl].join("; "), found, refusedFirst(violations), SINGLE_UID_NOTE);
  }
  if (problems.length > 0) {
    const summary = `could not read ${plural(problems.length, "entry", "entries")} under ${audit.root}: ${problems.slice(0, 3).join("; ")}`;
    return fail(summary, found, "run the audit as root (docker exec CONTAINER clankie-separate --self-check), which can read every entry");
  }
  if (deep.count > 0) {
    const where = `${plural(deep.count, "directory", "directories")} ${DEPTH_LIMIT} levels deep ${deep.count === 1 ? "was" : "were"} not read below (the entrypoint leaves what lies deeper alone, closed to the agent at that directory)`;
    return warn(`${where}: ${deep.examples.join("; ")}`, found, "remove what lies that deep (rm -rf the chain): no service needs it");
  }
  if (release && !audit.releasePresent) {
    return warn(`no release root at ${releaseRoot}`, found, "install the release under /state/install (the service's updater does), or ignore this if the service runs the release built into the image");
  }
  const since =
    !release && umask > 0
      ? ` (${umask} made by the service since the start keep${umask === 1 ? "s" : ""} its umask's group bits, of node's own group: the agent is not in it, and the next start removes them)`
      : "";
  return pass(`${walk.visited} entries checked; every one ${release ? "of the release root " : ""}follows the layout contract, and none carries an ACL${since}`, found);
}

/** Pure: /state/agent, a directory of the agent, mode 0700; never walked inside. */
export function judgeAgentHome(ids: Identities, home: Lstat, mode: Mode): Verdict {
  const path = AGENT_HOME;
  const single = mode === "single-uid";
  if (!home.ok) {
    if (home.code === "ENOENT" && single) return warn(`${path} does not exist (${SINGLE_UID_NOTE})`, { path, exists: false }, null);
    return cannotLook(path, home.error, "restart the container: the entrypoint creates it at every separated start", single ? "warn" : "fail");
  }
  const st = home.value;
  const want = { uid: ids.agent.uid, gid: ids.agent.gid, mode: octal(stateModes.agentHome()) };
  const found = { path, kind: st.isDirectory() ? "directory" : st.isSymbolicLink() ? "symlink" : "other", uid: st.uid, gid: st.gid, mode: octal(st.mode), want };
  const wrong: string[] = [];
  if (!st.isDirectory()) wrong.push(`it is a ${found.kind}, not a directory`);
  if (st.uid !== want.uid || st.gid !== want.gid) wrong.push(`owned by ${st.uid}:${st.gid}, want ${want.uid}:${want.gid} (${ids.agent.name})`);
  if (octal(st.mode) !== want.mode) wrong.push(`mode ${octal(st.mode)}, want ${want.mode}`);
  if (wrong.length === 0) return pass(`${path} is the agent's (${want.uid}:${want.gid}, ${want.mode})`, found);
  return failUnlessSingle(single, `${path}: ${wrong.join("; ")}`, found, `remove it (rm -rf ${path}) and restart the container: the entrypoint recreates it empty for ${ids.agent.name}`, SINGLE_UID_NOTE, null);
}

/**
 * Pure: /state/agent on a filesystem of its own (st_dev differs from /state's).
 * On the same filesystem the agent can fill it, and the service's own writes
 * (credentials, event logs) then fail with ENOSPC. A warning, not a failure:
 * the launch decides, and a quota on a shared filesystem (which st_dev cannot
 * see) would also do.
 */
export function judgeAgentVolume(top: Lstat, home: Lstat, mode: Mode): Verdict {
  const [path, root] = [AGENT_HOME, STATE_DIR];
  if (!top.ok || !home.ok) return cannotLook(path, (!top.ok ? top : (home as { error: string })).error, "restart the container: the entrypoint creates /state/agent at every separated start", "warn");
  const found = { path, dev: home.value.dev, stateDev: top.value.dev };
  if (found.dev !== found.stateDev) return pass(`${path} is a filesystem of its own: the agent cannot fill /state`, found);
  const note = mode === "single-uid" ? ` (${SINGLE_UID_NOTE})` : "";
  return warn(`${path} is on the filesystem of ${root}: the agent can fill it, and the service's writes to ${root} then fail with ENOSPC${note}`, found, AGENT_VOLUME_FIX);
}

export const AGENT_VOLUME_FIX =
  "give the agent's home a filesystem of its own: add --tmpfs /state/agent:rw,exec,nosuid,nodev,size=1g to docker run, or -v VOLUME:/state/agent with a volume on another filesystem (docs/launch.md, \"The agent's home\")";
