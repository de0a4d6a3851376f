/*
 * Every check, in the order the document lists them: an id, the facts it
 * needs (facts.ts), and a pure judge. The order of the document, what a check
 * says when a fact it needs could not be read, and the rendering all follow
 * from this list; docs/self-check.md's tables are tested against it
 * (test/unit/self-check/checks.test.ts). An id is written here and nowhere
 * else in src (the kernel settings' ids are their table's, kernel.ts; the
 * probe attempts' come from the probe's own protocol, probe-agent.ts).
 *
 * A need "x" hands the judge the value of fact x, and when x could not be
 * read the check says so instead (`could not check WHAT: why`, with the
 * fact's fix; a warning where `unread` says so). A need "x?" hands the value
 * or undefined (the probe's checks ask so: without --probe they are absent,
 * whatever else was read). A judge returns undefined when its check does not
 * apply.
 */
import { agentGroups } from "../accounts.ts";
import { judgeAccounts } from "./accounts.ts";
import { judgePrivateJobs } from "./private-jobs.ts";
import { cannotLook, type Check, reasonOf, type Verdict } from "./check.ts";
import { judgeConfinement, judgeStopRoute } from "./confinement.ts";
import { judgeEnvironment } from "./environment.ts";
import { type Facts, INSTALLED } from "./facts.ts";
import { judgeBundle, judgeExecutable, judgeFileCapabilities, judgeMounts, judgeReadOnlyRoot, judgeSetuid, judgeTools } from "./image.ts";
import { judgeKernelSetting, KERNEL_SETTINGS } from "./kernel.ts";
import { judgeBoundary, judgeMode } from "./mode.ts";
import { type AttemptCheck, CONFINED_ATTEMPTS, judgeProbeAttempt, judgeProbeCapabilities, judgeProbeIdentity, judgeProbeNoNewPrivs, judgeProbeRun, judgeProbeSeccomp, UID_ATTEMPTS } from "./probe.ts";
import type { ProbeReport } from "./probe-agent.ts";
import { judgeCapabilityHolders, judgeRootProcesses, judgeSpawner, judgeWorkspaceExecutables } from "./processes.ts";
import { judgeCapabilities, judgeNoNewPrivs, judgeProcessIds } from "./service-process.ts";
import { judgeAgentHome, judgeAgentVolume, judgeStateZone } from "./state.ts";
import { judgeWorkspaceDefaults, judgeWorkspaceMarker, judgeWorkspaceTop } from "./workspace.ts";

type Values = { [K in keyof Facts]: Facts[K] extends { ok: true; value: infer T } | { ok: false } ? T : never };
type Name = keyof Values;
type Need = Name | `${Name}?`;
type Given<N extends Need> = { [K in N as K extends `${infer B}?` ? B : K]: K extends `${infer B extends Name}?` ? Values[B] | undefined : K extends Name ? Values[K] : never };

export interface CheckSpec<N extends Need = Need> {
  id: string;
  needs: readonly N[];
  /** What could not be checked, for when a fact it needs was not read; default the id. */
  what?: string;
  /** The status when a fact it needs was not read: fail unless "warn". */
  unread?: "warn";
  judge: (given: Given<N>) => Verdict | undefined;
}

function check<N extends Need>(spec: CheckSpec<N>): CheckSpec {
  return spec as unknown as CheckSpec;
}

const offered = (confinement: Values["confinement"] | undefined): boolean => confinement !== undefined && judgeConfinement(confinement).status === "pass";

/** A check of the probe's report: it applies only where the probe ran. */
function probeCheck<N extends Need>(id: string, needs: readonly N[], judge: (report: ProbeReport, given: Given<N>) => Verdict): CheckSpec {
  return check<N | "probe">({ id, needs: ["probe", ...needs], judge: (given) => (given.probe?.kind === "ran" ? judge(given.probe.report, given as Given<N>) : undefined) });
}
const attemptCheck = (spec: AttemptCheck, confined: boolean): CheckSpec =>
  probeCheck(`probe.${spec.id}`, ["confinement?"], (report, { confinement }) => judgeProbeAttempt(spec, report, confined, offered(confinement)));

export const CHECKS: readonly CheckSpec[] = [
  check({ id: "mode", needs: ["mode", "judged"], judge: ({ mode, judged }) => judgeMode(mode, judged.entry.pid) }),
  check({ id: "boundary", needs: ["boundary", "mode"], judge: ({ boundary, mode }) => judgeBoundary(boundary, mode.mode === "separated") }),
  check({ id: "process.ids", needs: ["judged", "ids?", "mode"], judge: ({ judged, ids, mode }) => judgeProcessIds(judged.entry, ids, mode.mode) }),
  check({ id: "process.capabilities", needs: ["judged", "mode"], judge: ({ judged, mode }) => judgeCapabilities(judged.entry, mode.mode) }),
  check({ id: "process.no-new-privs", needs: ["judged", "mode"], judge: ({ judged, mode }) => judgeNoNewPrivs(judged.entry, mode.mode) }),
  check({ id: "accounts", needs: ["accounts"], what: "/etc/passwd and /etc/group", judge: ({ accounts }) => judgeAccounts(accounts.resolved) }),
  check({ id: "state.layout", needs: ["ids", "stateAudit", "mode"], what: "/state", judge: ({ ids, stateAudit, mode }) => judgeStateZone(stateAudit, "layout", mode.mode, ids.service) }),
  check({ id: "state.release", needs: ["ids", "stateAudit", "mode"], what: "/state", judge: ({ ids, stateAudit, mode }) => judgeStateZone(stateAudit, "release", mode.mode, ids.service) }),
  check({ id: "state.agent-home", needs: ["ids", "agentHome", "mode"], what: "/state/agent", judge: ({ ids, agentHome, mode }) => judgeAgentHome(ids, agentHome, mode.mode) }),
  check({ id: "state.agent-volume", needs: ["stateTop", "agentHome", "mode"], judge: ({ stateTop, agentHome, mode }) => judgeAgentVolume(stateTop, agentHome, mode.mode) }),
  check({ id: "workspace.top", needs: ["ids", "workspaceTop", "stateTop", "mode"], what: "/workspace", judge: ({ ids, workspaceTop, stateTop, mode }) => judgeWorkspaceTop(ids, workspaceTop, stateTop.ok ? stateTop.value.dev : -1, mode.mode) }),
  check({ id: "workspace.marker", needs: ["ids", "workspaceTop", "marker", "mode"], what: "the layout marker", judge: ({ marker, workspaceTop, mode }) => judgeWorkspaceMarker(marker, workspaceTop, mode.mode) }),
  check({ id: "workspace.default-acl", needs: ["workspaceAcls"], what: "/workspace", unread: "warn", judge: ({ workspaceAcls }) => judgeWorkspaceDefaults(workspaceAcls) }),
  check({ id: "image.executable", needs: ["running", "programs"], what: "this executable", judge: ({ running, programs }) => judgeExecutable(running, INSTALLED, programs) }),
  check({ id: "image.bundle", needs: ["bundle"], what: "the embedded bundle", judge: ({ bundle }) => judgeBundle(bundle) }),
  check({ id: "image.tools", needs: ["programs"], judge: ({ programs }) => judgeTools(programs) }),
  check({ id: "image.setuid", needs: ["imageScan", "ids?"], what: "the image's filesystems", judge: ({ imageScan, ids }) => judgeSetuid(imageScan, ids ? { uid: ids.agent.uid, groups: agentGroups(ids) } : undefined) }),
  check({ id: "image.file-capabilities", needs: ["imageScan"], what: "the image's filesystems", unread: "warn", judge: ({ imageScan }) => judgeFileCapabilities(imageScan) }),
  check({ id: "image.mounts", needs: ["mounts"], what: "the mounts", unread: "warn", judge: ({ mounts }) => judgeMounts(mounts) }),
  check({ id: "image.read-only-root", needs: ["mounts", "mode"], what: "the mounts", unread: "warn", judge: ({ mounts, mode }) => judgeReadOnlyRoot(mounts, mode.mode) }),
  check({ id: "processes.root", needs: ["table", "self", "mode"], judge: ({ table, self, mode }) => judgeRootProcesses(table, self.pid, mode.mode) }),
  check({ id: "processes.workspace-exe", needs: ["table", "serviceUid", "self", "exes", "mode"], what: "the service's processes", judge: ({ table, serviceUid, self, exes, mode }) => judgeWorkspaceExecutables(table, serviceUid, self.pid, exes, mode.mode) }),
  check({ id: "processes.capabilities", needs: ["table", "serviceUid", "judged", "self", "exes", "cmdlines"], what: "the service's processes", judge: ({ table, serviceUid, judged, self, exes, cmdlines }) => judgeCapabilityHolders(table, serviceUid, judged.entry.pid, self.pid, exes, cmdlines) }),
  check({ id: "processes.spawner", needs: ["table", "serviceUid", "cmdlines", "mode"], what: "the service's processes", judge: ({ table, serviceUid, cmdlines, mode }) => judgeSpawner(table, serviceUid, cmdlines, mode.mode) }),
  check({ id: "environment", needs: ["env", "judged"], judge: ({ env, judged }) => judgeEnvironment(env, { pid: judged.entry.pid, self: judged.self, environ: judged.environ }) }),
  ...KERNEL_SETTINGS.map((setting) => check({ id: setting.id, needs: ["sysctls"], judge: ({ sysctls }) => judgeKernelSetting(setting, sysctls.get(setting.path)!) })),
  check({ id: "agent.confinement", needs: ["confinement"], judge: ({ confinement }) => judgeConfinement(confinement) }),
  check({ id: "agent.stop-route", needs: ["confinement"], judge: ({ confinement }) => judgeStopRoute(confinement) }),
  check({ id: "agent.private-jobs", needs: ["ids", "privateRoot", "table", "mode"], judge: ({ ids, privateRoot, table, mode }) => judgePrivateJobs(ids, privateRoot, table, mode.mode, ids.service.uid) }),
  check({ id: "probe", needs: ["probe"], judge: ({ probe }) => probe && judgeProbeRun(probe) }),
  probeCheck("probe.identity", ["ids?"], (report, { ids }) => judgeProbeIdentity(report, ids!)),
  probeCheck("probe.capabilities", [], judgeProbeCapabilities),
  probeCheck("probe.no-new-privs", [], judgeProbeNoNewPrivs),
  ...UID_ATTEMPTS.map((spec) => attemptCheck(spec, false)),
  probeCheck("probe.seccomp", ["self?", "confinement?"], (report, { self, confinement }) => judgeProbeSeccomp(report, self?.seccomp, offered(confinement))),
  ...CONFINED_ATTEMPTS.map((spec) => attemptCheck(spec, true)),
];

/** One check from the snapshot: its judge on the facts it needs, or what it says when one is missing. */
export function runCheck(spec: CheckSpec, facts: Facts): Check | undefined {
  const given: Record<string, unknown> = {};
  for (const need of spec.needs) {
    const name = need.replace(/\?$/, "") as Name;
    const fact = facts[name];
    if (fact.ok) given[name] = fact.value;
    else if (need.endsWith("?")) given[name] = undefined;
    else return { id: spec.id, ...cannotLook(spec.what ?? spec.id, fact.error, fact.fix, spec.unread ?? "fail") };
  }
  let verdict: Verdict | undefined;
  try {
    verdict = spec.judge(given as never);
  } catch (error) {
    verdict = cannotLook(spec.what ?? spec.id, reasonOf(error), "report this output: the audit met something it did not expect");
  }
  return verdict && { id: spec.id, ...verdict };
}

/** Every check that applies, in the list's order. */
export function runChecks(facts: Facts, list: readonly CheckSpec[] = CHECKS): Check[] {
  return list.flatMap((spec) => runCheck(spec, facts) ?? []);
}
