/*
 * A read-only walk: readdir(3) and lstat(2), and open(2) of a directory
 * whose path grew long (below). It never opens a file, never follows a
 * symlink it saw (entries are lstat'ed, and only what lstat calls a
 * directory is entered), and cannot change anything: this module imports no
 * call that writes. A directory swapped by a concurrent
 * writer between lstat and readdir can make the audit describe the moved
 * tree; only the service and root can write the trees it walks.
 *
 * Paths are strings while names are valid UTF-8 (the fast path) and Buffers
 * below a directory whose names are not, so every name is reachable.
 * Iterative, so depth is bounded by memory, not the call stack; and not by
 * PATH_MAX either: once a directory's path is over ANCHOR_AFTER bytes, the
 * directory is opened (O_DIRECTORY|O_NOFOLLOW, and it must be the inode
 * lstat saw) and looked into as /proc/self/fd/N, so the paths handed to the
 * kernel stay short while the ones shown stay whole. Such an fd is closed
 * once nothing left to read lies below it: a deep chain holds one per
 * ANCHOR_AFTER bytes of its path, not one per level.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, type Stats } from "node:fs";
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
  /** The whole path, for display. */
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

/** A path handed to lstat or readdir stays under this many bytes plus one name (PATH_MAX is 4096). */
const ANCHOR_AFTER = 2048;

/** An open directory that stands for a long path; closed when the last directory below it waiting to be read has been read. */
interface Anchor {
  fd: number;
  refs: number;
}

function release(anchor: Anchor | undefined): void {
  if (anchor !== undefined && --anchor.refs === 0) closeSync(anchor.fd);
}

function byteLength(path: FsPath): number {
  return typeof path === "string" ? Buffer.byteLength(path) : path.length;
}

/** A directory waiting to be read: `shown` is its whole path, `at` what the kernel is given (below an anchor: /proc/self/fd/N/...). */
interface Pending<C> {
  shown: FsPath;
  at: FsPath;
  st: Stats;
  depth: number;
  context: C;
  anchor: Anchor | undefined;
}

/**
 * Where to read `dir` from: its path, or, once that is long, an anchor opened
 * on it (the directory lstat saw, never a symlink: O_NOFOLLOW, and the
 * inode must match). Undefined (a problem recorded) if it cannot be opened.
 */
function anchorIfLong<C>(dir: Pending<C>, problems: WalkProblem[]): { at: FsPath; anchor: Anchor | undefined } | undefined {
  if (byteLength(dir.at) <= ANCHOR_AFTER) return { at: dir.at, anchor: undefined };
  let fd: number;
  try {
    fd = openSync(dir.at, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const why = codeOf(error);
    if (why !== "ENOENT") problems.push({ path: printablePath(dir.shown), syscall: "open", code: why });
    return undefined;
  }
  const st = fstatSync(fd);
  if (st.dev !== dir.st.dev || st.ino !== dir.st.ino) {
    closeSync(fd);
    problems.push({ path: printablePath(dir.shown), syscall: "open", code: "changed since lstat" });
    return undefined;
  }
  return { at: `/proc/self/fd/${fd}`, anchor: { fd, refs: 1 } };
}

function joinPath(dir: FsPath, name: FsPath): FsPath {
  if (typeof dir === "string" && typeof name === "string") return dir === "/" ? `/${name}` : `${dir}/${name}`;
  const head = typeof dir === "string" ? Buffer.from(dir) : dir;
  const tail = typeof name === "string" ? Buffer.from(name) : name;
  return dir === "/" ? Buffer.concat([SLASH, tail]) : Buffer.concat([head, SLASH, tail]);
}

/** Names in a directory; Buffers when any name did not decode as UTF-8. `shown`: the path problems name. */
function readNames(path: FsPath, problems: WalkProblem[], shown: FsPath = path): FsPath[] | undefined {
  try {
    if (typeof path !== "string") return readdirSync(path, { encoding: "buffer" });
    const names = readdirSync(path);
    // readdir decodes invalid UTF-8 as U+FFFD; those names would not lstat.
    return names.some((name) => name.includes("\ufffd")) ? readdirSync(path, { encoding: "buffer" }) : names;
  } catch (error) {
    const why = codeOf(error);
    if (why !== "ENOENT") problems.push({ path: printablePath(shown), syscall: "readdir", code: why });
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
  const stack: Pending<C>[] = [{ shown: root, at: root, st: rootSt, depth: 0, context: first, anchor: undefined }];
  try {
    while (stack.length > 0) {
      const dir = stack.pop()!;
      try {
        const from = anchorIfLong(dir, problems);
        if (from === undefined) continue;
        try {
          visited += readDirectory(dir, from, rootSt.dev, visit, problems, stack);
        } finally {
          release(from.anchor);
        }
      } finally {
        release(dir.anchor);
      }
    }
  } finally {
    // A throw from a visit: whatever waits still holds its anchor.
    for (const dir of stack) release(dir.anchor);
  }
  return visited;
}

/** Reads one directory from `from`, visits its entries, and stacks the directories to enter; returns how many entries it visited. */
function readDirectory<C>(dir: Pending<C>, from: { at: FsPath; anchor: Anchor | undefined }, rootDev: number, visit: Visit<C>, problems: WalkProblem[], stack: Pending<C>[]): number {
  const names = readNames(from.at, problems, dir.shown);
  if (names === undefined) return 0;
  let visited = 0;
  const anchor = from.anchor ?? dir.anchor;
  for (const name of names) {
    const at = joinPath(from.at, name);
    const shown = from.anchor === undefined && dir.shown === dir.at ? at : joinPath(dir.shown, name);
    let st: Stats | undefined;
    try {
      st = lstatSync(at, { throwIfNoEntry: false });
    } catch (error) {
      problems.push({ path: printablePath(shown), syscall: "lstat", code: codeOf(error) });
      continue;
    }
    if (st === undefined) continue; // removed since readdir
    visited++;
    const otherDevice = st.dev !== rootDev;
    const next = visit(new WalkedEntry(shown, name, kindOf(st), st, dir.depth + 1, otherDevice), dir.context);
    if (next === undefined || !st.isDirectory() || otherDevice) continue;
    if (anchor !== undefined) anchor.refs++;
    stack.push({ shown, at, st, depth: dir.depth + 1, context: next, anchor });
  }
  return visited;
}
