/* Reads a host tree as the kernel reports it (lstat), independent of src/. */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface Entry {
  path: string;
  uid: number;
  gid: number;
  mode: number;
  kind: "dir" | "file" | "symlink" | "other";
  nlink: number;
}

export function listTree(root: string, options: { skip?: (path: string) => boolean } = {}): Entry[] {
  const out: Entry[] = [];
  const walk = (path: string): void => {
    const st = lstatSync(path);
    const kind = st.isDirectory() ? "dir" : st.isFile() ? "file" : st.isSymbolicLink() ? "symlink" : "other";
    out.push({ path, uid: st.uid, gid: st.gid, mode: st.mode & 0o7777, kind, nlink: st.nlink });
    if (kind === "dir") for (const name of readdirSync(path).sort()) if (!options.skip?.(join(path, name))) walk(join(path, name));
  };
  walk(root);
  return out;
}

/** Owners, modes and contents of a tree: equal digests mean nothing changed. */
export function treeDigest(root: string): string {
  const hash = createHash("sha256");
  for (const entry of listTree(root)) {
    hash.update(`${entry.path} ${entry.uid} ${entry.gid} ${entry.mode} ${entry.kind}\n`);
    if (entry.kind === "file") hash.update(readFileSync(entry.path));
  }
  return hash.digest("hex");
}

export const octal = (mode: number): string => mode.toString(8).padStart(4, "0");
