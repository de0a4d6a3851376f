/* The probe: who may start it, its report parsed, and the probe's checks of the list judged from a report. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { ProcessCredentials } from "../../../src/os/proc-status.ts";
import { judgeProbeRun, judgeProbeSeccomp, parseProbeReport, runProbe } from "../../../src/self-check/probe.ts";
import { parseConfinementAttempts, type ProbeReport } from "../../../src/self-check/probe-agent.ts";
import type { Identities } from "../../../src/accounts.ts";
import type { Check } from "../../../src/self-check/check.ts";
import { CHECKS, runCheck } from "../../../src/self-check/checks.ts";
import type { ConfinementFacts } from "../../../src/self-check/confinement.ts";
import { type Facts, known } from "../../../src/self-check/facts.ts";
import { resolveIdentities } from "../../../src/accounts.ts";
import { DEFAULT_GROUP, DEFAULT_PASSWD } from "../../helpers/sandbox.ts";

const ids = resolveIdentities(DEFAULT_PASSWD, DEFAULT_GROUP);
const OFFERED: ConfinementFacts = { landlock: { abi: 7 }, seccomp: { mode: "2", filters: 1, actions: ["errno", "allow"] } };
const NOT_OFFERED: ConfinementFacts = { landlock: { errno: "ENOSYS" }, seccomp: { mode: "2", filters: 1, actions: ["errno", "allow"] } };

/** The probe's checks of the list, run on a snapshot that holds the probe's report. */
function probeChecks(report: ProbeReport, who: Identities, auditor?: { mode: string | null; filters: number | null }, offered = false): Check[] {
  const facts = { probe: known({ kind: "ran", report }), ids: known(who), self: known({ seccomp: auditor }), confinement: known(offered ? OFFERED : NOT_OFFERED) } as unknown as Facts;
  return CHECKS.filter((spec) => spec.id.startsWith("probe.")).map((spec) => runCheck(spec, facts)!);
}



const Probe = suite("probe");
const agentReport: ProbeReport = {
  probe: 1,
  pid: 40,
  uids: [1001, 1001, 1001, 1001],
  gids: [1001, 1001, 1001, 1001],
  groups: [1001, 1002],
  sets: { CapInh: "0x0000000000000000", CapPrm: "0x0000000000000000", CapEff: "0x0000000000000000", CapAmb: "0x0000000000000000", CapBnd: "0x00000000000000c0" },
  noNewPrivs: 1,
  seccomp: { mode: "2", filters: 2 },
  attempts: [
    { id: "write-state", outcome: "denied", detail: "EACCES" },
    { id: "read-credentials", outcome: "denied", detail: "EACCES" },
    { id: "signal-service", outcome: "denied", detail: "EPERM" },
    { id: "setpriv-node", outcome: "denied", detail: "exit 127" },
    { id: "lower-oom-score", outcome: "denied", detail: "open /proc/self/oom_score_adj for writing: EACCES" },
    { id: "abstract-socket", outcome: "denied", detail: "connect(@x): EPERM" },
  ],
};
const SERVICE_SECCOMP = { mode: "2", filters: 1 };

Probe("only an audit runSelfCheck started in the service can start it: without the relay's fd it is blocked, and doctor's fix names runSelfCheck", () => {
  const service: ProcessCredentials = { uids: [1000, 1000, 1000, 1000], gids: [1000, 1000, 1000, 1000], groups: [1000, 1002], capInh: 0n, capPrm: 0n, capEff: 0n, capAmb: 0n, capBnd: 0n, noNewPrivs: true };
  assert.is(process.env.CLANKIE_PROBE_FD, undefined);
  for (const self of [service, { ...service, uids: [0, 0, 0, 0] } satisfies ProcessCredentials]) {
    const run = runProbe({ mode: "separated", self, ids, servicePid: 14 });
    assert.equal(run, { kind: "blocked", blocker: "this audit has no relay to the spawner (no CLANKIE_PROBE_FD)", self });
    const verdict = judgeProbeRun(run);
    assert.is(verdict.status, "fail");
    assert.is(verdict.summary, "cannot start the probe: this audit has no relay to the spawner (no CLANKIE_PROBE_FD)");
    assert.match(verdict.fix!, /^run the probe with runSelfCheck\(\["--probe"\]\) in the service process itself, which holds the channel to the spawner \(doctor does\)/);
  }
  assert.equal(runProbe({ mode: "single-uid", self: service, ids, servicePid: 14 }), { kind: "single-uid" });
});

Probe("a denied agent passes every probe check", () => {
  const checks = probeChecks(parseProbeReport(JSON.stringify(agentReport)), ids, SERVICE_SECCOMP);
  assert.equal(checks.map((c) => [c.id, c.status]), [
    ["probe.identity", "pass"],
    ["probe.capabilities", "pass"],
    ["probe.no-new-privs", "pass"],
    ["probe.write-state", "pass"],
    ["probe.read-credentials", "pass"],
    ["probe.signal-service", "pass"],
    ["probe.setpriv-node", "pass"],
    ["probe.seccomp", "pass"],
    ["probe.lower-oom-score", "pass"],
    ["probe.abstract-socket", "pass"],
  ]);
  assert.match(checks.find((c) => c.id === "probe.seccomp")!.summary, /^the agent runs under 2 seccomp filters \(Seccomp: 2\), 1 more than this audit's 1: a filter of its own$/);
  assert.is(checks.find((c) => c.id === "probe.lower-oom-score")!.summary, "the agent cannot lower its oom_score_adj: open /proc/self/oom_score_adj for writing: EACCES");
});

Probe("what the agent could do fails; what could not be told warns", () => {
  const report: ProbeReport = {
    ...agentReport,
    uids: [1000, 1000, 1000, 1000],
    sets: { ...agentReport.sets, CapEff: "0x0000000000000080" },
    noNewPrivs: 0,
    attempts: [
      { id: "write-state", outcome: "possible", detail: "opened" },
      { id: "read-credentials", outcome: "inconclusive", detail: "ENOENT" },
      { id: "signal-service", outcome: "denied", detail: "EPERM" },
    ],
  };
  const statuses = Object.fromEntries(probeChecks(report, ids, SERVICE_SECCOMP).map((c) => [c.id, c.status]));
  assert.equal(statuses, {
    "probe.identity": "fail",
    "probe.capabilities": "fail",
    "probe.no-new-privs": "fail",
    "probe.seccomp": "pass",
    "probe.write-state": "fail",
    "probe.read-credentials": "warn",
    "probe.signal-service": "pass",
    "probe.setpriv-node": "fail",
    "probe.lower-oom-score": "fail",
    "probe.abstract-socket": "fail",
  });
});

/** The probe as an agent without its own filter or domain reports it. */
const unconfinedReport: ProbeReport = {
  ...agentReport,
  seccomp: { mode: "0", filters: 0 },
  attempts: [
    ...agentReport.attempts.slice(0, 4),
    { id: "lower-oom-score", outcome: "possible", detail: "wrote 499 over 500 to /proc/self/oom_score_adj" },
    { id: "abstract-socket", outcome: "possible", detail: "connect(@x): connected" },
  ],
};

Probe("not confined where the kernel offers Landlock ABI 6 and seccomp filters: the same findings fail", () => {
  const report = unconfinedReport;
  const checks = probeChecks(report, ids, { mode: "0", filters: 0 }, true);
  const confined = checks.filter((c) => ["probe.seccomp", "probe.lower-oom-score", "probe.abstract-socket"].includes(c.id));
  assert.equal(confined.map((c) => c.status), ["fail", "fail", "fail"]);
  for (const c of confined) assert.match(c.fix!, /^the kernel offers Landlock ABI 6 and seccomp filters \(agent\.confinement\) but the probe ran without them/);
  // Confined, the same checks pass whatever the kernel offers.
  assert.equal(probeChecks(agentReport, ids, SERVICE_SECCOMP, true).filter((c) => c.status !== "pass").map((c) => c.id), []);
});

Probe("not confined where the kernel does not offer it all: what only a Landlock domain or a filter of its own stops warns, with the fix; never fails", () => {
  const report = unconfinedReport;
  const checks = probeChecks(report, ids, { mode: "0", filters: 0 });
  const confined = checks.filter((c) => ["probe.seccomp", "probe.lower-oom-score", "probe.abstract-socket"].includes(c.id));
  assert.equal(confined.map((c) => c.status), ["warn", "warn", "warn"]);
  assert.match(confined[0]!.summary, /^not confined: the agent runs under 0 seccomp filters \(Seccomp: 0\), no more than this audit's 0: no filter of its own, agent work runs under the uid boundary only$/);
  assert.is(confined[1]!.summary, "the agent CAN lower its oom_score_adj (not confined: a raise the shim made can be undone): wrote 499 over 500 to /proc/self/oom_score_adj");
  assert.match(confined[2]!.fix!, /agent\.confinement/);
  assert.is(checks.filter((c) => c.status === "fail").length, 0);
  // Docker's profile is a filter too: as many as the service is still none of its own.
  assert.is(judgeProbeSeccomp({ ...agentReport, seccomp: { mode: "2", filters: 1 } }, SERVICE_SECCOMP).status, "warn");
  assert.is(judgeProbeSeccomp({ ...agentReport, seccomp: { mode: "2", filters: null } }, { mode: "2", filters: null }).status, "warn");
  assert.throws(() => parseProbeReport(JSON.stringify({ ...agentReport, seccomp: { mode: "x", filters: 1 } })), /seccomp/);
});

Probe("the attempts' answers: the domain's EACCES at open, the kernel's floor at write, EPERM of scoping, a connect that went through", () => {
  const [denied, socketDenied] = parseConfinementAttempts("oom 500 13 -\nsocket 1\n", "n");
  assert.equal([denied!.outcome, denied!.detail], ["denied", "open /proc/self/oom_score_adj for writing: EACCES"]);
  assert.equal([socketDenied!.outcome, socketDenied!.detail], ["denied", "connect(@n), the audit's socket outside the agent's domain: EPERM"]);
  const [lowered, connected] = parseConfinementAttempts("oom 500 0 0\nsocket 0\n", "n");
  assert.equal([lowered!.outcome, lowered!.detail], ["possible", "wrote 499 over 500 to /proc/self/oom_score_adj"]);
  assert.is(connected!.outcome, "possible");
  const [floor, refused] = parseConfinementAttempts("oom 500 0 13\nsocket 111\n", "n");
  assert.equal([floor!.outcome, floor!.detail], ["denied", "open /proc/self/oom_score_adj for writing: opened; write 499 over 500: EACCES (the kernel's floor, oom_score_adj_min)"]);
  assert.equal([refused!.outcome, refused!.detail], ["inconclusive", "connect(@n), the audit's socket outside the agent's domain: ECONNREFUSED"]);
  assert.is(parseConfinementAttempts("oom -1000 - -\nsocket -\n", undefined)[0]!.outcome, "inconclusive");
  assert.match(parseConfinementAttempts("", undefined)[1]!.detail, /no socket name was handed to the probe \(CLANKIE_PROBE_SOCKET\)/);
});

Probe("a malformed report is refused; a probe that did not start is one failure with the shim's words", () => {
  assert.throws(() => parseProbeReport("not json"));
  assert.throws(() => parseProbeReport(JSON.stringify({ ...agentReport, sets: { ...agentReport.sets, CapEff: "ff" } })), /CapEff/);
  const started = judgeProbeRun({ kind: "failed", result: { path: "/usr/local/sbin/clankie-agent-exec", status: 77, signal: null, stdout: Buffer.alloc(0), stderr: Buffer.from("clankie-agent-exec: started by root; use ...\n") } });
  assert.is(started.status, "fail");
  assert.is(started.summary, "the probe did not run (exit 77): clankie-agent-exec: started by root; use ...");
});

Probe.run();
