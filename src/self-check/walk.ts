/*
 * A read-only walk: readdir(3) and lstat(2), nothing else. It never opens a
 * file, never follows a symlink it saw (entries are lstat'ed, and only what
 * lstat calls a directory is entered), and cannot change anything: this
 * module imports no call that writes. A directory swapped by a concurrent
 * writer between lstat and readdir can make the audit describe the moved
 * tree; only the service and root can write the trees it walks.
 *
 * Paths are strings while names are valid UTF-8 (the fast path) and Buffers
 * below a directory whose names are not, so every name is reachable.
 * Iterative, so depth is bounded by memory, not the call stack.
 */
import { lstatSync, readdirSync, type Stats } from "node:fs";
import { codeOf, printablePath } from "../report.ts";
import { type EntryKind, kindOf } from "../os/file-kind.ts";
import type { EntryView } from "../layout/rules.ts";

export type FsPath = string | Buffer;

/**
 * One entry as the walk met it, and as the layout rules see it (EntryView):
 * its display path and Buffer name are made only when a rule asks (a
 * refusal, a skip), not for every entry of a large tree.
 */
export class WalkedEntry implements EntryView {
  /** What lstat and readdir were given. */
  readonly fsPath: FsPath;
  readonly fsName: FsPath;
  readonly kind: EntryKind;
  readonly st: Stats;
  readonly depth: number;
  /** On another filesystem than the root (a mount point): never entered. */
  readonly otherDevice: boolean;
  constructor(fsPath: FsPath, fsName: FsPath, kind: EntryKind, st: Stats, depth: number, otherDevice: boolean) {
    this.fsPath = fsPath;
    this.fsName = fsName;
    this.kind = kind;
    this.st = st;
    this.depth = depth;
    this.otherDevice = otherDevice;
  }
  get path(): string {
    return printablePath(this.fsPath);
  }
  get name(): Buffer {
    return typeof this.fsName === "string" ? Buffer.from(this.fsName) : this.fsName;
  }
}

/** Something that could not be read: the walk goes on and the check reports it. */
export interface WalkProblem {
  path: string;
  syscall: string;
  code: string;
}

/** The problems as the checks list them: "lstat /state/x: EACCES". */
export function problemLines(problems: readonly WalkProblem[]): string[] {
  return problems.map((p) => `${p.syscall} ${p.path}: ${p.code}`);
}

/** Returns the context for the entry's children to descend into it, or undefined to leave it. */
export type Visit<C> = (entry: WalkedEntry, context: C) => C | undefined;

const SLASH = Buffer.from("/");

function joinPath(dir: FsPath, name: FsPath): FsPath {
  if (typeof dir === "string" && typeof name === "string") return dir === "/" ? `/${name}` : `${dir}/${name}`;
  const head = typeof dir === "string" ? Buffer.from(dir) : dir;
  const tail = typeof name === "string" ? Buffer.from(name) : name;
  return dir === "/" ? Buffer.concat([SLASH, tail]) : Buffer.concat([head, SLASH, tail]);
}

/** Names in a directory; Buffers when any name did not decode as UTF-8. */
function readNames(path: FsPath, problems: WalkProblem[]): FsPath[] | undefined {
  try {
    if (typeof path !== "string") return readdirSync(path, { encoding: "buffer" });
    const names = readdirSync(path);
    // readdir decodes invalid UTF-8 as U+FFFD; those names would not lstat.
    return names.some((name) => name.includes("\ufffd")) ? readdirSync(path, { encoding: "buffer" }) : names;
  } catch (error) {
    const why = codeOf(error);
    if (why !== "ENOENT") problems.push({ path: printablePath(path), syscall: "readdir", code: why });
    return undefined;
  }
}

/** Walks `root` (visited at depth 0) and returns how many entries were visited. */
export function walkReadOnly<C>(root: string, context: C, visit: Visit<C>, problems: WalkProblem[]): number {
  let rootSt: Stats;
  try {
    rootSt = lstatSync(root);
  } catch (error) {
    problems.push({ path: root, syscall: "lstat", code: codeOf(error) });
    return 0;
  }
  const first = visit(new WalkedEntry(root, root, kindOf(rootSt), rootSt, 0, false), context);
  if (first === undefined || !rootSt.isDirectory()) return 1;
  let visited = 1;
  const stack: Array<{ path: FsPath; depth: number; context: C }> = [{ path: root, depth: 0, context: first }];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    const names = readNames(dir.path, problems);
    if (names === undefined) continue;
    for (const name of names) {
      const fsPath = joinPath(dir.path, name);
      let st: Stats | undefined;
      try {
        st = lstatSync(fsPath, { throwIfNoEntry: false });
      } catch (error) {
        problems.push({ path: printablePath(fsPath), syscall: "lstat", code: codeOf(error) });
        continue;
      }
      if (st === undefined) continue; // removed since readdir
      visited++;
      const otherDevice = st.dev !== rootSt.dev;
      const next = visit(new WalkedEntry(fsPath, name, kindOf(st), st, dir.depth + 1, otherDevice), dir.context);
      if (next === undefined || !st.isDirectory() || otherDevice) continue;
      stack.push({ path: fsPath, depth: dir.depth + 1, context: next });
    }
  }
  return visited;
}
