/*
 * File descriptors: only 0, 1, 2 and the ones named with
 * --keep-fd reach the agent. Node cannot fcntl(2); it can read each fd's
 * flags from /proc/self/fdinfo (proc(5)) and close(2) any fd. An fd with
 * O_CLOEXEC is closed by execve(2) anyway (Node's own are all such); any other
 * that was not asked for is closed here, before the exec.
 */
import { closeSync, readdirSync, readFileSync } from "node:fs";
import { EXIT } from "../constants.ts";
import { osFailure, Refusal } from "../report.ts";

const O_CLOEXEC = 0o2000000;

export interface OpenDescriptor {
  fd: number;
  cloexec: boolean;
}

/** The "flags:" field of /proc/<pid>/fdinfo/<fd> is octal open(2) flags. Pure. */
export function parseFdinfoFlags(text: string): number | undefined {
  const match = /^flags:\s*([0-7]+)$/m.exec(text);
  return match ? Number.parseInt(match[1]!, 8) : undefined;
}

export function listDescriptors(): OpenDescriptor[] {
  let names: string[];
  try {
    names = readdirSync("/proc/self/fd");
  } catch (error) {
    throw osFailure("readdir", "/proc/self/fd", error);
  }
  const result: OpenDescriptor[] = [];
  for (const name of names) {
    const fd = Number(name);
    let flags: number | undefined;
    try {
      flags = parseFdinfoFlags(readFileSync(`/proc/self/fdinfo/${fd}`, "latin1"));
    } catch {
      continue; // the fd readdir itself used, closed since
    }
    if (flags === undefined) continue;
    result.push({ fd, cloexec: (flags & O_CLOEXEC) !== 0 });
  }
  return result.sort((a, b) => a.fd - b.fd);
}

/** The fds that would survive execve(2) beyond 0-2 and `keep`. Pure. */
export function strayDescriptors(open: readonly OpenDescriptor[], keep: readonly number[]): number[] {
  return open.filter((d) => d.fd > 2 && !d.cloexec && !keep.includes(d.fd)).map((d) => d.fd);
}

export function closeStrayDescriptors(keep: readonly number[]): number[] {
  const open = listDescriptors();
  for (const fd of keep) {
    const found = open.find((d) => d.fd === fd);
    if (!found) throw new Refusal(EXIT.usage, `--keep-fd ${fd}: fd ${fd} is not open`, "open it in the shim's parent before the spawn");
    if (found.cloexec) {
      throw new Refusal(EXIT.usage, `--keep-fd ${fd}: fd ${fd} is close-on-exec here (Node 24 marks inherited fds 3-16 so at start-up)`, "hand the fd to the shim as fd 17 or higher");
    }
  }
  const stray = strayDescriptors(open, keep);
  for (const fd of stray) {
    try {
      closeSync(fd);
    } catch (error) {
      throw osFailure("close", `fd ${fd}`, error);
    }
  }
  return stray;
}
