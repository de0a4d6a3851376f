/*
 * Which process stands for the body. The audit may run as the service's
 * child (doctor), as a `docker exec` process outside the service's tree
 * (root, or node without the service's channel to the spawner), or as the body's only
 * process (a legacy launch). Its own credentials say how it was started, not
 * what the body is, so it judges the service: the first process of the
 * service uid met walking the tree down from pid 1 (tini, which only reaps
 * and forwards signals, is passed over for its child). Pure.
 */
import type { ProcessEntry } from "./process-table.ts";

export type Relation = "self" | "descendant" | "outside";

export interface JudgedChoice {
  entry: ProcessEntry;
  /** Why this process was chosen. */
  reason: string;
}

/** `spawner`: whether a process is the resident spawner, whose subtree is never the service (processes.spawner judges it). */
export function chooseJudged(table: readonly ProcessEntry[], self: ProcessEntry, serviceUid: number | undefined, spawner: (entry: ProcessEntry) => boolean = () => false): JudgedChoice {
  if (serviceUid !== undefined) {
    const init = table.find((entry) => entry.pid === 1);
    const order: ProcessEntry[] = [];
    const seen = new Set<number>();
    const queue = init ? [init] : [];
    while (queue.length > 0) {
      const entry = queue.shift()!;
      // A table read over time can hold a reused pid that closes a loop.
      if (seen.has(entry.pid) || spawner(entry)) continue;
      seen.add(entry.pid);
      order.push(entry);
      queue.push(...table.filter((child) => child.ppid === entry.pid));
    }
    const ofService = order.filter((entry) => entry.creds.uids.every((id) => id === serviceUid));
    const chosen = ofService.find((entry) => entry.name !== "tini") ?? ofService[0];
    if (chosen) {
      const where = chosen.pid === 1 ? "pid 1" : `the first process of uid ${serviceUid} under pid 1`;
      return { entry: chosen, reason: chosen.pid === self.pid ? `this audit is ${where}` : `the service: ${where}` };
    }
  }
  return {
    entry: self,
    reason: serviceUid === undefined ? "the service user is not defined; judged this audit's own process" : `no process of uid ${serviceUid} under pid 1; judged this audit's own process`,
  };
}

export function relationTo(table: readonly ProcessEntry[], selfPid: number, judgedPid: number): Relation {
  if (selfPid === judgedPid) return "self";
  return lineage(table, selfPid).includes(judgedPid) ? "descendant" : "outside";
}

/** True when every process from the audit up to the judged one runs as the service uid: nothing else could have handed it its environment. */
export function handedDownByService(table: readonly ProcessEntry[], selfPid: number, judgedPid: number, serviceUid: number): boolean {
  const chain = lineage(table, selfPid);
  const at = chain.indexOf(judgedPid);
  if (at < 0) return false;
  const byPid = new Map(table.map((entry) => [entry.pid, entry]));
  return chain.slice(0, at + 1).every((pid) => byPid.get(pid)?.creds.uids.every((id) => id === serviceUid) ?? false);
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

/** Pure: /proc/<pid>/environ, NUL-separated NAME=value pairs (what execve(2) gave it; later setenv calls do not show). */
export function parseEnviron(data: Buffer): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const pair of data.toString("latin1").split("\0")) {
    const equals = pair.indexOf("=");
    if (equals > 0) vars[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return vars;
}
