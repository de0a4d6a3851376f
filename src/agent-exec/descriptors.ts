/*
 * File descriptors: only 0, 1, 2 and the ones named with --keep-fd reach the
 * agent (an fd the service leaked into the shim would otherwise cross the
 * uid). Node has no close_range(2) and no fcntl(2). It lists /proc/self/fd
 * once (proc(5)) and closes every fd above 2 that --keep-fd does not name:
 * closefrom(3) semantics. Node's own fds are closed too. They are all
 * close-on-exec, so execve(2) would close them anyway. Closing each costs one
 * close(2), while telling them apart would cost a read of
 * /proc/self/fdinfo for every fd. Only the kept fds are read there: a kept fd
 * that is close-on-exec would not reach the agent, so it is refused.
 *
 * After closeStrayDescriptors the process must exec: the fds of Node's
 * own event loops are gone, and Node aborts (SIGABRT, "libuv:
 * io_uring_enter(getevents): Bad file descriptor") if it goes back to its
 * loop, even to exit. The shim calls it last, after every check that can
 * refuse; only the exec gate runs again, on tools it has just passed.
 */
import { closeSync, readdirSync, readFileSync } from "node:fs";
import { EXIT } from "../constants.ts";
import { osFailure, Refusal } from "../report.ts";

const O_CLOEXEC = 0o2000000;

/** The "flags:" field of /proc/<pid>/fdinfo/<fd> is octal open(2) flags. Pure. */
export function parseFdinfoFlags(text: string): number | undefined {
  const match = /^flags:\s*([0-7]+)$/m.exec(text);
  return match ? Number.parseInt(match[1]!, 8) : undefined;
}

/** The numbers /proc/self/fd lists, including the fd readdir itself used (closed by the time it returns). */
export function listDescriptors(): number[] {
  let names: string[];
  try {
    names = readdirSync("/proc/self/fd");
  } catch (error) {
    throw osFailure("readdir", "/proc/self/fd", error);
  }
  return names.map(Number).sort((a, b) => a - b);
}

/** The fds that must not survive execve(2): above 2 and not in `keep`. Pure. */
export function strayDescriptors(open: readonly number[], keep: readonly number[]): number[] {
  return open.filter((fd) => fd > 2 && !keep.includes(fd));
}

/** Refuses a --keep-fd that is not open, or that is close-on-exec and so would not reach the agent. */
export function checkKeptDescriptors(keep: readonly number[]): void {
  for (const fd of keep) {
    let flags: number | undefined;
    try {
      flags = parseFdinfoFlags(readFileSync(`/proc/self/fdinfo/${fd}`, "latin1"));
    } catch {
      flags = undefined;
    }
    if (flags === undefined) throw new Refusal(EXIT.usage, `--keep-fd ${fd}: fd ${fd} is not open`, "open it in the shim's parent before the spawn");
    if ((flags & O_CLOEXEC) !== 0) {
      throw new Refusal(EXIT.usage, `--keep-fd ${fd}: fd ${fd} is close-on-exec here (Node 24 marks inherited fds 3-16 so at start-up)`, "hand the fd to the shim as fd 17 or higher");
    }
  }
}

/** Closes every fd above 2 that `keep` does not name; returns the numbers it closed. */
export function closeStrayDescriptors(keep: readonly number[]): number[] {
  checkKeptDescriptors(keep);
  const closed: number[] = [];
  for (const fd of strayDescriptors(listDescriptors(), keep)) {
    try {
      closeSync(fd);
      closed.push(fd);
    } catch (error) {
      // EBADF: not open, so it cannot leak (the fd readdir used is one).
      if ((error as NodeJS.ErrnoException).code !== "EBADF") throw osFailure("close", `fd ${fd}`, error);
    }
  }
  return closed;
}
