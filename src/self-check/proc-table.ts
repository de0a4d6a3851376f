/*
 * Every process the audit can see, read from /proc once. /proc/<pid>/status
 * is readable by all; /proc/<pid>/environ and /proc/<pid>/exe are not: the
 * kernel asks for ptrace read access (proc(5), ptrace(2) "Ptrace access
 * mode checking"), which needs the same uid AND a caller whose effective
 * capabilities include the target's permitted set, or CAP_SYS_PTRACE. So
 * root in the launch of ADR 0272 (no SYS_PTRACE) cannot read the service's
 * environment, and neither can `docker exec --user node` (no capabilities);
 * the service's own children can. Each reader says why it could not read.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { type ProcessCredentials, parseStatus } from "../proc-status.ts";

export interface ProcessEntry {
  pid: number;
  ppid: number;
  /** The Name: line (the kernel's comm, at most 15 bytes, set by the process itself). */
  name: string;
  creds: ProcessCredentials;
}

/** Pure: one /proc/<pid>/status text. */
export function parseProcessStatus(pid: number, text: string): ProcessEntry {
  const name = /^Name:\t?(.*)$/m.exec(text)?.[1] ?? "";
  const ppid = Number(/^PPid:\s*(\d+)$/m.exec(text)?.[1] ?? Number.NaN);
  if (!Number.isInteger(ppid)) throw new Error(`/proc/${pid}/status has no PPid line`);
  return { pid, ppid, name, creds: parseStatus(text) };
}

/** Every process whose status could be read (a process that exits meanwhile is simply not listed). */
export function readProcessTable(): ProcessEntry[] {
  const entries: ProcessEntry[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/status`, "latin1");
    } catch {
      continue;
    }
    entries.push(parseProcessStatus(pid, text));
  }
  return entries.sort((a, b) => a.pid - b.pid);
}

export type Readable<T> = { ok: true; value: T } | { ok: false; error: string };

/** Pure: NUL-separated NAME=value pairs. */
export function parseEnviron(data: Buffer): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const pair of data.toString("latin1").split("\0")) {
    const equals = pair.indexOf("=");
    if (equals > 0) vars[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return vars;
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error);
}

/** The environment a process was started with (what execve(2) gave it; later setenv calls do not show). */
export function readEnviron(pid: number): Readable<Record<string, string>> {
  const path = `/proc/${pid}/environ`;
  try {
    return { ok: true, value: parseEnviron(readFileSync(path)) };
  } catch (error) {
    return { ok: false, error: `read ${path}: ${errorCode(error)}` };
  }
}

export function readExe(pid: number): Readable<string> {
  const path = `/proc/${pid}/exe`;
  try {
    return { ok: true, value: readlinkSync(path, "latin1") };
  } catch (error) {
    return { ok: false, error: `readlink ${path}: ${errorCode(error)}` };
  }
}

/** Pure: pid and its ancestors (by PPid), up to the namespace's edge (PPid 0). */
export function lineage(table: readonly ProcessEntry[], pid: number): number[] {
  const byPid = new Map(table.map((entry) => [entry.pid, entry]));
  const chain: number[] = [];
  let current: number | undefined = pid;
  while (current !== undefined && current > 0 && !chain.includes(current)) {
    chain.push(current);
    current = byPid.get(current)?.ppid;
  }
  return chain;
}
