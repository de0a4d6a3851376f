/* The kind of a directory entry, from lstat(2): what every walk (the entrypoint's, the audit's) decides by. */
import type { Stats } from "node:fs";

export type EntryKind = "directory" | "file" | "symlink" | "fifo" | "socket" | "device";

export function kindOf(st: Stats): EntryKind {
  if (st.isDirectory()) return "directory";
  if (st.isFile()) return "file";
  if (st.isSymbolicLink()) return "symlink";
  if (st.isFIFO()) return "fifo";
  if (st.isSocket()) return "socket";
  return "device";
}
