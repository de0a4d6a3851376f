/*
 * What the kernel says about a container, read on the host: its processes
 * (from its cgroup, by host pid), their /proc status and stat, the cgroup's
 * pids and memory counters, and the OOM killer's lines in the kernel log.
 * Nothing here asks the program under test, or the container, for a report.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { statusFields, type StatusFields } from "../../helpers/sandbox.ts";
import { dockerOk } from "./engine.ts";

export interface Proc {
  /** Host pid. */
  pid: number;
  ppid: number;
  /** The pid inside the container's pid namespace (last NSpid field). */
  nspid: number;
  uid: number;
  name: string;
  cmdline: string;
  status: StatusFields;
  /** tty_nr from /proc/<pid>/stat: non-zero when the process has a controlling terminal. */
  ttyNr: number;
  oomScoreAdj: number;
}

/** The container's first process, by host pid (0 when it is not running). */
export function initPid(container: string): number {
  return Number(dockerOk(["inspect", "-f", "{{.State.Pid}}", container]).trim());
}

export function containerId(container: string): string {
  return dockerOk(["inspect", "-f", "{{.Id}}", container]).trim();
}

/** The directory of a controller's cgroup for this process (cgroup v1, or the v2 unified tree). */
export function cgroupDir(pid: number, controller: "pids" | "memory"): string {
  const lines = readFileSync(`/proc/${pid}/cgroup`, "utf8").trim().split("\n");
  for (const line of lines) {
    const [, controllers, path] = line.split(":", 3) as [string, string, string];
    if (controllers.split(",").includes(controller)) return `/sys/fs/cgroup/${controller}${path}`;
  }
  const unified = lines.find((line) => line.startsWith("0::"));
  if (unified) return `/sys/fs/cgroup${unified.slice(3)}`;
  throw new Error(`no ${controller} cgroup for pid ${pid}: ${lines.join("; ")}`);
}

/** "key value" lines of a cgroup file as numbers. */
export function cgroupCounters(dir: string, file: string): Record<string, number> {
  const counters: Record<string, number> = {};
  for (const line of readFileSync(`${dir}/${file}`, "utf8").trim().split("\n")) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value !== undefined) counters[key] = Number(value);
  }
  return counters;
}

/** The cgroup's count of OOM kills (v1 memory.oom_control, v2 memory.events). */
export function oomKills(memoryDir: string): number {
  for (const file of ["memory.events", "memory.oom_control"]) {
    try {
      const value = cgroupCounters(memoryDir, file).oom_kill;
      if (value !== undefined) return value;
    } catch {
      // the other cgroup version
    }
  }
  throw new Error(`no oom_kill counter in ${memoryDir}`);
}

export function readProc(pid: number): Proc | undefined {
  try {
    const statusText = readFileSync(`/proc/${pid}/status`, "utf8");
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const nspid = /^NSpid:\s+(.*)$/m.exec(statusText)?.[1]?.trim().split(/\s+/).map(Number) ?? [pid];
    return {
      pid,
      ppid: Number(fields[1]),
      nspid: nspid[nspid.length - 1]!,
      uid: Number(/^Uid:\s+(\d+)/m.exec(statusText)![1]),
      name: /^Name:\s+(.*)$/m.exec(statusText)![1]!,
      cmdline: readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0+$/, "").replace(/\0/g, " "),
      status: statusFields(statusText),
      ttyNr: Number(fields[4]),
      oomScoreAdj: Number(readFileSync(`/proc/${pid}/oom_score_adj`, "utf8").trim()),
    };
  } catch {
    return undefined; // exited between the listing and the read
  }
}

/** Every process in the container, read from its pids cgroup. */
export function processesOf(container: string): Proc[] {
  const pid = initPid(container);
  if (pid === 0) return [];
  return pidsInCgroup(cgroupDir(pid, "pids"))
    .map(readProc)
    .filter((p): p is Proc => p !== undefined);
}

export function pidsInCgroup(dir: string): number[] {
  try {
    return readFileSync(`${dir}/cgroup.procs`, "utf8").split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** How many processes of a uid the cgroup holds right now (cheap: one status read each). */
export function countByUid(dir: string, uid: number): number {
  let count = 0;
  for (const pid of pidsInCgroup(dir)) {
    try {
      if (new RegExp(`^Uid:\\s+${uid}\\s`, "m").test(readFileSync(`/proc/${pid}/status`, "utf8"))) count++;
    } catch {
      // gone
    }
  }
  return count;
}

/**
 * The tasks (threads) whose real uid is `uid` on the whole host, outside the
 * pids in `except`: what RLIMIT_NPROC counts besides the container's own
 * (setrlimit(2): per real uid; Docker without userns-remap shares the host's
 * user namespace), so other containers' and other runs' processes of the uid.
 */
export function hostTasksOfUid(uid: number, except: ReadonlySet<number> = new Set()): number {
  let tasks = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || except.has(Number(name))) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, "utf8");
      if (new RegExp(`^Uid:\\s+${uid}\\s`, "m").test(status)) tasks += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    } catch {
      // gone
    }
  }
  return tasks;
}

export function isAlive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

/**
 * Whether the process runs the file at `path` in its own root: compares the
 * inode of /proc/<pid>/exe with that of /proc/<pid>/root<path> (a readlink of
 * exe from the host names the overlay's host path instead).
 */
export function runsFile(pid: number, path: string): boolean {
  try {
    const exe = statSync(`/proc/${pid}/exe`);
    const file = statSync(`/proc/${pid}/root${path}`);
    return exe.dev === file.dev && exe.ino === file.ino;
  } catch {
    return false; // exited, or no such file in its root
  }
}

/** The capability sets the ADR expects, as /proc prints them. */
export const CAPS = {
  none: "0000000000000000",
  /** CAP_SETGID (6) and CAP_SETUID (7). */
  setuidSetgid: "00000000000000c0",
} as const;

export interface OomKill {
  pid: number;
  uid: number;
  task: string;
  memcg: string;
}

/** The OOM killer's "oom-kill:" lines in the kernel log, or undefined when the log cannot be read. */
export function oomKillLines(): OomKill[] | undefined {
  const result = spawnSync("dmesg", [], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (result.status !== 0) return undefined;
  const kills: OomKill[] = [];
  for (const line of result.stdout.split("\n")) {
    if (!line.includes("oom-kill:")) continue;
    const field = (name: string): string => new RegExp(`[:,]${name}=([^,\\s]*)`).exec(line)?.[1] ?? "";
    kills.push({ pid: Number(field("pid")), uid: Number(field("uid")), task: field("task"), memcg: field("task_memcg") });
  }
  return kills;
}

/** The per-mount options (mountinfo field 6) of a mount point as a process sees it. */
export function mountOptions(pid: number, mountPoint: string): string[] {
  const lines = readFileSync(`/proc/${pid}/mountinfo`, "utf8").trim().split("\n");
  const line = lines.reverse().find((l) => l.split(" ")[4] === mountPoint); // the last mount on top wins
  if (!line) throw new Error(`pid ${pid} has no mount at ${mountPoint}`);
  return line.split(" ")[5]!.split(",");
}
