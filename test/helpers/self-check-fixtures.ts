/* Fixtures for the audit's pure judges: the image's identities, process credentials, lstat results, walked entries. */
import type { Stats } from "node:fs";
import { resolveIdentities } from "../../src/accounts.ts";
import type { ProcessCredentials } from "../../src/os/proc-status.ts";
import { WalkedEntry } from "../../src/self-check/walk.ts";
import { DEFAULT_GROUP, DEFAULT_PASSWD } from "./sandbox.ts";

export const ids = resolveIdentities(DEFAULT_PASSWD, DEFAULT_GROUP);
export const C0 = 0xc0n;

export function creds(uid: number, caps: bigint, options: { nnp?: boolean; bnd?: bigint; groups?: number[] } = {}): ProcessCredentials {
  return { uids: [uid, uid, uid, uid], gids: [uid, uid, uid, uid], groups: options.groups ?? [uid], capInh: caps, capPrm: caps, capEff: caps, capAmb: caps, capBnd: options.bnd ?? caps, noNewPrivs: options.nnp ?? true };
}

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
export function walked(path: string, kind: Kind, mode: number, depth: number, uid = 1000, extra: Partial<{ nlink: number; otherDevice: boolean }> = {}): WalkedEntry {
  return new WalkedEntry(path, path.slice(path.lastIndexOf("/") + 1), kind, stats(kind, mode, uid, uid, extra), depth, extra.otherDevice ?? false);
}
