/*
 * A walk over a tree an attacker may have prepared, run with root's powers.
 *
 * Node has no openat(2), fchownat(2) or O_PATH constants, so every lookup is
 * made relative to an open directory: the walk moves its working directory
 * onto each directory's fd (chdir("/proc/self/fd/<dirfd>"): proc(5), the magic
 * link resolves to the directory the fd holds, wherever it has moved) and
 * looks up bare names there, as openat(dirfd, name) would. The working
 * directory is restored afterwards. That gives:
 *
 *   - no symlink is ever followed: entries are lstat'ed, directories are
 *     opened with O_NOFOLLOW|O_DIRECTORY, everything else with
 *     O_PATH|O_NOFOLLOW, and the change is made on that fd's inode;
 *   - a name swapped between the lstat and the change is caught: the opened
 *     inode must have the lstat'ed device and inode number;
 *   - nothing but a directory is opened for reading (O_PATH does not open
 *     the file, open(2)): no FIFO blocks the walk and no device is touched;
 *   - depth costs no fd per level and is bounded by neither RLIMIT_NOFILE
 *     nor PATH_MAX: paths stay short, and the stack holds at most
 *     OPEN_LEVELS directory fds (the deepest; a directory stream hands out
 *     its subdirectories only once it is closed). A directory whose fd was
 *     closed is opened again on the way back up, as ".." of the child just
 *     finished (O_DIRECTORY|O_NOFOLLOW), and must be the inode first opened
 *     there, or the start is refused as changed (a child moved away
 *     meanwhile has another ".."). Nothing is walked below DEPTH_LIMIT
 *     levels (src/layout/rules.ts), so memory stays bounded too: a deeper
 *     planted chain is a warning, not a failed start;
 *   - names are bytes, never decoded as UTF-8: read as latin1 strings (one
 *     char per byte, lossless, and cheaper than a Buffer per name) and handed
 *     to a system call as the same bytes (fsName): non-UTF-8 names work;
 *   - a directory's listing is read at once (readdir), unless the directory
 *     is over LISTING_AT_ONCE bytes, which is streamed (opendir): memory
 *     stays bounded in a directory an attacker filled;
 *   - other filesystems (st_dev differs, or a mount point in mountinfo) are
 *     never entered or changed; the rules are asked about a mount point only
 *     so that one they prune (left to someone else, as /state/agent) is not
 *     reported as skipped.
 *
 * The walk is idempotent: every change moves an entry toward its rule, so a
 * walk killed midway is completed by the next one.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  chmodSync,
  chownSync,
  fstatSync,
  lstatSync,
  openSync,
  opendirSync,
  readFileSync,
  readdirSync,
  type Dir,
  type Dirent,
  type Stats,
} from "node:fs";
import { EXIT } from "../constants.ts";
import { osCall, osFailure, printablePath, Refusal } from "../report.ts";
import { parseMountinfo } from "../os/mountinfo.ts";
import { type EntryKind, kindOf } from "../os/file-kind.ts";
import { type Decision, DEPTH_LIMIT, type EntryView, type Rules } from "../layout/rules.ts";

/** open(2) O_PATH on x86_64 and aarch64 (asm-generic/fcntl.h); Node does not export it. */
const O_PATH = 0o10000000;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const PATH_FLAGS = O_PATH | constants.O_NOFOLLOW;

export interface WalkStats {
  checked: number;
  fixed: number;
  skipped: number;
  /** A few of the skipped entries, for the warning line. */
  skippedExamples: string[];
}

export function newWalkStats(): WalkStats {
  return { checked: 0, fixed: 0, skipped: 0, skippedExamples: [] };
}

const SKIPPED_EXAMPLES = 5;

/** An fd on the working directory, to come back to after the walk (undefined if it is gone). */
function saveWorkingDirectory(): number | undefined {
  try {
    return openSync(".", constants.O_RDONLY | constants.O_DIRECTORY);
  } catch {
    return undefined;
  }
}

function restoreWorkingDirectory(home: number | undefined): void {
  try {
    process.chdir(home === undefined ? "/" : `/proc/self/fd/${home}`);
  } finally {
    if (home !== undefined) closeSync(home);
  }
}

/**
 * Mount points strictly below `root`, as display paths. A bind mount of the
 * same filesystem has the same st_dev, so st_dev alone cannot tell a mount
 * point; /proc/self/mountinfo can.
 */
export function mountPointsBelow(root: string): Set<string> {
  const text = osCall("read", "/proc/self/mountinfo", () => readFileSync("/proc/self/mountinfo", "latin1"));
  const prefix = root.endsWith("/") ? root : `${root}/`;
  const points = new Set<string>();
  for (const { point } of parseMountinfo(text)) {
    if (point.startsWith(prefix)) points.add(printablePath(Buffer.from(point, "latin1")));
  }
  return points;
}

function sameInode(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

function changedUnderUs(path: string): Refusal {
  return new Refusal(EXIT.dataRefused, `${path} changed while it was being taken over (another process is writing this tree)`, "stop every other container that mounts this volume, then start again");
}

/** Where an error happened: a display path, read only when one is reported. */
interface Located {
  readonly path: string;
}

/**
 * Applies the wanted owner and mode (undefined: a symlink's, never changed)
 * to an open fd whose inode was checked. An O_PATH fd (`byPath`: symlinks,
 * FIFOs, sockets; fchown and fchmod refuse it) is changed through its magic
 * link, which chown(2) follows to what the fd holds: a symlink itself, not
 * its target.
 */
export function applyByFd(fd: number, st: Stats, uid: number, gid: number, mode: number | undefined, where: Located, byPath = false): boolean {
  const link = `/proc/self/fd/${fd}`;
  let changed = false;
  if (st.uid !== uid || st.gid !== gid) {
    osCall(byPath ? "chown" : "fchown", where.path, () => (byPath ? chownSync(link, uid, gid) : fchownSync(fd, uid, gid)));
    changed = true;
  }
  if (mode === undefined) return changed;
  // chown(2) clears set-user-ID and set-group-ID bits of non-directories:
  // re-read the mode when there were any.
  const current = changed && (st.mode & 0o6000) !== 0 ? fstatSync(fd).mode & 0o7777 : st.mode & 0o7777;
  if (current !== mode) {
    osCall(byPath ? "chmod" : "fchmod", where.path, () => (byPath ? chmodSync(link, mode) : fchmodSync(fd, mode)));
    changed = true;
  }
  return changed;
}

/** One walk: what every entry is judged by and counted in. */
interface Walk<C> {
  rules: Rules<C>;
  stats: WalkStats;
  rootDev: number;
  mounts: ReadonlySet<string>;
  /** The directories that hold a mount point directly. */
  mountParents: ReadonlySet<string>;
  /** The longest of them: a longer path is none of them, and is not hashed (a Set lookup flattens a path built level by level, a copy per level). */
  longestMountParent: number;
}

/** Directories up to this st_size are listed at once; larger ones are streamed (about 50,000 names on tmpfs, 20 bytes per entry). */
const LISTING_AT_ONCE = 1 << 20;

/** A directory's entries: the whole listing, or a stream for a large directory. */
interface Listing {
  next(): Dirent | null;
  close(): void;
}

/**
 * Directory fds held at most on the stack (the deepest levels); one a level
 * made a planted 20,000-level chain fail the start with EMFILE, and a higher
 * RLIMIT_NOFILE only needs a deeper chain. Trees shallower than this never
 * reopen a directory.
 */
const OPEN_LEVELS = 32;

interface Frame<C> {
  /** The directory's fd; -1 once closed to keep open fds bounded (see OPEN_LEVELS), reopened through ".." of its child. */
  fd: number;
  /** What the directory is: a reopened fd must be this inode. */
  readonly st: Stats;
  dir: Listing;
  path: string;
  depth: number;
  context: C;
  /** Whether a mount point lies directly in this directory (then each entry's path is checked against them). */
  holdsMounts: boolean;
}

/**
 * One entry as the rules see it. Its display path is made only when asked
 * for (a refusal, a skip, a mount check): escaping every name of a large tree
 * cost a sixth of a restart.
 */
class WalkEntry implements EntryView {
  readonly kind: EntryKind;
  readonly st: Stats;
  readonly depth: number;
  readonly #parent: string;
  readonly #name: string;
  #path: string | undefined;
  constructor(parent: string, name: string, kind: EntryKind, st: Stats, depth: number) {
    this.#parent = parent;
    this.#name = name;
    this.kind = kind;
    this.st = st;
    this.depth = depth;
  }
  /** The name's bytes (the rules read it at the top of /state only). */
  get name(): Buffer {
    return Buffer.from(this.#name, "latin1");
  }
  get path(): string {
    this.#path ??= childPath(this.#parent, this.#name);
    return this.#path;
  }
}

/** A latin1 name as a system call must see it: the same bytes (Node encodes a path string as UTF-8, so any byte over 0x7f goes as a Buffer). */
function fsName(name: string): string | Buffer {
  // eslint-disable-next-line no-control-regex
  return /[^\x00-\x7f]/.test(name) ? Buffer.from(name, "latin1") : name;
}

function childPath(parent: string, name: string): string {
  return `${parent === "/" ? "" : parent}/${printablePath(name)}`;
}

/** The display path of the directory holding `path` ("/a/b" -> "/a"). */
function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash <= 0 ? "/" : path.slice(0, slash);
}

/**
 * Opens `name` (absolute, or a bare name in the working directory) as the
 * directory lstat saw (`expect`), never through a symlink; `changed` is the
 * refusal when it is not that directory any more.
 */
export function openDirectoryAt(name: Buffer | string, path: string, expect: Stats, changed: (path: string) => Refusal = changedUnderUs): { fd: number; st: Stats } {
  let fd: number;
  try {
    fd = openSync(name, DIR_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "ENOTDIR") throw changed(path);
    throw osFailure("open", path, error);
  }
  const st = fstatSync(fd);
  if (!sameInode(st, expect)) {
    closeSync(fd);
    throw changed(path);
  }
  return { fd, st };
}

/**
 * A directory stream hands out the names readdir(3) reports as regular
 * files or symlinks as it reads them, and the rest (directories, and any of
 * unknown type) only once it has been read to the end and closed: no stream
 * (and its fd) stays open below a descent, however deep. What it keeps in
 * memory meanwhile is a name per subdirectory (per entry, where the
 * filesystem reports no d_type).
 */
function streamedListing(dir: Dir): Listing {
  const later: Dirent[] = [];
  let open = true;
  const close = (): void => {
    if (!open) return;
    open = false;
    dir.closeSync();
  };
  return {
    next: () => {
      while (open) {
        const entry = dir.readSync();
        if (entry === null) close();
        else if (entry.isFile() || entry.isSymbolicLink()) return entry;
        else later.push(entry);
      }
      return later.pop() ?? null;
    },
    close,
  };
}

/** The entries of the directory open at `fd` (st: its fstat), names as latin1 strings. */
function openDir(fd: number, st: Stats, path: string): Listing {
  if (st.size <= LISTING_AT_ONCE) {
    try {
      const entries = readdirSync(`/proc/self/fd/${fd}`, { encoding: "latin1", withFileTypes: true });
      let index = 0;
      return { next: () => entries[index++] ?? null, close: () => undefined };
    } catch {
      // Where readdir reports no d_type, readdirSync lstats each name by a
      // path it re-encodes as UTF-8 and can fail on a name that is not:
      // the stream below asks nothing more than readdir(3) says.
    }
  }
  return streamedListing(osCall("readdir", path, () => opendirSync(`/proc/self/fd/${fd}`, { encoding: "latin1", bufferSize: 128 })));
}

/**
 * Bounds the fds the stack holds: the frame OPEN_LEVELS below the top just
 * pushed closes its fd (the stack's bottom included: /state's own fd is
 * reopened like any other).
 */
function closeDeepAncestor<C>(stack: Frame<C>[]): void {
  const frame = stack[stack.length - 1 - OPEN_LEVELS];
  if (frame === undefined || frame.fd < 0) return;
  closeSync(frame.fd);
  frame.fd = -1;
}

/**
 * Opens `parent` again, as ".." of the directory that is the working
 * directory (its child, just finished). The inode must be the one first
 * opened there: a child moved elsewhere meanwhile has another "..".
 */
function reopenParent<C>(parent: Frame<C>): void {
  parent.fd = openDirectoryAt("..", parent.path, parent.st).fd;
}

/** The first characters of a long display path (a chain thousands of levels deep is kilobytes of it). */
export function shortened(path: string): string {
  return path.length > 120 ? `${path.slice(0, 120)}...` : path;
}

/** A directory DEPTH_LIMIT levels down: judged and changed, nothing below it walked; counted as a skip for the warning. */
function leftBelowLimit(stats: WalkStats, path: string): void {
  stats.skipped++;
  if (stats.skippedExamples.length < SKIPPED_EXAMPLES) stats.skippedExamples.push(`${shortened(path)} (${DEPTH_LIMIT} levels deep: nothing below it was walked)`);
}

function decide<C>(rules: Rules<C>, view: EntryView, context: C, stats: WalkStats): Decision<C> {
  stats.checked++;
  const decision = rules(view, context);
  if (decision.action === "skip") {
    stats.skipped++;
    if (stats.skippedExamples.length < SKIPPED_EXAMPLES) stats.skippedExamples.push(`${view.path} (${decision.reason})`);
  }
  return decision;
}

/**
 * Walks `root` (an absolute path whose every component is trusted: a mount
 * point such as /state). The root itself is passed to the rules at depth 0.
 */
export function walkTree<C>(root: string, rules: Rules<C>, context: C, stats: WalkStats = newWalkStats()): WalkStats {
  const mounts = mountPointsBelow(root);
  const mountParents = new Set([...mounts].map(parentOf));
  // The caller has checked that root is a directory (shareWorkspace): anything else there now is a change.
  const top = openDirectoryAt(root, root, osCall("lstat", root, () => lstatSync(root)));
  const rootDecision = decide(rules, { path: root, name: Buffer.from(root), kind: "directory", st: top.st, depth: 0 }, context, stats);
  if (rootDecision.action === "fix") fixByFd(top.fd, top.st, rootDecision, { path: root }, stats);
  if (rootDecision.action !== "fix" || rootDecision.descend === undefined) {
    closeSync(top.fd);
    return stats;
  }
  const longestMountParent = Math.max(0, ...[...mountParents].map((path) => path.length));
  const walk: Walk<C> = { rules, stats, rootDev: top.st.dev, mounts, mountParents, longestMountParent };
  const stack: Frame<C>[] = [{ fd: top.fd, st: top.st, dir: openDir(top.fd, top.st, root), path: root, depth: 0, context: rootDecision.descend, holdsMounts: mountParents.has(root) }];
  // Entries are looked up relative to the working directory, moved onto each
  // directory's open fd (chdir through /proc/self/fd/N follows the fd, not a
  // path): the same safety as a lookup through /proc/self/fd/N/name, without
  // a procfs walk per entry, which cost three quarters of a restart's time.
  const home = saveWorkingDirectory();
  let cwdFd = -1;
  try {
    while (stack.length > 0) {
      const frame = stack[stack.length - 1]!;
      if (cwdFd !== frame.fd) {
        osCall("chdir", frame.path, () => process.chdir(`/proc/self/fd/${frame.fd}`));
        cwdFd = frame.fd;
      }
      const dirent = osCall("readdir", frame.path, () => frame.dir.next());
      if (dirent === null) {
        frame.dir.close();
        stack.pop();
        try {
          // The working directory is still frame's: its ".." is the parent.
          const parent = stack[stack.length - 1];
          if (parent !== undefined && parent.fd < 0) reopenParent(parent);
        } finally {
          closeSync(frame.fd);
          frame.fd = -1;
        }
        cwdFd = -1; // fd numbers are reused: chdir again, whatever the number
        continue;
      }
      const name = dirent.name;
      const child = visitEntry(walk, frame, name);
      if (child) {
        stack.push(child);
        closeDeepAncestor(stack);
      }
    }
  } finally {
    restoreWorkingDirectory(home);
    for (const frame of stack) {
      // Either may be closed already (a refusal between the two): the other must still close.
      for (const close of [() => frame.dir.close(), () => (frame.fd < 0 ? undefined : closeSync(frame.fd))]) {
        try {
          close();
        } catch {
          /* already closed */
        }
      }
    }
  }
  return stats;
}

/** Whether a mount point lies directly in the directory at `path`. */
function mayHoldMounts<C>(walk: Walk<C>, path: string): boolean {
  return path.length <= walk.longestMountParent && walk.mountParents.has(path);
}

/** The owner and mode a fix asks for, given what the entry has: -1 and no mode rule keep the current value. */
function wanted<C>(decision: Extract<Decision<C>, { action: "fix" }>, st: Stats): { uid: number; gid: number; mode: number | undefined } {
  return { uid: decision.uid < 0 ? st.uid : decision.uid, gid: decision.gid < 0 ? st.gid : decision.gid, mode: decision.mode?.(st.mode & 0o7777) };
}

/** Applies a fix to an open fd whose inode was checked (a directory, or a regular file), and counts it. */
function fixByFd<C>(fd: number, st: Stats, decision: Extract<Decision<C>, { action: "fix" }>, where: Located, stats: WalkStats): boolean {
  const want = wanted(decision, st);
  const changed = applyByFd(fd, st, want.uid, want.gid, want.mode ?? st.mode & 0o7777, where);
  if (changed) stats.fixed++;
  return changed;
}

/** An entry on another filesystem (or a mount point): never entered or changed; skipped with a warning. */
function onOtherFilesystem<C>(walk: Walk<C>, frame: Frame<C>, view: WalkEntry): boolean {
  if (view.st.dev === walk.rootDev && !(frame.holdsMounts && walk.mounts.has(view.path))) return false;
  decide(() => ({ action: "skip", reason: "another filesystem is mounted here; it was not entered" }), view, frame.context, walk.stats);
  return true;
}

function visitEntry<C>(walk: Walk<C>, frame: Frame<C>, name: string): Frame<C> | undefined {
  // The working directory is frame's directory (walkTree keeps it so): a bare
  // name is looked up inside it, as openat(frame.fd, name) would.
  let st: Stats;
  try {
    st = lstatSync(fsName(name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined; // removed since readdir
    throw osFailure("lstat", childPath(frame.path, name), error);
  }
  const kind = kindOf(st);
  const view = new WalkEntry(frame.path, name, kind, st, frame.depth + 1);
  if (onOtherFilesystem(walk, frame, view)) return undefined;
  const decision = decide(walk.rules, view, frame.context, walk.stats);
  if (decision.action !== "fix") return undefined;

  if (kind === "directory") {
    const path = view.path;
    const opened = openDirectoryAt(fsName(name), path, st);
    try {
      fixByFd(opened.fd, opened.st, decision, view, walk.stats);
    } catch (error) {
      closeSync(opened.fd);
      throw error;
    }
    if (decision.descend === undefined || view.depth >= DEPTH_LIMIT) {
      closeSync(opened.fd);
      if (view.depth >= DEPTH_LIMIT) leftBelowLimit(walk.stats, view.path);
      return undefined;
    }
    return { fd: opened.fd, st: opened.st, dir: openDir(opened.fd, opened.st, path), path, depth: frame.depth + 1, context: decision.descend, holdsMounts: mayHoldMounts(walk, path) };
  }

  const { uid, gid, mode } = wanted(decision, st);
  const needsChange = st.uid !== uid || st.gid !== gid || (mode !== undefined && (st.mode & 0o7777) !== mode);
  if (!needsChange) return undefined;
  // Open only what needs a change, and change the inode we opened, not the name.
  let fd: number;
  try {
    fd = openSync(fsName(name), PATH_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ELOOP") throw changedUnderUs(view.path);
    throw osFailure("open", view.path, error);
  }
  try {
    const opened = fstatSync(fd);
    if (!sameInode(opened, st) || kindOf(opened) !== kind || opened.nlink !== st.nlink) throw changedUnderUs(view.path);
    if (applyByFd(fd, opened, uid, gid, kind === "symlink" ? undefined : (mode ?? opened.mode & 0o7777), view, true)) walk.stats.fixed++;
  } finally {
    closeSync(fd);
  }
  return undefined;
}
