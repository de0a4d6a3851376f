/*
 * What the audit reads of a process beyond its status (the table itself is
 * readProcessTable in proc-status.ts), and
 * its ancestry. /proc/<pid>/status is readable by all; /proc/<pid>/environ
 * and /proc/<pid>/exe are not: the kernel asks for ptrace read access
 * (proc(5), ptrace(2) "Ptrace access mode checking"), which needs the same
 * uid AND a caller whose effective capabilities include the target's
 * permitted set, or CAP_SYS_PTRACE. So root in the launch of ADR 0272 (no
 * SYS_PTRACE) cannot read the service's environment, and neither can
 * `docker exec --user node` (no capabilities); the service's own children
 * can. Each reader says why it could not read.
 */
import { readFileSync, readlinkSync } from "node:fs";
import type { ProcessEntry } from "../os/proc-status.ts";

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
