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
 *     service, the audit and the spawner's chains (holding at most SETUID
 *     and SETGID), that holds a capability.
 * Reading another process's executable link needs ptrace read access
 * (proc(5)): processes it could not read are counted, never passed over.
 */
import { AGENT_EXEC_NAME, AGENT_EXEC_PATH, SPAWNER_CAPABILITIES, SPAWNER_FLAG, WORKSPACE_DIR } from "../constants.ts";
import { capabilitySets, SPAWNER_MASK, showSet } from "./service-process.ts";
import { type CapabilityMask, namesOf } from "../os/capabilities.ts";
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
    const exe = exes.get(entry.pid);
    // Not read on purpose: the spawner and what it runs holding SETUID and SETGID (a running job's grab), whose exe links are closed to the audit (processes.spawner and processes.capabilities judge them).
    if (exe === undefined) continue;
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

/** The resident spawner's command line (src/agent-exec/spawner.ts), as the root phase starts it. */
export function isSpawnerCommand(cmdline: readonly string[] | undefined): boolean {
  return cmdline !== undefined && cmdline.length === 2 && (cmdline[0] === AGENT_EXEC_PATH || cmdline[0] === AGENT_EXEC_NAME) && cmdline[1] === SPAWNER_FLAG;
}

/**
 * The spawners: processes of the service uid running clankie-agent-exec
 * --spawner, but for a spawner's own child between its fork(2) and its
 * execve(2) (the spawner starting its zygote), which still shows the
 * spawner's command line.
 */
export function spawnersOf(table: readonly ProcessEntry[], serviceUid: number, cmdlines: ReadonlyMap<number, readonly string[]>): ProcessEntry[] {
  const runsSpawner = (pid: number): boolean => isSpawnerCommand(cmdlines.get(pid));
  return ofUid(table, serviceUid, []).filter((entry) => runsSpawner(entry.pid) && !runsSpawner(entry.ppid));
}

/** The capabilities a process can use now or pass on through exec: its permitted, effective and ambient sets. */
export function usableCapabilities(creds: ProcessEntry["creds"]): CapabilityMask {
  return creds.capPrm | creds.capEff | creds.capAmb;
}

/** The spawners and every process below them (the zygote, the grabs, each running job's parent, and the chains they start). */
export function spawnedTree(table: readonly ProcessEntry[], serviceUid: number, cmdlines: ReadonlyMap<number, readonly string[]>): Set<number> {
  return new Set(spawnersOf(table, serviceUid, cmdlines).flatMap((spawner) => [...descendants(table, spawner.pid)]));
}

/** A process and every descendant of it in the table. */
function descendants(table: readonly ProcessEntry[], pid: number): Set<number> {
  const found = new Set([pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const entry of table) {
      if (!found.has(entry.pid) && found.has(entry.ppid)) {
        found.add(entry.pid);
        grew = true;
      }
    }
  }
  return found;
}

/**
 * Pure: exactly one spawner, holding SETUID and SETGID in every set (the
 * bounding set too) and nothing else, with NoNewPrivs; in a body that is
 * not separated, none.
 */
export function judgeSpawner(table: readonly ProcessEntry[], serviceUid: number, cmdlines: ReadonlyMap<number, readonly string[]>, mode: Mode): Verdict {
  const spawners = spawnersOf(table, serviceUid, cmdlines);
  const found = { spawners: spawners.map((entry) => ({ pid: entry.pid, ppid: entry.ppid, sets: capabilitySets(entry.creds).map(showSet), noNewPrivs: entry.creds.noNewPrivs ? 1 : 0 })) };
  if (mode !== "separated") {
    if (spawners.length === 0) return pass("no spawner: no agent uid is configured", found);
    return fail(`${plural(spawners.length, "spawner")} running in a body that is not separated`, found, "restart the body with the launch of ADR 0272 (docs/launch.md)");
  }
  if (spawners.length !== 1) {
    return fail(`${spawners.length === 0 ? "no spawner runs: no agent work can start" : `${spawners.length} spawners run: only the root phase starts one`} (want exactly one)`, found, "restart the body: the root phase starts the one spawner beside the service (docs/launch.md)");
  }
  const spawner = spawners[0]!;
  const wrong = capabilitySets(spawner.creds).filter(([, mask]) => mask !== SPAWNER_MASK).map(showSet);
  if (!spawner.creds.noNewPrivs) wrong.push("NoNewPrivs 0");
  if (wrong.length > 0) return fail(`the spawner (pid ${spawner.pid}): ${wrong.join("; ")} (want exactly ${SPAWNER_CAPABILITIES.join(", ")} in every set, NoNewPrivs 1)`, found, "restart the body with the launch of ADR 0272 (docs/launch.md)");
  return pass(`one spawner (pid ${spawner.pid}) holds exactly ${SPAWNER_CAPABILITIES.join(", ")} in every set, with NoNewPrivs`, found);
}

/*
 * No process of the service's uid holds a capability but the spawner and the
 * chains it starts (the grab, setpriv, a private job's shim), and those at
 * most SETUID and SETGID: the service holds none (ADR 0272 let it keep both;
 * this body goes further, docs/security.md). Any other process of that uid
 * holding one in its permitted, effective or ambient set can use it:
 * setresuid(0) makes it uid 0. Left out: the service and the processes above
 * it (tini), which process.capabilities judges, and the audit and the
 * processes that started it.
 */
export function judgeCapabilityHolders(table: readonly ProcessEntry[], serviceUid: number, judgedPid: number, selfPid: number, exes: ReadonlyMap<number, Readable<string>>, cmdlines: ReadonlyMap<number, readonly string[]> = new Map()): Verdict {
  // The service and what is above it are judged by process.capabilities (none held); the audit and what started it.
  const expected = new Set([...lineage(table, judgedPid), ...lineage(table, selfPid)]);
  // The spawner and what it starts (its zygote, the grabs, setpriv, a private job's shim) hold at most SETUID and SETGID.
  const spawned = spawnedTree(table, serviceUid, cmdlines);
  const holders = ofUid(table, serviceUid, [...expected])
    .map((entry) => ({ entry, held: usableCapabilities(entry.creds), exe: exes.get(entry.pid) }))
    .filter(({ entry, held }) => held !== 0n && !(spawned.has(entry.pid) && (held & ~SPAWNER_MASK) === 0n))
    .map(({ entry, held, exe }) => ({ pid: entry.pid, ppid: entry.ppid, name: entry.name, exe: exe?.ok ? exe.value : null, capabilities: namesOf(held), ...(exe && !exe.ok ? { error: exe.error } : {}) }));
  const found = { uid: serviceUid, service: judgedPid, leftOut: [...expected].sort((a, b) => a - b), holders: bounded(holders) };
  if (holders.length === 0) return pass(`no process of uid ${serviceUid} but the spawner and the chains it starts holds a capability (the service, pid ${judgedPid}, holds none)`, found);
  const list = holders.slice(0, 5).map((h) => `${h.pid} (${h.exe ?? h.name}: ${h.capabilities.join(",")})`).join(", ");
  return fail(
    `${plural(holders.length, "process", "processes")} of uid ${serviceUid} besides the service hold${holders.length === 1 ? "s" : ""} capabilities: ${list}${holders.length > 5 ? ", ..." : ""}; each can make itself uid 0 (setresuid)`,
    found,
    "end them, and restart the body: only the root phase starts a process of this uid with capabilities (the spawner, docs/security.md); the service and what it runs hold none",
  );
}
