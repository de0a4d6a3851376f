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
 * kernel stay short while the ones shown stay whole (to SHOWN_PATH_BYTES). Such an fd is closed
 * once nothing left to read lies below it: a deep chain holds one per
 * ANCHOR_AFTER bytes of its path, not one per level.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, type Stats } from "node:fs";
import { codeOf, printablePath } from "../report.ts";
import { type EntryKind, kindOf } from "../os/file-kind.ts";
import { DEPTH_LIMIT, type EntryView, SHOWN_PATH_BYTES } from "../layout/rules.ts";

export type FsPath = string | Buffer;

/** Where an entry is: its name in the directory `up` (undefined: the root, whose name is its path). */
export interface Place {
  readonly up: Place | undefined;
  readonly name: FsPath;
}

function isFsPath(where: Place | FsPath): where is FsPath {
  return typeof where === "string" || Buffer.isBuffer(where);
}

/** The display path of a place, cut after SHOWN_PATH_BYTES bytes (then ending in "..."). */
export function shownPath(place: Place): string {
  const names: FsPath[] = [];
  for (let at: Place | undefined = place; at !== undefined; at = at.up) names.push(at.name);
  names.reverse();
  const pieces: FsPath[] = [names[0]!];
  let size = names[0]!.length;
  for (let i = 1; i < names.length && size <= SHOWN_PATH_BYTES; i++) {
    // Every name follows a slash, but the root "/" is one already.
    if (!(i === 1 && names[0] === "/")) pieces.push("/");
    pieces.push(names[i]!);
    size += (i === 1 && names[0] === "/" ? 0 : 1) + names[i]!.length;
  }
  const path = pieces.every((piece) => typeof piece === "string") ? pieces.join("") : Buffer.concat(pieces.map((piece) => (typeof piece === "string" ? Buffer.from(piece) : piece)));
  return path.length <= SHOWN_PATH_BYTES ? printablePath(path) : `${printablePath(path.slice(0, SHOWN_PATH_BYTES))}...`;
}

/**
 * One entry as the walk met it, and as the layout rules see it (EntryView):
 * its display path and Buffer name are made only when a rule asks (a
 * refusal, a skip), not for every entry of a large tree.
 */
export class WalkedEntry implements EntryView {
  /** Where it is (its path built when shown), or its whole path. */
  readonly where: Place | FsPath;
  readonly fsName: FsPath;
  readonly kind: EntryKind;
  readonly st: Stats;
  readonly depth: number;
  /** On another filesystem than the root (a mount point): never entered. */
  readonly otherDevice: boolean;
  constructor(where: Place | FsPath, fsName: FsPath, kind: EntryKind, st: Stats, depth: number, otherDevice: boolean) {
    this.where = where;
    this.fsName = fsName;
    this.kind = kind;
    this.st = st;
    this.depth = depth;
    this.otherDevice = otherDevice;
  }
  get path(): string {
    return isFsPath(this.where) ? printablePath(this.where) : shownPath(this.where);
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

/** A directory waiting to be read: `place` says where it is, `at` is what the kernel is given (below an anchor: /proc/self/fd/N/...). */
interface Pending<C> {
  place: Place;
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
    if (why !== "ENOENT") problems.push({ path: shownPath(dir.place), syscall: "open", code: why });
    return undefined;
  }
  const st = fstatSync(fd);
  if (st.dev !== dir.st.dev || st.ino !== dir.st.ino) {
    closeSync(fd);
    problems.push({ path: shownPath(dir.place), syscall: "open", code: "changed since lstat" });
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
function readNames(path: FsPath, problems: WalkProblem[], shown: () => string = () => printablePath(path)): FsPath[] | undefined {
  try {
    if (typeof path !== "string") return readdirSync(path, { encoding: "buffer" });
    const names = readdirSync(path);
    // readdir decodes invalid UTF-8 as U+FFFD; those names would not lstat.
    return names.some((name) => name.includes("\ufffd")) ? readdirSync(path, { encoding: "buffer" }) : names;
  } catch (error) {
    const why = codeOf(error);
    if (why !== "ENOENT") problems.push({ path: shown(), syscall: "readdir", code: why });
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
  const stack: Pending<C>[] = [{ place: { up: undefined, name: root }, at: root, st: rootSt, depth: 0, context: first, anchor: undefined }];
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
  const names = readNames(from.at, problems, () => shownPath(dir.place));
  if (names === undefined) return 0;
  let visited = 0;
  const anchor = from.anchor ?? dir.anchor;
  for (const name of names) {
    const at = joinPath(from.at, name);
    const place: Place = { up: dir.place, name };
    let st: Stats | undefined;
    try {
      st = lstatSync(at, { throwIfNoEntry: false });
    } catch (error) {
      problems.push({ path: shownPath(place), syscall: "lstat", code: codeOf(error) });
      continue;
    }
    if (st === undefined) continue; // removed since readdir
    visited++;
    const otherDevice = st.dev !== rootDev;
    const next = visit(new WalkedEntry(place, name, kindOf(st), st, dir.depth + 1, otherDevice), dir.context);
    if (next === undefined || !st.isDirectory() || otherDevice || dir.depth + 1 >= DEPTH_LIMIT) continue;
    if (anchor !== undefined) anchor.refs++;
    stack.push({ place, at, st, depth: dir.depth + 1, context: next, anchor });
  }
  return visited;
}
