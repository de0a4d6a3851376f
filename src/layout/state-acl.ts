/*
 * POSIX ACLs under /state (acl(5)). The layout is stated in mode bits, and
 * an ACL acts beside them where no mode test sees it: a default ACL on a
 * directory gives every file made in it later its named entries, whatever
 * the umask; on a file with an access ACL the mode's group bits are the
 * ACL's mask, not the owning group's permissions; and a named entry a mask
 * of 0 silences now acts again once anyone with the file's ownership adds a
 * group bit (chmod(2) sets the mask from them). find(1) has no ACL test and
 * Node no getxattr(2), so a perl walk (src/perl/state-acl.pl) reads the two
 * attributes they live in, system.posix_acl_access and
 * system.posix_acl_default, on every entry the layout covers:
 *
 *   strip  (the entrypoint, at every start, as root): replaces each access
 *          ACL by its base entries, which the kernel keeps as the mode (the
 *          group bits become the owning group's permissions, cut by the
 *          mask, so nobody gains one), and removes each default ACL. After
 *          it, the mode bits are all there is, and the scan and the walk
 *          judge them as before.
 *   list   (the audit, read-only): every entry that carries an ACL.
 *
 * Both leave the agent's home and mount points alone, as the walk does,
 * and enter no directory DEPTH_LIMIT levels down (src/layout/rules.ts).
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

export type AclWalkMode = "strip" | "list";

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

/** Pure: perl's arguments after -e SCRIPT (`serviceUid`: strip leaves a hard link to another uid's file alone; list ignores it; `nr`: another architecture's numbers). */
export function stateAclArgs(mode: AclWalkMode, root: string, serviceUid: number, nr: SyscallNumbers = builtInSyscalls()): string[] {
  const dirFlags = fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;
  return [mode, root, STATE_LAYOUT.pruned, ...[serviceUid, nr.lgetxattr, nr.getxattr, nr.setxattr, nr.removexattr, dirFlags, O_PATH | fsConstants.O_NOFOLLOW, constants.errno.ENODATA, constants.errno.EOPNOTSUPP, DEPTH_LIMIT, SHOWN_PATH_BYTES].map(String)];
}

/**
 * Starts the walk of `root`, never entering `mountPoints` (display paths of
 * mount points below it, as mountPointsBelow gives them). Throws (Refusal or
 * Error) when perl cannot be run under the exec rules.
 */
export function startStateAclWalk(mode: AclWalkMode, root: string, serviceUid: number, mountPoints: Iterable<string>): Promise<CaptureResult> {
  return startCapture({
    command: TOOLS.perl,
    args: ["-e", STATE_ACL_SCRIPT, ...stateAclArgs(mode, root, serviceUid)],
    input: Buffer.concat([...mountPoints].map((point) => Buffer.from(`${point}\0`, "latin1"))),
    // strip: no deadline of its own (a tree too big to read in time is too big to walk); list: the audit's.
    timeoutMs: mode === "strip" ? 2 ** 31 - 1 : 120_000,
    maxBytes: 64 << 20,
  });
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

export interface AclFound {
  path: string;
  /** The access ACL's attribute as hex, or "" without one. */
  access: string;
  /** The default ACL's (directories), or "". */
  default: string;
}

export interface AclWalk {
  visited: number;
  /** strip: how many entries had ACLs removed; list: 0. */
  stripped: number;
  /** Every entry with an ACL (list), or the first five stripped (strip). */
  found: AclFound[];
  /** What could not be read (list); in strip the walk stops at the first. */
  problems: Array<{ path: string; syscall: string; code: string }>;
  /** strip: an entry that changed while the walk looked at it; the walk stopped there. */
  changed?: string;
  /** Whether the walk ran to its end (its last record came). */
  complete: boolean;
}

/** Pure: the walk's output (NUL-terminated fields, src/perl/state-acl.pl). Throws on output it does not know. */
export function parseAclWalk(stdout: Buffer): AclWalk {
  const fields = stdout.toString("latin1").split("\0");
  if (fields.pop() !== "") throw new Error("the ACL walk's output does not end with a complete field");
  const walk: AclWalk = { visited: 0, stripped: 0, found: [], problems: [], complete: false };
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
    if (walk.complete || walk.changed !== undefined) throw new Error("the ACL walk printed records after its last one");
    const tag = fields[i++];
    if (tag === "A") {
      const [raw, access, dflt] = take(3) as [string, string, string];
      walk.found.push({ path: shown(raw), access: hex(access), default: hex(dflt) });
    } else if (tag === "P") {
      const [raw, syscall, errno] = take(3) as [string, string, string];
      walk.problems.push({ path: shown(raw), syscall, code: errnoName(errno) });
    } else if (tag === "X") {
      walk.changed = shown(take(1)[0]!);
    } else if (tag === "V") {
      const [visited, stripped] = take(2) as [string, string];
      walk.visited = Number(visited);
      walk.stripped = Number(stripped);
      walk.complete = true;
    } else {
      throw new Error(`the ACL walk printed an unknown record ${JSON.stringify(tag)}`);
    }
  }
  return walk;
}
