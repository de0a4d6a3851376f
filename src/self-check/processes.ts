/*
 * Processes that should not be there:
 *   - any process of uid 0 (root exists at startup only; the audit itself and
 *     the processes that started it, such as a `docker exec` shell, are left
 *     out of the count and named);
 *   - any process of the service uid whose executable lies under /workspace
 *     (the service never executes content the agent can write).
 * Reading another process's executable link needs ptrace read access
 * (proc(5)): processes it could not read are counted, never passed over.
 * Pure given the table and the links.
 */
import { WORKSPACE_DIR } from "../constants.ts";
import { bounded, type Check, fail, pass, warn } from "./check.ts";
import type { Mode } from "./mode.ts";
import type { ProcessEntry } from "../os/proc-status.ts";
import type { Readable } from "./proc-table.ts";
import { SHOWN_ENTRIES } from "./state.ts";

export function checkRootProcesses(table: readonly ProcessEntry[], lineageOfSelf: readonly number[], mode: Mode): Check {
  const id = "processes.root";
  const root = table.filter((entry) => entry.creds.uids.some((uid) => uid === 0));
  const others = root.filter((entry) => !lineageOfSelf.includes(entry.pid)).map((entry) => ({ pid: entry.pid, ppid: entry.ppid, name: entry.name, uids: entry.creds.uids }));
  const ours = root.filter((entry) => lineageOfSelf.includes(entry.pid)).map((entry) => ({ pid: entry.pid, name: entry.name }));
  const found = { processes: bounded(others, SHOWN_ENTRIES), auditAndItsParents: ours, seen: table.length };
  if (others.length === 0) {
    const besides = ours.length > 0 ? ` besides this audit and the processes that started it (${ours.map((o) => o.pid).join(", ")})` : "";
    return pass(id, `no process of uid 0${besides} among ${table.length} processes`, found);
  }
  const list = others.slice(0, 5).map((o) => `${o.pid} (${o.name})`).join(", ");
  const summary = `${others.length} process${others.length === 1 ? "" : "es"} of uid 0 still running: ${list}${others.length > 5 ? ", ..." : ""}`;
  const fix = "end them (kill PID); root belongs to startup only: use docker exec --user node for operator work";
  return mode === "single-uid" ? warn(id, summary, found, fix) : fail(id, summary, found, fix);
}

export function underWorkspace(path: string): boolean {
  const clean = path.endsWith(" (deleted)") ? path.slice(0, -" (deleted)".length) : path;
  return clean === WORKSPACE_DIR || clean.startsWith(`${WORKSPACE_DIR}/`);
}

export function checkWorkspaceExecutables(
  table: readonly ProcessEntry[],
  serviceUid: number | undefined,
  selfPid: number,
  exeOf: (pid: number) => Readable<string>,
  mode: Mode,
): Check {
  const id = "processes.workspace-exe";
  if (serviceUid === undefined) return fail(id, "cannot tell which processes are the service's: the service user is not defined", {}, "fix the accounts check first");
  const mine = table.filter((entry) => entry.pid !== selfPid && entry.creds.uids.some((uid) => uid === serviceUid));
  const offenders: Array<{ pid: number; name: string; exe: string }> = [];
  const unreadable: Array<{ pid: number; name: string; error: string }> = [];
  for (const entry of mine) {
    const exe = exeOf(entry.pid);
    if (!exe.ok) {
      // A kernel thread or a process that exited has no link; only a refusal matters.
      if (!exe.error.endsWith("ENOENT")) unreadable.push({ pid: entry.pid, name: entry.name, error: exe.error });
      continue;
    }
    if (underWorkspace(exe.value)) offenders.push({ pid: entry.pid, name: entry.name, exe: exe.value });
  }
  const found = { uid: serviceUid, seen: mine.length, underWorkspace: bounded(offenders, SHOWN_ENTRIES), unreadable: bounded(unreadable, SHOWN_ENTRIES) };
  if (offenders.length > 0) {
    const list = offenders.slice(0, 3).map((o) => `${o.pid} ${o.exe}`).join(", ");
    const summary = `${offenders.length} process${offenders.length === 1 ? "" : "es"} of uid ${serviceUid} run${offenders.length === 1 ? "s" : ""} an executable under ${WORKSPACE_DIR}: ${list}`;
    const fix = "end them, and run workspace content only through clankie-agent-exec (as the agent), never as the service";
    return mode === "single-uid" ? warn(id, summary, found, fix) : fail(id, summary, found, fix);
  }
  if (unreadable.length > 0) {
    return warn(
      id,
      `none of the ${mine.length - unreadable.length} readable processes of uid ${serviceUid} runs from ${WORKSPACE_DIR}; ${unreadable.length} could not be read (${unreadable[0]!.error})`,
      found,
      "run the audit as the service (doctor), which may read its own processes' executables",
    );
  }
  return pass(id, `no process of uid ${serviceUid} runs an executable under ${WORKSPACE_DIR} (${mine.length} checked)`, found);
}
