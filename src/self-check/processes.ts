/*
 * Processes that should not be there, judged from the process table and the
 * executable links facts.ts read. Pure.
 *   - processes.root: any process of uid 0 (root exists at startup only; the
 *     audit itself and the processes that started it, such as a `docker
 *     exec` shell, are left out of the count and named);
 *   - processes.workspace-exe: any process of the service uid whose
 *     executable lies under /workspace (the service never executes content
 *     the agent can write);
 *   - processes.capabilities: any process of the service uid, other than the
 *     service, the audit and the shim's chain, that holds a capability.
 * Reading another process's executable link needs ptrace read access
 * (proc(5)): processes it could not read are counted, never passed over.
 */
import { AGENT_EXEC_PATH, TOOLS, WORKSPACE_DIR } from "../constants.ts";
import { namesOf } from "../os/capabilities.ts";
import type { ProcessEntry } from "./process-table.ts";
import { bounded, fail, failUnlessSingle, pass, plural, type Verdict, warn } from "./check.ts";
import type { Mode, Readable } from "./fact-types.ts";
import { lineage } from "./judged.ts";

export function judgeRootProcesses(table: readonly ProcessEntry[], selfPid: number, mode: Mode): Verdict {
  const ancestry = lineage(table, selfPid);
  const root = table.filter((entry) => entry.creds.uids.some((uid) => uid === 0));
  const others = root.filter((entry) => !ancestry.includes(entry.pid)).map((entry) => ({ pid: entry.pid, ppid: entry.ppid, name: entry.name, uids: entry.creds.uids }));
  const ours = root.filter((entry) => ancestry.includes(entry.pid)).map((entry) => ({ pid: entry.pid, name: entry.name }));
  const found = { processes: bounded(others), auditAndItsParents: ours, seen: table.length };
  if (others.length === 0) {
    const besides = ours.length > 0 ? ` besides this audit and the processes that started it (${ours.map((o) => o.pid).join(", ")})` : "";
    return pass(`no process of uid 0${besides} among ${table.length} processes`, found);
  }
  const list = others.slice(0, 5).map((o) => `${o.pid} (${o.name})`).join(", ");
  const summary = `${plural(others.length, "process", "processes")} of uid 0 still running: ${list}${others.length > 5 ? ", ..." : ""}`;
  return failUnlessSingle(mode === "single-uid", summary, found, "end them (kill PID); root belongs to startup only: use docker exec --user node for operator work");
}

export function underWorkspace(path: string): boolean {
  const clean = path.endsWith(" (deleted)") ? path.slice(0, -" (deleted)".length) : path;
  return clean === WORKSPACE_DIR || clean.startsWith(`${WORKSPACE_DIR}/`);
}

function ofUid(table: readonly ProcessEntry[], uid: number, but: readonly number[]): ProcessEntry[] {
  return table.filter((entry) => !but.includes(entry.pid) && entry.creds.uids.some((id) => id === uid));
}

export function judgeWorkspaceExecutables(table: readonly ProcessEntry[], serviceUid: number, selfPid: number, exes: ReadonlyMap<number, Readable<string>>, mode: Mode): Verdict {
  const mine = ofUid(table, serviceUid, [selfPid]);
  const offenders: Array<{ pid: number; name: string; exe: string }> = [];
  const unreadable: Array<{ pid: number; name: string; error: string }> = [];
  for (const entry of mine) {
    const exe = exes.get(entry.pid) ?? { ok: false, error: `readlink /proc/${entry.pid}/exe: not read` };
    // A kernel thread or a process that exited has no link; only a refusal matters.
    if (!exe.ok) {
      if (!exe.error.endsWith("ENOENT")) unreadable.push({ pid: entry.pid, name: entry.name, error: exe.error });
    } else if (underWorkspace(exe.value)) offenders.push({ pid: entry.pid, name: entry.name, exe: exe.value });
  }
  const found = { uid: serviceUid, seen: mine.length, underWorkspace: bounded(offenders), unreadable: bounded(unreadable) };
  if (offenders.length > 0) {
    const list = offenders.slice(0, 3).map((o) => `${o.pid} ${o.exe}`).join(", ");
    const summary = `${plural(offenders.length, "process", "processes")} of uid ${serviceUid} run${offenders.length === 1 ? "s" : ""} an executable under ${WORKSPACE_DIR}: ${list}`;
    return failUnlessSingle(mode === "single-uid", summary, found, "end them, and run workspace content only through clankie-agent-exec (as the agent), never as the service");
  }
  if (unreadable.length > 0) {
    const summary = `none of the ${mine.length - unreadable.length} readable processes of uid ${serviceUid} runs from ${WORKSPACE_DIR}; ${unreadable.length} could not be read (${unreadable[0]!.error})`;
    return warn(summary, found, "run the audit as the service (doctor), which may read its own processes' executables");
  }
  return pass(`no process of uid ${serviceUid} runs an executable under ${WORKSPACE_DIR} (${mine.length} checked)`, found);
}

/** The shim's own chain holds SETUID and SETGID for a moment, as the service's uid, before setpriv drops them (src/agent-exec/plan.ts). */
const SHIM_CHAIN: readonly string[] = [AGENT_EXEC_PATH, TOOLS.setpriv];

/*
 * ADR 0272: the service holds SETUID and SETGID for one thing, starting agent
 * work. Any other process of its uid that holds a capability in its
 * permitted, effective or ambient set (a child started with execa or
 * child_process, which inherits the ambient set, capabilities(7)) can use
 * it: setresuid(0) makes it uid 0. Left out: the service and the processes
 * above it (tini), the audit and the processes that started it, and the
 * shim's chain, known by its executable. A holder whose executable cannot be
 * read is not passed over.
 */
export function judgeCapabilityHolders(table: readonly ProcessEntry[], serviceUid: number, judgedPid: number, selfPid: number, exes: ReadonlyMap<number, Readable<string>>): Verdict {
  const expected = new Set([...lineage(table, judgedPid), ...lineage(table, selfPid)]);
  const holders = ofUid(table, serviceUid, [...expected])
    .map((entry) => ({ entry, held: entry.creds.capPrm | entry.creds.capEff | entry.creds.capAmb, exe: exes.get(entry.pid) }))
    .filter(({ held, exe }) => held !== 0n && !(exe?.ok && SHIM_CHAIN.includes(exe.value)))
    .map(({ entry, held, exe }) => ({ pid: entry.pid, ppid: entry.ppid, name: entry.name, exe: exe?.ok ? exe.value : null, capabilities: namesOf(held), ...(exe && !exe.ok ? { error: exe.error } : {}) }));
  const found = { uid: serviceUid, service: judgedPid, leftOut: [...expected].sort((a, b) => a - b), holders: bounded(holders) };
  if (holders.length === 0) return pass(`no process of uid ${serviceUid} but the service (pid ${judgedPid}), this audit and the shim's chain holds a capability`, found);
  const list = holders.slice(0, 5).map((h) => `${h.pid} (${h.exe ?? h.name}: ${h.capabilities.join(",")})`).join(", ");
  return fail(
    `${plural(holders.length, "process", "processes")} of uid ${serviceUid} besides the service hold${holders.length === 1 ? "s" : ""} capabilities: ${list}${holders.length > 5 ? ", ..." : ""}; each can make itself uid 0 (setresuid)`,
    found,
    "end them, and start the service's programs through systemExec (clankie-separate/system-exec), which starts them without capabilities: the service holds SETUID and SETGID for one thing, starting agent work through clankie-agent-exec (ADR 0272)",
  );
}
