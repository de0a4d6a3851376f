/*
 * The process table as the audit reads it: every /proc/<pid>/status this pid
 * namespace shows (proc(5)), with the fields the judges need beyond the
 * credentials the floor parses (parseStatus, src/os/proc-status.ts).
 */
import { readdirSync, readFileSync } from "node:fs";
import { parseStatus, type ProcessCredentials } from "../os/proc-status.ts";

export interface ProcessEntry {
  pid: number;
  ppid: number;
  /** The Name: line (the kernel's comm, at most 15 bytes, set by the process itself). */
  name: string;
  creds: ProcessCredentials;
}

/** The Seccomp: field (0 off, 1 strict, 2 filter) and Seccomp_filters: (Linux 5.9+); null where the kernel shows none. */
export type SeccompStatus = { mode: string | null; filters: number | null };

/** Pure: one /proc/<pid>/status text. */
export function parseProcessStatus(pid: number, text: string): ProcessEntry {
  const name = /^Name:\t?(.*)$/m.exec(text)?.[1] ?? "";
  const ppid = Number(/^PPid:\s*(\d+)$/m.exec(text)?.[1] ?? Number.NaN);
  if (!Number.isInteger(ppid)) throw new Error(`/proc/${pid}/status has no PPid line`);
  return { pid, ppid, name, creds: parseStatus(text) };
}

/** Every process this pid namespace shows whose status could be read (one that exits meanwhile is not listed). */
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

export function parseSeccompStatus(status: string): SeccompStatus {
  const mode = /^Seccomp:\s*(\d+)$/m.exec(status)?.[1] ?? null;
  const filters = /^Seccomp_filters:\s*(\d+)$/m.exec(status)?.[1];
  return { mode, filters: filters === undefined ? null : Number(filters) };
}
