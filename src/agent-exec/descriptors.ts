/*
 * File descriptors: only 0, 1, 2 and the ones named with --keep-fd reach the
 * agent (an fd the service leaked into the shim would otherwise cross the
 * uid). Node has no close_range(2) and no fcntl(2): the shim lists
 * /proc/self/fd once, reads the flags of an fd from /proc/self/fdinfo (proc(5))
 * and closes every fd that execve(2) would not close, O_CLOEXEC unset, above 2
 * and not kept.
 *
 * Node's own fds (the event loops of its threads) must stay open: they are
 * all close-on-exec, and closing one that another thread polls makes libuv
 * abort the process ("io_uring_enter(getevents): Bad file descriptor") before
 * the exec, as it did here. Only fds from 16 up are read: at start-up Node
 * marks fds 0-15, and any inherited run above them, close-on-exec (libuv's
 * uv_disable_stdio_inheritance), and it opens its own fds close-on-exec, so
 * below 16 nothing can cross the exec but what the shim hands on
 * (test/unit/agent-exec/descriptors.test.ts shows both). Reading an fd's
 * fdinfo costs an open, a read and a close; Node holds about 18 fds here.
 */
import { closeSync, openSync, readdirSync, readSync } from "node:fs";
import { EXIT, STARTED_FD_VARIABLE } from "../constants.ts";
import { osCall, Refusal } from "../report.ts";

const O_CLOEXEC = 0o2000000;
/** Below this, every fd is close-on-exec by the time any JavaScript runs (see above). */
export const FIRST_INHERITABLE_FD = 16;

/**
 * The "flags:" line of /proc/<pid>/fdinfo/<fd>: blanks, then octal open(2) flags. Pure. No regular
 * expression: V8 compiles one on its first use and again on its second (0.1 ms of every spawn).
 */
export function parseFdinfoFlags(text: string): number | undefined {
  const digits = text.split("\n").find((line) => line.startsWith("flags:"))?.slice("flags:".length).trimStart();
  return digits && [...digits].every((digit) => digit >= "0" && digit <= "7") ? Number.parseInt(digits, 8) : undefined;
}

/** pos: and flags: are the first two lines of fdinfo: a short read holds them. */
const fdinfoHead = Buffer.alloc(128);

/** The open(2) flags of one of this process's fds, or undefined when it is not open. */
export function readDescriptorFlags(fd: number): number | undefined {
  let info: number;
  try {
    info = openSync(`/proc/self/fdinfo/${fd}`, "r");
  } catch {
    return undefined; // not open (the fd readdir itself used is one: closed by the time it returns)
  }
  try {
    return parseFdinfoFlags(fdinfoHead.toString("latin1", 0, readSync(info, fdinfoHead, 0, fdinfoHead.length, 0)));
  } finally {
    closeSync(info);
  }
}

/** The numbers /proc/self/fd lists, in order. */
export function listDescriptors(): number[] {
  return osCall("readdir", "/proc/self/fd", () => readdirSync("/proc/self/fd")).map(Number).sort((a, b) => a - b);
}

/** The fds whose close-on-exec flag decides whether they cross the exec: from 16 up and not kept. Pure. */
export function inheritableCandidates(open: readonly number[], keep: readonly number[]): number[] {
  return open.filter((fd) => fd >= FIRST_INHERITABLE_FD && !keep.includes(fd));
}

/**
 * Refuses an fd handed to the shim (`what`: "--keep-fd N" or the started
 * marker's "CLANKIE_STARTED_FD=N", `thing`: what the fix names) that is not
 * open, or that is close-on-exec and so would not cross the exec: a kept fd
 * would not reach the agent, and without its marker the service would take
 * every start for a refusal.
 */
export function checkHandedDescriptor(fd: number, what: string, thing: string): void {
  const flags = readDescriptorFlags(fd);
  if (flags === undefined) throw new Refusal(EXIT.usage, `${what}: fd ${fd} is not open`, `open ${thing} in the shim's parent before the spawn`);
  if ((flags & O_CLOEXEC) !== 0) {
    throw new Refusal(EXIT.usage, `${what}: fd ${fd} is close-on-exec here (Node 24 marks fds 0-15 so at start-up, and every open fd after them up to the first that is not open)`, `hand ${thing} to the shim as fd 17 or higher, with fd 16 not open`);
  }
}

/**
 * Closes every fd that would cross the exec but 0-2, `keep` and the started
 * `marker` (CLANKIE_STARTED_FD), after checking each of those once (the
 * marker first); returns the numbers it closed.
 */
export function closeStrayDescriptors(keep: readonly number[], marker?: number): number[] {
  if (marker !== undefined) checkHandedDescriptor(marker, `${STARTED_FD_VARIABLE}=${marker}`, "the marker pipe");
  for (const fd of keep) checkHandedDescriptor(fd, `--keep-fd ${fd}`, "the fd");
  const handed = marker === undefined ? keep : [...keep, marker];
  const closed: number[] = [];
  for (const fd of inheritableCandidates(listDescriptors(), handed)) {
    const flags = readDescriptorFlags(fd);
    if (flags === undefined || (flags & O_CLOEXEC) !== 0) continue;
    osCall("close", `fd ${fd}`, () => closeSync(fd));
    closed.push(fd);
  }
  return closed;
}
