/*
 * /state against the layout contract of the root entrypoint. The contract is
 * not restated here: every entry is put to the entrypoint's own rules
 * (stateRules of src/layout/state-rules.ts, stateModes), and an
 * entry breaks the contract when its owner, group or mode differs from what
 * those rules would set, or when the rules refuse it (a device node, a hard
 * link to another user's file) or could not reach it (another filesystem
 * mounted inside /state). The agent's home is pruned by the rules, as the
 * entrypoint never walks it, also when it is a mount of its own; its top is
 * checked on its own, and whether it shares /state's filesystem too.
 *
 * The layout is its mode bits, and no entry may carry a POSIX ACL beside
 * them (src/layout/state-acl.ts): every ACL the read-only perl walk found
 * breaks the contract of its zone, named entries shown as getfacl(1) writes
 * them. Each start removes them.
 */
import type { Identities } from "../accounts.ts";
import { AGENT_HOME, STATE_DIR, STATE_INSTALL_NAME } from "../constants.ts";
import { DEPTH_LIMIT } from "../layout/rules.ts";
import { stateModes, type StateZone } from "../layout/state.ts";
import { stateRules } from "../layout/state-rules.ts";
import type { AclFound, AclWalk } from "../layout/state-acl.ts";
import { Refusal } from "../report.ts";
import { bounded, cannotLook, fail, failUnlessSingle, octal, pass, plural, type Verdict, warn } from "./check.ts";
import type { Lstat, Mode } from "./fact-types.ts";
import { problemLines, walkReadOnly, type WalkedEntry, type WalkProblem } from "./walk.ts";

export interface StateViolation {
  path: string;
  kind: string;
  mode: string;
  uid: number;
  gid: number;
  /** What the rules would set; absent when the rules refuse the entry. */
  want?: { uid: number; gid: number; mode?: string };
  /** Why the rules refuse or cannot reach it. */
  reason?: string;
  /** The entrypoint's own fix for a refused entry. */
  fix?: string;
}

export interface StateAudit {
  root: string;
  checked: number;
  /** Outside the release root. */
  layout: StateViolation[];
  /** /state/install and below. */
  release: StateViolation[];
  releasePresent: boolean;
  problems: WalkProblem[];
  /** Entries outside the release that differ from the layout only by group bits of node's own group (the service's umask). */
  umaskGroupBits: number;
  /** Directories DEPTH_LIMIT levels down in each zone: judged, nothing below them read (the entrypoint leaves it alone too). */
  deep?: Record<"layout" | "release", { count: number; examples: string[] }>;
}

function describe(entry: WalkedEntry): Omit<StateViolation, "want" | "reason" | "fix"> {
  return { path: entry.path, kind: entry.kind, mode: octal(entry.st.mode), uid: entry.st.uid, gid: entry.st.gid };
}

const MOUNTED_INSIDE = "another filesystem is mounted here; the entrypoint does not enter it";

/**
 * Pure given the entry: what the entrypoint's rules say about it. Returns
 * the violation (if any) and the zone to descend with (if any).
 */
export function judgeStateEntry(
  rules: ReturnType<typeof stateRules>,
  entry: WalkedEntry,
  zone: StateZone,
): { violation?: StateViolation; descend?: StateZone; pruned?: boolean; umaskGroupBits?: boolean } {
  const violation = (why: Pick<StateViolation, "want" | "reason" | "fix">): { violation: StateViolation } => ({ violation: { ...describe(entry), ...why } });
  let decision;
  try {
    decision = rules(entry, zone);
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    return violation(entry.otherDevice ? { reason: MOUNTED_INSIDE } : { reason: error.message, fix: error.fix });
  }
  // A mount point the rules leave to someone else (the agent's home) is not a fault; any other is.
  if (decision.action === "prune") return { pruned: true };
  if (entry.otherDevice) return violation({ reason: MOUNTED_INSIDE });
  if (decision.action === "skip") return violation({ reason: decision.reason });
  const current = entry.st.mode & 0o7777;
  const uid = decision.uid < 0 ? entry.st.uid : decision.uid;
  const gid = decision.gid < 0 ? entry.st.gid : decision.gid;
  // A symlink's own mode means nothing and is never changed (tree-walk.ts).
  const mode = entry.kind === "symlink" ? undefined : decision.mode ? decision.mode(current) : current;
  const descend = entry.kind === "directory" ? decision.descend : undefined;
  // What the service's umask (0007) leaves on an entry it created since the start: group bits of
  // node's own group, which the agent is not in (accounts). Not a fault; the next start removes them.
  if (decision.mode === stateModes.private && entry.st.uid === uid && entry.st.gid === gid && mode !== current && (current & ~0o070) === mode) {
    return { descend, umaskGroupBits: true };
  }
  if (entry.st.uid !== uid || entry.st.gid !== gid || (mode !== undefined && mode !== current)) {
    return { ...violation({ want: { uid, gid, ...(mode !== undefined ? { mode: octal(mode) } : {}) } }), descend };
  }
  return { descend };
}

/** Walks /state once, read-only. */
export function auditState(ids: Identities, root: string = STATE_DIR): StateAudit {
  const rules = stateRules(ids);
  const audit: StateAudit = { root, checked: 0, layout: [], release: [], releasePresent: false, problems: [], umaskGroupBits: 0 };
  audit.checked = walkReadOnly<StateZone>(
    root,
    "top",
    (entry, zone) => {
      const verdict = judgeStateEntry(rules, entry, zone);
      const releaseTop = zone === "top" && entry.name.equals(Buffer.from(STATE_INSTALL_NAME));
      if (releaseTop) audit.releasePresent = true;
      const inRelease = zone === "release" || releaseTop;
      if (verdict.violation) (inRelease ? audit.release : audit.layout).push(verdict.violation);
      if (verdict.umaskGroupBits) audit.umaskGroupBits++;
      if (entry.kind === "directory" && entry.depth >= DEPTH_LIMIT) {
        audit.deep ??= { layout: { count: 0, examples: [] }, release: { count: 0, examples: [] } };
        const deep = audit.deep[inRelease ? "release" : "layout"];
        if (deep.count++ < 3) deep.examples.push(shortened(entry.path));
      }
      return verdict.descend;
    },
    audit.problems,
  );
  return audit;
}

/** The first characters of a long path (one DEPTH_LIMIT levels down is kilobytes of it). */
function shortened(path: string): string {
  return path.length > 120 ? `${path.slice(0, 120)}...` : path;
}

/** The first three, as "path (kind mode uid:gid, want mode uid:gid)" or with the reason the rules refuse it. */
function examples(violations: readonly StateViolation[]): string {
  const shown = violations.slice(0, 3).map(({ path, kind, mode, uid, gid, reason, want }) => `${path} (${kind} ${mode} ${uid}:${gid}${reason ? `: ${reason}` : `, want ${want!.mode ? `${want!.mode} ` : ""}${want!.uid}:${want!.gid}`})`).join("; ");
  return violations.length > 3 ? `${shown}; and ${violations.length - 3} more` : shown;
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

/** Pure: state.layout ("layout") or state.release ("release") from the one walk and the ACL walk. */
export function judgeStateZone(audit: StateAudit, zone: "layout" | "release", mode: Mode, acls: AclWalk): Verdict {
  const releaseRoot = `${audit.root}/${STATE_INSTALL_NAME}`;
  const release = zone === "release";
  // A problem with the root itself leaves both unchecked.
  const inRelease = (p: { path: string }): boolean => p.path === audit.root || p.path === releaseRoot || p.path.startsWith(`${releaseRoot}/`);
  const ours = (p: { path: string }): boolean => (release ? inRelease(p) : p.path === audit.root || !inRelease(p));
  // An entry both walks could not read is one entry: the mode walk's problem says it.
  const seen = new Set(audit.problems.map((p) => p.path));
  const problems = problemLines([...audit.problems, ...acls.problems.filter((p) => !seen.has(p.path))].filter(ours));
  const violations = release ? audit.release : audit.layout;
  // An ACL on /state itself belongs to state.layout, as /state does.
  const withAcl = acls.found.filter((f) => (release ? f.path !== audit.root && inRelease(f) : !inRelease(f) || f.path === audit.root)).map(describeAcl);
  const deep = audit.deep?.[zone];
  const found = {
    root: release ? releaseRoot : audit.root,
    checked: audit.checked,
    violations: bounded(violations),
    acls: bounded(withAcl),
    unreadable: bounded(problems),
    ...(release ? {} : { umaskGroupBits: audit.umaskGroupBits }),
    ...(deep !== undefined && deep.count > 0 ? { deep } : {}),
  };
  if (violations.length > 0 || withAcl.length > 0) {
    const broken = violations.length > 0 ? [`${plural(violations.length, "entry", "entries")}${release ? " of the release root" : ""} break${violations.length === 1 ? "s" : ""} the layout contract: ${examples(violations)}`] : [];
    const shown = withAcl.slice(0, 3).join("; ") + (withAcl.length > 3 ? `; and ${withAcl.length - 3} more` : "");
    const acl = withAcl.length > 0 ? [`${plural(withAcl.length, "entry", "entries")}${release ? " of the release root" : ""} carr${withAcl.length === 1 ? "ies an ACL" : "y ACLs"}, which the layout does not allow (its mode bits are all the access there may be): ${shown}`] : [];
    return failUnlessSingle(mode === "single-uid", [...broken, ...acl].join("; "), found, refusedFirst(violations), SINGLE_UID_NOTE);
  }
  if (problems.length > 0) {
    const summary = `could not read ${plural(problems.length, "entry", "entries")} under ${audit.root}: ${problems.slice(0, 3).join("; ")}`;
    return fail(summary, found, "run the audit as root (docker exec CONTAINER clankie-separate --self-check), which can read every entry");
  }
  if (deep !== undefined && deep.count > 0) {
    const at = `${plural(deep.count, "directory", "directories")} ${DEPTH_LIMIT} levels deep ${deep.count === 1 ? "was" : "were"} not read below (the entrypoint leaves what lies deeper alone, closed to the agent at that directory)`;
    return warn(`${at}: ${deep.examples.join("; ")}`, found, "remove what lies that deep (rm -rf the chain): no service needs it");
  }
  if (release && !audit.releasePresent) {
    return warn(`no release root at ${releaseRoot}`, found, "install the release under /state/install (the service's updater does), or ignore this if the service runs the release built into the image");
  }
  const since =
    !release && audit.umaskGroupBits > 0
      ? ` (${audit.umaskGroupBits} made by the service since the start keep${audit.umaskGroupBits === 1 ? "s" : ""} its umask's group bits, of node's own group: the agent is not in it, and the next start removes them)`
      : "";
  return pass(`${audit.checked} entries checked; every one ${release ? "of the release root " : ""}follows the layout contract, and none carries an ACL${since}`, found);
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
