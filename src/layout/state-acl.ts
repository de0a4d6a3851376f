/*
 * The walk of /state (src/perl/state-acl.pl): owners, modes and POSIX ACLs
 * (acl(5)) read in one pass. The layout is stated in mode bits, and an ACL
 * acts beside them where no mode test sees it: a default ACL on a directory
 * gives every file made in it later its named entries, whatever the umask;
 * on a file with an access ACL the mode's group bits are the ACL's mask, not
 * the owning group's permissions; and a named entry a mask of 0 silences now
 * acts again once anyone with the file's ownership adds a group bit
 * (chmod(2) sets the mask from them). Node has no getxattr(2), so the walk
 * is perl, and reads the two attributes they live in,
 * system.posix_acl_access and system.posix_acl_default, on every entry the
 * layout covers:
 *
 *   fix    (the entrypoint, at every start, as root): makes every entry what
 *          the layout (src/layout/state.ts) wants. Each access ACL is first
 *          replaced by its base entries, which the kernel keeps as the mode
 *          (the group bits become the owning group's permissions, cut by the
 *          mask, so nobody gains one), and each default ACL removed; then
 *          the owner and the mode are judged by the mode bits left.
 *   audit  (the audit, read-only): a dry run of fix, every entry judged
 *          as fix judges it, and what fix would change, refuse or leave
 *          alone reported (src/perl/state-audit.pl, which the audit's
 *          bundle alone carries, defines it and the next mode).
 *   defaults (the audit, read-only, of /workspace): every directory that
 *          carries a default ACL, which sets the modes of what anyone later
 *          creates in it, the service included (docs/security.md).
 *
 * fix and audit leave the agent's home alone; all three leave mount points
 * alone and enter no directory DEPTH_LIMIT levels down (src/layout/rules.ts).
 */
import { constants as fsConstants } from "node:fs";
import { constants } from "node:os";
import STATE_ACL_TEMPLATE from "../perl/state-acl.pl";
import type { SyscallNumbers } from "../os/syscalls.ts";
import { TOOLS } from "../constants.ts";
import { type CaptureResult, startCapture } from "../exec/capture.ts";
import { errnoName } from "../os/errno.ts";
import { printablePath } from "../report.ts";
import { DEPTH_LIMIT, SHOWN_PATH_BYTES } from "./rules.ts";
import { STATE_LAYOUT } from "./state.ts";

/** The walk, src/perl/state-acl.pl (its header says what it reads, changes and prints). */
export const STATE_ACL_SCRIPT = STATE_ACL_TEMPLATE.trim();

/** open(2) O_PATH on x86_64 and aarch64 (asm-generic/fcntl.h); Node does not export it. */
const O_PATH = 0o10000000;

export type AclWalkMode = "fix" | "audit" | "defaults";

/*
 * This architecture's system call numbers (src/os/syscalls.ts, syscallNumbers),
 * defined by build.mjs (esbuild define) and, for src/ run directly, by
 * scripts/text-modules.mjs: the table itself is not in the entrypoint's bundle.
 */
declare const __CLANKIE_SYSCALLS__: SyscallNumbers | undefined;

function builtInSyscalls(): SyscallNumbers {
  if (typeof __CLANKIE_SYSCALLS__ !== "object") throw new Error("no system call numbers were built in (build.mjs defines __CLANKIE_SYSCALLS__, scripts/text-modules.mjs for src/)");
  return __CLANKIE_SYSCALLS__;
}

/** The owner fix gives every entry, and the audit wants (defaults ignores it). */
export interface StateOwner {
  uid: number;
  gid: number;
}

/** Pure: perl's arguments after -e SCRIPT (`nr`: another architecture's numbers). */
export function stateAclArgs(mode: AclWalkMode, root: string, owner: StateOwner, nr: SyscallNumbers = builtInSyscalls()): string[] {
  const dirFlags = fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;
  const fileFlags = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY;
  // defaults is the audit's read of /workspace: nothing in it is left out.
  const state = mode !== "defaults";
  return [mode, root, state ? STATE_LAYOUT.pruned : "", state ? STATE_LAYOUT.release.name : "", ...[owner.uid, owner.gid, nr.lgetxattr, nr.getxattr, nr.setxattr, nr.removexattr, dirFlags, fileFlags, O_PATH | fsConstants.O_NOFOLLOW, constants.errno.ENODATA, constants.errno.EOPNOTSUPP, DEPTH_LIMIT, SHOWN_PATH_BYTES].map(String)];
}

/**
 * Starts the walk of `root`, never entering `mountPoints` (display paths of
 * mount points below it, as mountPointsBelow gives them); `readOnly` for
 * audit and defaults: their part of the program (src/perl/state-audit.pl)
 * and the most records of each kind and zone the audit prints. Throws
 * (Refusal or Error) when perl cannot be run under the exec rules.
 */
export function startStateAclWalk(mode: AclWalkMode, root: string, owner: StateOwner, mountPoints: Iterable<string>, readOnly?: { part: string; keep: number }): Promise<CaptureResult> {
  const program = readOnly ? `${STATE_ACL_SCRIPT}\n${readOnly.part.trim()}` : STATE_ACL_SCRIPT;
  return startCapture({
    command: TOOLS.perl,
    args: ["-e", program, ...stateAclArgs(mode, root, owner), ...(readOnly ? [String(readOnly.keep)] : [])],
    input: Buffer.concat([...mountPoints].map((point) => Buffer.from(`${point}\0`, "latin1"))),
    // fix: no deadline of its own (a tree too big to read in time is too big to walk); audit and defaults: the audit's.
    timeoutMs: mode === "fix" ? 2 ** 31 - 1 : 120_000,
    maxBytes: 64 << 20,
  });
}

export interface AclFound {
  path: string;
  /** The access ACL's attribute as hex, or "" without one. */
  access: string;
  /** The default ACL's (directories), or "". */
  default: string;
}

export interface AclWalk {
  visited: number;
  /** fix: how many entries had ACLs removed; audit: 0. */
  stripped: number;
  /** fix: entries judged by the layout, and how many of them were changed. */
  checked: number;
  fixed: number;
  /** fix: entries left alone (another filesystem, or a directory at the depth limit), and the first five. */
  skipped: number;
  left: Array<{ path: string; why: "mount" | "deep" }>;
  /** Entries with an ACL (audit: up to KEEP per zone; defaults: every one), or the first five stripped (fix). */
  found: AclFound[];
  /** What could not be read (audit, defaults); in fix the walk stops at the first. */
  problems: Array<{ path: string; syscall: string; code: string }>;
  /** fix: an entry that changed while the walk looked at it; the walk stopped there. */
  changed?: string;
  /** fix: what the walk refused (a device node, a foreign hard link); the walk stopped there. */
  refused?: { path: string; device: true } | { path: string; links: number; uid: number };
  /** Whether the walk ran to its end (its last record came). */
  complete: boolean;
}

/**
 * Pure: the walk's output (NUL-terminated fields, src/perl/state-acl.pl),
 * the records of another part of the program (state-audit.pl's) read by
 * `more`, by tag: how many fields, and what takes them. Throws on output it
 * does not know.
 */
export function parseAclWalk(stdout: Buffer, more: Readonly<Record<string, { fields: number; read: (fields: string[]) => void }>> = {}): AclWalk {
  const fields = stdout.toString("latin1").split("\0");
  if (fields.pop() !== "") throw new Error("the ACL walk's output does not end with a complete field");
  const walk: AclWalk = { visited: 0, stripped: 0, checked: 0, fixed: 0, skipped: 0, left: [], found: [], problems: [], complete: false };
  const shown = (raw: string) => printablePath(Buffer.from(raw, "latin1"));
  const hex = (value: string): string => {
    if (!/^(?:[0-9a-f]{2})*$/.test(value)) throw new Error("the ACL walk printed a malformed attribute");
    return value;
  };
  let i = 0;
  const take = (n: number): string[] => {
    if (i + n > fields.length) throw new Error("the ACL walk's output ends in the middle of a record");
    i += n;
    return fields.slice(i - n, i);
  };
  while (i < fields.length) {
    if (walk.complete || walk.changed !== undefined || walk.refused !== undefined) throw new Error("the ACL walk printed records after its last one");
    const tag = fields[i++];
    if (tag === "A") {
      const [raw, access, dflt] = take(3) as [string, string, string];
      walk.found.push({ path: shown(raw), access: hex(access), default: hex(dflt) });
    } else if (tag === "P") {
      const [raw, syscall, errno] = take(3) as [string, string, string];
      walk.problems.push({ path: shown(raw), syscall, code: errnoName(errno) });
    } else if (tag === "X") {
      walk.changed = shown(take(1)[0]!);
    } else if (tag === "D") {
      walk.refused = { path: shown(take(1)[0]!), device: true };
    } else if (tag === "H") {
      const [raw, links, uid] = take(3) as [string, string, string];
      walk.refused = { path: shown(raw), links: Number(links), uid: Number(uid) };
    } else if (tag === "S") {
      const [raw, why] = take(2) as [string, string];
      if (why !== "mount" && why !== "deep") throw new Error(`the walk left an entry alone for an unknown reason ${JSON.stringify(why)}`);
      walk.left.push({ path: shown(raw), why });
    } else if (tag === "V") {
      [walk.visited, walk.stripped, walk.checked, walk.fixed, walk.skipped] = take(5).map(Number) as [number, number, number, number, number];
      walk.complete = true;
    } else {
      const reader = more[tag!];
      if (reader === undefined) throw new Error(`the ACL walk printed an unknown record ${JSON.stringify(tag)}`);
      reader.read(take(reader.fields));
    }
  }
  return walk;
}
