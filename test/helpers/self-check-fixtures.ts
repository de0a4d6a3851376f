/* Fixtures for the audit's pure judges: the image's identities, process credentials, lstat results, walked entries. */
import type { Stats } from "node:fs";
import { resolveIdentities } from "../../src/accounts.ts";
import type { StateWalk } from "../../src/self-check/state.ts";
import { DEFAULT_GROUP, DEFAULT_PASSWD } from "./sandbox.ts";

export const ids = resolveIdentities(DEFAULT_PASSWD, DEFAULT_GROUP);
export const C0 = 0xc0n;

export { creds } from "./credentials.ts";

export type Kind = "directory" | "file" | "symlink" | "device";
export function stats(kind: Kind, mode: number, uid = 1000, gid = 1000, extra: Partial<{ nlink: number; dev: number; ino: number }> = {}): Stats {
  return {
    mode,
    uid,
    gid,
    nlink: extra.nlink ?? 1,
    dev: extra.dev ?? 1,
    ino: extra.ino ?? 2,
    isDirectory: () => kind === "directory",
    isFile: () => kind === "file",
    isSymbolicLink: () => kind === "symlink",
    isFIFO: () => false,
    isSocket: () => false,
  } as unknown as Stats;
}
/** What a perl walk of /state or /workspace printed (src/self-check/state.ts, parseStateWalk): a complete walk of 10 entries that found nothing, with `more`. */
export function walkOf(more: Partial<StateWalk> = {}): StateWalk {
  return { visited: 10, stripped: 0, checked: 0, fixed: 0, skipped: 0, left: [], found: [], problems: [], wrong: [], tally: { wrong: [0, 0], acls: [0, 0], deep: [0, 0], umask: 0 }, complete: true, ...more };
}

/** A /proc/self/mountinfo (proc(5)) of a container: a tmpfs root, /usr read-only, the two volumes, pseudo filesystems, an escaped space. */
export const MOUNTINFO = [
  "69 45 0:40 / / rw,nosuid,nodev,relatime - tmpfs tmpfs rw",
  "70 69 254:0 /usr /usr ro,nosuid,nodev,relatime - ext4 /dev/vda rw",
  "74 69 254:0 /b/state /state rw,nosuid,nodev,relatime - ext4 /dev/vda rw",
  "75 69 254:0 /b/workspace /workspace rw,relatime - ext4 /dev/vda rw",
  "78 69 0:41 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw",
  "88 81 0:43 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw,mode=620",
  "90 69 0:44 / /with\\040space rw - tmpfs tmpfs rw",
].join("\n");
