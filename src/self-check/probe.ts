/*
 * --probe: turns "configured" into "verified". The audit asks the service
 * that started it (runSelfCheck, on the fd CLANKIE_PROBE_FD names) to start
 *
 *   clankie-separate --probe-agent   (with CLANKIE_PROBE_SERVICE_PID and CLANKIE_PROBE_SOCKET)
 *
 * through spawnAgent, the way the service starts agent work, and judges the
 * report the probe prints from inside the agent (probe-agent.ts). Only the
 * service can ask the spawner (it alone holds the channel), so the probe
 * runs when the audit is the service's child (doctor); from `docker exec`
 * it cannot, and says so.
 */
import { createServer, type Server } from "node:net";
import { agentGroups, type Identities } from "../accounts.ts";
import { namesOf } from "../os/capabilities.ts";
import { askLine } from "../os/fd-line.ts";
import { AGENT_EXEC_PATH, PROBE_FD_VARIABLE } from "../constants.ts";
import type { ProcessCredentials } from "../os/proc-status.ts";
import type { CaptureResult } from "../exec/capture.ts";
import { fail, firstLine, howItEnded, pass, plural, reasonOf, saying, type Verdict, warn } from "./check.ts";
import type { Mode } from "./fact-types.ts";
import type { SeccompStatus } from "./process-table.ts";
import { sameSet } from "./service-process.ts";
import { type Attempt, type ProbeReport } from "./probe-agent.ts";
import { drawProbeSocketName } from "../probe-socket.ts";

/** What became of the probe: the reader's outcome, judged by the checks below. */
export type ProbeRun =
  | { kind: "single-uid" }
  | { kind: "no-ids" }
  | { kind: "blocked"; blocker: string; self: ProcessCredentials }
  | { kind: "unstartable"; error: string; fix: string }
  | { kind: "failed"; result: CaptureResult }
  | { kind: "unreadable"; error: string; stdout: string }
  | { kind: "ran"; report: ProbeReport };

const DOCTOR_FIX = "run the probe with runSelfCheck([\"--probe\"]) in the service process itself, which holds the channel to the spawner (doctor does): an audit started by docker exec, as root or as node, cannot start agent work";

/** The fix when the relay to the service fails or answers what cannot be read. */
const RELAY_FIX = "run the probe from the service through runSelfCheck (clankie-separate/system-exec)";

/** Why this audit cannot start the probe: no runSelfCheck in a process holding the spawner's channel handed it the relay. */
const NO_RELAY = `this audit has no relay to the spawner (no ${PROBE_FD_VARIABLE})`;

const HEX = /^0x[0-9a-f]{16}$/;
const ids4 = (value: unknown): boolean => Array.isArray(value) && value.every((n) => Number.isInteger(n) && n >= 0);

/** Pure: validates the probe's one line of JSON. */
export function parseProbeReport(text: string): ProbeReport {
  const line = text.trim().split("\n").pop() ?? "";
  const value = JSON.parse(line) as ProbeReport;
  if (value === null || typeof value !== "object" || value.probe !== 1) throw new Error("not a probe report");
  if (!ids4(value.uids) || value.uids.length !== 4 || !ids4(value.gids) || value.gids.length !== 4 || !ids4(value.groups)) throw new Error("malformed ids");
  for (const name of ["CapInh", "CapPrm", "CapEff", "CapAmb", "CapBnd"] as const) {
    if (typeof value.sets?.[name] !== "string" || !HEX.test(value.sets[name])) throw new Error(`malformed ${name}`);
  }
  if (value.noNewPrivs !== 0 && value.noNewPrivs !== 1) throw new Error("malformed NoNewPrivs");
  const seccomp = value.seccomp;
  if (seccomp === null || typeof seccomp !== "object" || !(seccomp.mode === null || /^\d+$/.test(String(seccomp.mode))) || !(seccomp.filters === null || (Number.isInteger(seccomp.filters) && seccomp.filters >= 0))) throw new Error("malformed seccomp");
  if (!Array.isArray(value.attempts)) throw new Error("no attempts");
  for (const attempt of value.attempts) {
    if (!["denied", "possible", "inconclusive"].includes(attempt.outcome) || typeof attempt.detail !== "string") throw new Error("malformed attempt");
  }
  return value;
}

/*
 * What the uid boundary promises fails when possible. What only the Landlock
 * domain and seccomp filter of a spawn stop (the agent lowering its own
 * oom_score_adj, reaching a socket outside its domain) warns where the kernel
 * or engine does not offer them (agent.confinement warns: agent work then runs
 * under the uid boundary only), and fails where it does: the stage should
 * have confined the probe and did not.
 */
const CONFINEMENT_FIX = "agent work is confined beyond its uid only where the kernel offers Landlock and seccomp filters (see agent.confinement); until then this rests on the uid boundary only";
const UNCONFINED_FIX = "the kernel offers Landlock ABI 6 and seccomp filters (agent.confinement) but the probe ran without them: check that the installed clankie-agent-exec is this build (image.executable) and report this output";
const UNSURE_FIX = "seed the service's state (/state/credentials.json) and run the probe from the service";
const DOCTOR_UNSURE = "run the probe from the service (doctor)";

export interface AttemptCheck {
  id: Attempt["id"];
  what: string;
  fix: string;
  unsure?: string;
}

/** What the uid alone must refuse: possible fails. */
export const UID_ATTEMPTS: readonly AttemptCheck[] = [
  { id: "write-state", what: "write /state", fix: "restart the container: the entrypoint makes /state node-owned 0711 and every entry service-only" },
  { id: "read-credentials", what: "read the credentials", fix: "restart the container: the entrypoint makes /state/credentials.json service-only (0600)" },
  { id: "signal-service", what: "signal the service", fix: "check that the agent runs as its own uid (probe.identity) and holds no capability (probe.capabilities)" },
  { id: "setpriv-node", what: "switch to node with setpriv --reuid=node", fix: "check probe.capabilities and probe.no-new-privs, and that no set-user-ID setpriv is installed (image.tools)" },
];
/** What only the spawn's confinement refuses: possible warns, and fails where the kernel offers the confinement. */
export const CONFINED_ATTEMPTS: readonly AttemptCheck[] = [
  { id: "lower-oom-score", what: "lower its oom_score_adj (not confined: a raise the shim made can be undone)", fix: CONFINEMENT_FIX, unsure: DOCTOR_UNSURE },
  { id: "abstract-socket", what: "connect to an abstract unix socket outside its domain (not confined)", fix: CONFINEMENT_FIX, unsure: DOCTOR_UNSURE },
];

/** Pure: the "probe" check: whether it ran, and if not, why. */
export function judgeProbeRun(run: ProbeRun): Verdict {
  switch (run.kind) {
    case "single-uid":
      return warn("nothing to probe: no agent uid is configured", {}, null);
    case "no-ids":
      return fail("cannot probe: the users and groups of ADR 0272 are not all defined", {}, "fix the accounts check first");
    case "blocked":
      return fail(`cannot start the probe: ${run.blocker}`, { uids: run.self.uids, capEff: namesOf(run.self.capEff), noNewPrivs: run.self.noNewPrivs ? 1 : 0 }, DOCTOR_FIX);
    case "unstartable":
      return fail(`cannot start the probe: ${run.error}`, { error: run.error }, run.fix);
    case "failed": {
      const { result } = run;
      const found = { command: [result.path], status: result.status, signal: result.signal, error: result.error ?? null, stderr: firstLine(result.stderr) };
      return fail(saying(`the probe did not run (${howItEnded(result)})`, result.stderr), found, "fix what the shim names, then run the probe again");
    }
    case "unreadable":
      return fail(`the probe's report is unreadable: ${run.error}`, { stdout: run.stdout.slice(0, 500) }, "rebuild the image: the probe and the audit come from different builds");
    case "ran":
      return pass(`the probe ran through ${AGENT_EXEC_PATH} (pid ${run.report.pid})`, { pid: run.report.pid });
  }
}

export function judgeProbeIdentity(report: ProbeReport, ids: Identities): Verdict {
  const wantGroups = agentGroups(ids);
  const found = { pid: report.pid, uids: report.uids, gids: report.gids, groups: report.groups, want: { uid: ids.agent.uid, gid: ids.agent.gid, groups: wantGroups } };
  if (report.uids.every((u) => u === ids.agent.uid) && report.gids.every((g) => g === ids.agent.gid) && sameSet(report.groups, wantGroups)) {
    return pass(`the probe ran as ${ids.agent.name}: uid ${ids.agent.uid}, gid ${ids.agent.gid}, groups ${wantGroups.join(",")}`, found);
  }
  return fail(`the probe ran with uids ${report.uids.join(",")} gids ${report.gids.join(",")} groups ${report.groups.join(",")}`, found, "check the accounts of ADR 0272 and the shim; do not start agent work until this passes");
}

export function judgeProbeCapabilities(report: ProbeReport): Verdict {
  const sets = Object.fromEntries(Object.entries(report.sets).map(([name, mask]) => [name, { mask, names: namesOf(BigInt(mask)) }]));
  const held = (["CapInh", "CapPrm", "CapEff", "CapAmb"] as const).filter((name) => BigInt(report.sets[name]) !== 0n);
  if (held.length > 0) return fail(`the agent holds capabilities in ${held.join(", ")}`, { pid: report.pid, sets }, "do not start agent work until this passes; report it with this output");
  return pass(`the agent holds no capability (CapInh, CapPrm, CapEff, CapAmb empty; bounding set ${namesOf(BigInt(report.sets.CapBnd)).join(",") || "empty"}, which NoNewPrivs keeps unreachable)`, { pid: report.pid, sets });
}

export function judgeProbeNoNewPrivs(report: ProbeReport): Verdict {
  if (report.noNewPrivs === 1) return pass("the agent has NoNewPrivs 1", { pid: report.pid, noNewPrivs: 1 });
  return fail("the agent has NoNewPrivs 0", { pid: report.pid, noNewPrivs: 0 }, "add --security-opt no-new-privileges to docker run");
}

/** Pure: the probe's seccomp against the auditor's own (the audit is the service's child: the filters it already had). */
export function judgeProbeSeccomp(report: ProbeReport, auditor: SeccompStatus | undefined, offered = false): Verdict {
  const found = { pid: report.pid, seccomp: report.seccomp, auditor: auditor ?? null };
  const { mode, filters } = report.seccomp;
  if (mode === null) return warn("the kernel shows no Seccomp: field for the agent: no seccomp, agent work runs under the uid boundary only", found, CONFINEMENT_FIX);
  if (filters === null || auditor?.filters === null || auditor === undefined) {
    return warn(`the agent runs with Seccomp: ${mode}; the kernel does not count filters (Seccomp_filters:, Linux 5.9+), so whether it has one of its own cannot be told`, found, CONFINEMENT_FIX);
  }
  const count = `${plural(filters, "seccomp filter")} (Seccomp: ${mode})`;
  if (filters > auditor.filters) return pass(`the agent runs under ${count}, ${filters - auditor.filters} more than this audit's ${auditor.filters}: a filter of its own`, found);
  return (offered ? fail : warn)(`not confined: the agent runs under ${count}, no more than this audit's ${auditor.filters}: no filter of its own, agent work runs under the uid boundary${filters > 0 ? " and the engine's profile" : ""} only`, found, offered ? UNCONFINED_FIX : CONFINEMENT_FIX);
}

/** Pure: one attempt of the probe; `confined` for what only the spawn's confinement refuses. */
export function judgeProbeAttempt(spec: AttemptCheck, report: ProbeReport, confined: boolean, offered = false): Verdict {
  const attempt = report.attempts.find((a) => a.id === spec.id);
  const plain = spec.what.replace(/ \(.*\)$/, "");
  if (!attempt) return fail(`the probe did not try to ${spec.what}`, {}, "rebuild the image: the probe and the audit come from different builds");
  if (attempt.outcome === "denied") return pass(`the agent cannot ${plain}: ${attempt.detail}`, { ...attempt });
  if (attempt.outcome === "inconclusive") return warn(`could not tell whether the agent can ${plain}: ${attempt.detail}`, { ...attempt }, spec.unsure ?? UNSURE_FIX);
  return (!confined || offered ? fail : warn)(`the agent CAN ${spec.what}: ${attempt.detail}`, { ...attempt }, confined && offered ? UNCONFINED_FIX : spec.fix);
}

/** Starts the probe through the service that started this audit, when it can start at all; the reader of the probe fact. */
export function runProbe(at: { mode: Mode; self: ProcessCredentials; ids: Identities | undefined; servicePid: number }): ProbeRun {
  if (at.mode === "single-uid") return { kind: "single-uid" };
  if (!at.ids) return { kind: "no-ids" };
  const relay = process.env[PROBE_FD_VARIABLE];
  if (relay === undefined) return { kind: "blocked", blocker: NO_RELAY, self: at.self };
  return runProbeThroughService(Number(relay), at.servicePid);
}

/**
 * The probe, started by the service that runs this audit (runSelfCheck):
 * the service holds no capability and starts agent work through the
 * spawner, so the audit names the probe's two values on the fd the service
 * handed it (PROBE_FD_VARIABLE), and reads back one JSON line: how the probe
 * ended. What it reads is the service's word, as the whole audit's output is
 * the service's to show.
 */
function runProbeThroughService(fd: number, servicePid: number): ProbeRun {
  const socket = listenAbstract();
  let text = "";
  try {
    text = askLine(fd, JSON.stringify({ servicePid, socket: socket?.name ?? null }));
  } catch (error) {
    return { kind: "unstartable", error: reasonOf(error), fix: RELAY_FIX };
  } finally {
    socket?.server.close();
  }
  let ended: { status: number | null; signal: string | null; stdout: string; stderr: string; error?: string };
  try {
    ended = JSON.parse(text) as typeof ended;
  } catch (error) {
    return { kind: "unstartable", error: `the service's answer is unreadable: ${reasonOf(error)}`, fix: RELAY_FIX };
  }
  const result: CaptureResult = { path: AGENT_EXEC_PATH, status: ended.status, signal: ended.signal, stdout: Buffer.from(ended.stdout), stderr: Buffer.from(ended.stderr), ...(ended.error === undefined ? {} : { error: ended.error }) };
  if (result.error !== undefined || result.status !== 0) return { kind: "failed", result };
  try {
    return { kind: "ran", report: parseProbeReport(ended.stdout) };
  } catch (error) {
    return { kind: "unreadable", error: reasonOf(error), stdout: ended.stdout };
  }
}

/*
 * The socket the probe tries to reach: an abstract unix socket (no file, so
 * nothing to clean up; the name is random). listen() binds and listens before
 * it returns, so the kernel completes a connect into the backlog while this
 * process waits for the service's answer (askLine); nothing is ever accepted or read.
 */
function listenAbstract(): { name: string; server: Server } | undefined {
  const name = drawProbeSocketName();
  const server = createServer((connection) => connection.destroy());
  server.on("error", () => undefined); // the probe then reports ECONNREFUSED: inconclusive, never a pass
  try {
    server.listen({ path: `\0${name}` });
  } catch {
    return undefined;
  }
  server.unref();
  return { name, server };
}
