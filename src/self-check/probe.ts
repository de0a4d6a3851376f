/*
 * --probe: turns "configured" into "verified". The audit starts
 *
 *   clankie-agent-exec --env CLANKIE_PROBE_SERVICE_PID -- clankie-separate --probe-agent
 *
 * the way the service starts agent work, waits for it, and judges the
 * report the probe prints from inside the agent (probe-agent.ts). Only the
 * service may call the shim (it needs SETUID, SETGID and NoNewPrivs), so the
 * probe runs when the audit is the service's child (doctor); from
 * `docker exec` it cannot, and says so.
 */
import type { Identities } from "../accounts.ts";
import { agentGroups } from "../agent-exec/plan.ts";
import { maskOf, namesOf } from "../capabilities.ts";
import { AGENT_EXEC_PATH, ENTRYPOINT_NAME, INSTALL_DIR, PROBE_AGENT_FLAG, SERVICE_CAPABILITIES } from "../constants.ts";
import type { ProcessCredentials } from "../proc-status.ts";
import { Refusal } from "../report.ts";
import { type CaptureRequest, type CaptureResult, runCapture } from "../system-exec.ts";
import { type Check, fail, pass, reasonOf, warn } from "./check.ts";
import type { Mode } from "./mode.ts";
import { type Attempt, PROBE_SERVICE_PID_VARIABLE, type ProbeReport } from "./probe-agent.ts";

const DOCTOR_FIX = "run the probe as the service: have the service start clankie-separate --self-check --probe as its own child (doctor does); docker exec, even --user node, gets neither SETUID/SETGID nor NoNewPrivs (moby#37667)";

/** Pure: what the audit runs. */
export function probeRequest(servicePid: number): CaptureRequest {
  return {
    command: AGENT_EXEC_PATH,
    args: ["--env", PROBE_SERVICE_PID_VARIABLE, "--", `${INSTALL_DIR}/${ENTRYPOINT_NAME}`, PROBE_AGENT_FLAG],
    env: { [PROBE_SERVICE_PID_VARIABLE]: String(servicePid) },
    trustedUids: [0],
    timeoutMs: 30_000,
    maxBytes: 1 << 20,
  };
}

/** Pure: who may start the probe (the shim's own caller rule, agent-exec/caller.ts). */
export function probeBlocker(self: ProcessCredentials, ids: Identities): string | undefined {
  if (self.uids.some((uid) => uid !== ids.service.uid)) return `this audit runs as uid ${self.uids.join(",")}, not the service uid ${ids.service.uid}`;
  const missing = namesOf(maskOf(SERVICE_CAPABILITIES) & ~(self.capEff & self.capPrm));
  if (missing.length > 0) return `this audit does not hold ${missing.join(", ")}`;
  if (!self.noNewPrivs) return "this audit runs without NoNewPrivs";
  return undefined;
}

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
  if (!Array.isArray(value.attempts)) throw new Error("no attempts");
  for (const attempt of value.attempts) {
    if (!["denied", "possible", "inconclusive"].includes(attempt.outcome) || typeof attempt.detail !== "string") throw new Error("malformed attempt");
  }
  return value;
}

const ATTEMPTS: ReadonlyArray<{ id: Attempt["id"]; what: string; fix: string }> = [
  { id: "write-state", what: "write /state", fix: "restart the container: the entrypoint makes /state node-owned 0711 and every entry service-only" },
  { id: "read-credentials", what: "read the credentials", fix: "restart the container: the entrypoint makes /state/credentials.json service-only (0600)" },
  { id: "signal-service", what: "signal the service", fix: "check that the agent runs as its own uid (probe.identity) and holds no capability (probe.capabilities)" },
  { id: "setpriv-node", what: "switch to node with setpriv --reuid=node", fix: "check probe.capabilities and probe.no-new-privs, and that no set-user-ID setpriv is installed (image.tools)" },
];

/** Pure: checks from a report. */
export function probeChecks(report: ProbeReport, ids: Identities): Check[] {
  const checks: Check[] = [];
  const wantGroups = agentGroups(ids);
  const idsFound = { pid: report.pid, uids: report.uids, gids: report.gids, groups: report.groups, want: { uid: ids.agent.uid, gid: ids.agent.gid, groups: wantGroups } };
  const sameGroups = [...new Set(report.groups)].sort((a, b) => a - b).join(",") === wantGroups.join(",");
  if (report.uids.every((u) => u === ids.agent.uid) && report.gids.every((g) => g === ids.agent.gid) && sameGroups) {
    checks.push(pass("probe.identity", `the probe ran as ${ids.agent.name}: uid ${ids.agent.uid}, gid ${ids.agent.gid}, groups ${wantGroups.join(",")}`, idsFound));
  } else {
    checks.push(fail("probe.identity", `the probe ran with uids ${report.uids.join(",")} gids ${report.gids.join(",")} groups ${report.groups.join(",")}`, idsFound, "check the accounts of ADR 0272 and the shim; do not start agent work until this passes"));
  }
  const sets = Object.fromEntries(Object.entries(report.sets).map(([name, mask]) => [name, { mask, names: namesOf(BigInt(mask)) }]));
  const held = ["CapInh", "CapPrm", "CapEff", "CapAmb"].filter((name) => BigInt(report.sets[name as keyof ProbeReport["sets"]]) !== 0n);
  if (held.length === 0) {
    checks.push(pass("probe.capabilities", `the agent holds no capability (CapInh, CapPrm, CapEff, CapAmb empty; bounding set ${namesOf(BigInt(report.sets.CapBnd)).join(",") || "empty"}, which NoNewPrivs keeps unreachable)`, { pid: report.pid, sets }));
  } else {
    checks.push(fail("probe.capabilities", `the agent holds capabilities in ${held.join(", ")}`, { pid: report.pid, sets }, "do not start agent work until this passes; report it with this output"));
  }
  if (report.noNewPrivs === 1) checks.push(pass("probe.no-new-privs", "the agent has NoNewPrivs 1", { pid: report.pid, noNewPrivs: 1 }));
  else checks.push(fail("probe.no-new-privs", "the agent has NoNewPrivs 0", { pid: report.pid, noNewPrivs: 0 }, "add --security-opt no-new-privileges to docker run"));
  for (const { id, what, fix } of ATTEMPTS) {
    const attempt = report.attempts.find((a) => a.id === id);
    const checkId = `probe.${id}`;
    if (!attempt) checks.push(fail(checkId, `the probe did not try to ${what}`, {}, "rebuild the image: the probe and the audit come from different builds"));
    else if (attempt.outcome === "denied") checks.push(pass(checkId, `the agent cannot ${what}: ${attempt.detail}`, { ...attempt }));
    else if (attempt.outcome === "possible") checks.push(fail(checkId, `the agent CAN ${what}: ${attempt.detail}`, { ...attempt }, fix));
    else checks.push(warn(checkId, `could not tell whether the agent can ${what}: ${attempt.detail}`, { ...attempt }, "seed the service's state (/state/credentials.json) and run the probe from the service"));
  }
  return checks;
}

/** Pure: a failed start of the probe, in one check. */
export function probeStartFailure(result: CaptureResult): Check {
  const said = result.stderr.toString("utf8").trim().split("\n")[0] ?? "";
  const how = result.error ?? (result.signal ? `killed by ${result.signal}` : `exit ${result.status}`);
  return fail("probe", `the probe did not run (${how})${said ? `: ${said}` : ""}`, { command: [result.path], status: result.status, signal: result.signal, error: result.error ?? null, stderr: said }, "fix what the shim names, then run the probe again");
}

export function runProbe(mode: Mode, self: ProcessCredentials, ids: Identities | undefined, servicePid: number): Check[] {
  if (mode === "single-uid") return [warn("probe", "nothing to probe: no agent uid is configured", {}, null)];
  if (!ids) return [fail("probe", "cannot probe: the users and groups of ADR 0272 are not all defined", {}, "fix the accounts check first")];
  const blocker = probeBlocker(self, ids);
  if (blocker) return [fail("probe", `cannot start the probe: ${blocker}`, { uids: self.uids, capEff: namesOf(self.capEff), noNewPrivs: self.noNewPrivs ? 1 : 0 }, DOCTOR_FIX)];
  let result: CaptureResult;
  try {
    result = runCapture(probeRequest(servicePid));
  } catch (error) {
    return [fail("probe", `cannot start the probe: ${reasonOf(error)}`, { error: reasonOf(error) }, error instanceof Refusal ? error.fix : "check the installed executable (image.executable)")];
  }
  if (result.error !== undefined || result.status !== 0) return [probeStartFailure(result)];
  let report: ProbeReport;
  try {
    report = parseProbeReport(result.stdout.toString("utf8"));
  } catch (error) {
    return [fail("probe", `the probe's report is unreadable: ${reasonOf(error)}`, { stdout: result.stdout.toString("utf8").slice(0, 500) }, "rebuild the image: the probe and the audit come from different builds")];
  }
  return [pass("probe", `the probe ran through ${AGENT_EXEC_PATH} (pid ${report.pid})`, { pid: report.pid }), ...probeChecks(report, ids)];
}
