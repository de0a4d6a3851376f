/* Which process is judged, the mode, and the boundary label: pure, no privileges. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { resolveIdentities } from "../../../src/accounts.ts";
import { boundaryOf, classifyMode, judgeBoundary, judgeMode, NOT_YET } from "../../../src/self-check/mode.ts";
import type { ProcessCredentials } from "../../../src/os/proc-status.ts";
import type { ProcessEntry } from "../../../src/self-check/process-table.ts";
import type { Readable } from "../../../src/self-check/facts.ts";
import { DEFAULT_GROUP, DEFAULT_PASSWD } from "../../helpers/sandbox.ts";

const ids = resolveIdentities(DEFAULT_PASSWD, DEFAULT_GROUP);
const C0 = 0xc0n;

function creds(uid: number, caps: bigint, nnp = true, bnd = caps): ProcessCredentials {
  return { uids: [uid, uid, uid, uid], gids: [uid, uid, uid, uid], groups: [uid], capInh: caps, capPrm: caps, capEff: caps, capAmb: caps, capBnd: bnd, noNewPrivs: nnp };
}
function entry(pid: number, ppid: number, uid: number, name = "node", caps = 0n): ProcessEntry {
  return { pid, ppid, name, creds: creds(uid, caps) };
}
const serviceEnv: Readable<Record<string, string>> = {
  ok: true,
  value: { CLANKIE_SEPARATION: "1", CLANKIE_AGENT_USER: "clankie-agent", CLANKIE_AGENT_UID: "1001", CLANKIE_AGENT_EXEC: "/usr/local/sbin/clankie-agent-exec" },
};
const unreadable: Readable<Record<string, string>> = { ok: false, error: "read /proc/14/environ: EACCES" };

const Mode = suite("classifyMode");
const HELD = "the service holds capabilities (CapInh, CapPrm, CapEff, CapAmb, CapBnd not 0): it must hold none, the spawner starts agent work";

Mode("the service as the entrypoint leaves it (no capability, the bounding set empty) is separated", () => {
  assert.equal(classifyMode(creds(1000, 0n), serviceEnv, ids), { mode: "separated", reasons: [], marker: "1" });
});

Mode("no capability and no marker is today's single-uid body", () => {
  const verdict = classifyMode(creds(1000, 0n, false, 0n), { ok: true, value: { PATH: "/bin" } }, ids);
  assert.is(verdict.mode, "single-uid");
  assert.equal(verdict.reasons, ["no agent uid is configured"]);
});

Mode("an unreadable environment: no capability is single-uid (nothing to judge by); a capability held is misconfigured", () => {
  assert.is(classifyMode(creds(1000, 0n), unreadable, ids).mode, "single-uid");
  const verdict = classifyMode(creds(1000, C0), unreadable, ids);
  assert.is(verdict.mode, "misconfigured");
  assert.is(verdict.marker, undefined);
  assert.equal(verdict.reasons, [HELD]);
});

Mode("an unreadable environment (an audit from outside, docker exec) with a spawner beside the capless service is separated, judged by the spawner; control: without one it is single-uid", () => {
  const verdict = classifyMode(creds(1000, 0n), unreadable, ids, true);
  assert.is(verdict.mode, "separated");
  assert.match(verdict.reasons[0]!, /not verified .*; judged by the spawner beside the service$/);
  assert.is(classifyMode(creds(1000, 0n), unreadable, ids, false).mode, "single-uid");
});

Mode("a service running as root is misconfigured", () => {
  assert.is(classifyMode(creds(0, 0x1cbn), serviceEnv, ids).mode, "misconfigured");
});

Mode("the marker with a capability held (ADR 0272's shape, or a bounding set alone) is misconfigured, naming the sets", () => {
  assert.equal(classifyMode(creds(1000, C0), serviceEnv, ids).reasons, [HELD]);
  assert.equal(classifyMode(creds(1000, 0n, true, C0), serviceEnv, ids).reasons, ["the service holds capabilities (CapBnd not 0): it must hold none, the spawner starts agent work"]);
});

Mode("the capabilities without the marker, without NoNewPrivs, or with extra capabilities are misconfigured", () => {
  assert.equal(classifyMode(creds(1000, C0), { ok: true, value: {} }, ids).reasons.slice(0, 1), ['CLANKIE_SEPARATION is not set, want "1"']);
  assert.equal(classifyMode(creds(1000, 0n, false), serviceEnv, ids).reasons, ["NoNewPrivs is 0"]);
  assert.equal(classifyMode(creds(1000, C0 | 1n), serviceEnv, ids).reasons, [HELD]);
});

Mode("CLANKIE_AGENT_* that disagree with /etc/passwd are misconfigured", () => {
  const env = { ok: true as const, value: { ...serviceEnv.value, CLANKIE_AGENT_UID: "1000" } };
  assert.equal(classifyMode(creds(1000, 0n), env, ids).reasons, ['CLANKIE_AGENT_UID is "1000", want "1001"']);
});

Mode("a service of another uid is misconfigured", () => {
  assert.match(classifyMode(creds(1005, C0), serviceEnv, ids).reasons.join(), /uids 1005,1005,1005,1005, want 1000 \(node\)/);
});

Mode("the mode check: separated passes, single-uid warns, misconfigured fails, each with the launch flags as fix", () => {
  assert.is(judgeMode({ mode: "separated", reasons: [], marker: "1" }, 14).status, "pass");
  const single = judgeMode({ mode: "single-uid", reasons: ["no agent uid is configured"], marker: null }, 1);
  assert.equal([single.status, single.summary], ["warn", "single-uid: no agent uid is configured; model-directed work runs as node, as today"]);
  const bad = judgeMode({ mode: "misconfigured", reasons: ["NoNewPrivs is 0"], marker: "1" }, 14);
  assert.equal([bad.status, bad.summary], ["fail", "misconfigured: NoNewPrivs is 0"]);
  assert.match(bad.fix!, /--security-opt no-new-privileges/);
});

const Boundary = suite("boundaryOf");

Boundary("the boundary check passes only when declared; it never fails", () => {
  assert.is(judgeBoundary({ label: "b", declared: true, source: "s" }, true).status, "pass");
  const notYet = judgeBoundary({ label: NOT_YET, declared: false, source: "s" }, true);
  assert.equal([notYet.status, notYet.summary], ["warn", `${NOT_YET} (s)`]);
  assert.match(notYet.fix!, /CLANKIE_BOUNDARY=complete/);
  assert.is(judgeBoundary({ label: "no boundary", declared: false, source: null }, false).fix, null);
});

Boundary("separated without a declaration: not a boundary yet", () => {
  const b = boundaryOf("separated", { pid: 14, environ: serviceEnv }, { env: {}, handedDownByService: false });
  assert.equal(b, { label: NOT_YET, declared: false, source: "no CLANKIE_BOUNDARY=complete in the environment of pid 14" });
  assert.is(NOT_YET, "not a boundary yet: workers still run as node");
});

Boundary("the service's own environment declares it", () => {
  const environ = { ok: true as const, value: { ...serviceEnv.value, CLANKIE_BOUNDARY: "complete" } };
  const b = boundaryOf("separated", { pid: 14, environ }, { env: {}, handedDownByService: false });
  assert.is(b.declared, true);
  assert.is(b.source, "CLANKIE_BOUNDARY in the environment of pid 14");
});

Boundary("doctor's environment counts only when the service handed it down", () => {
  const handed = boundaryOf("separated", { pid: 14, environ: serviceEnv }, { env: { CLANKIE_BOUNDARY: "complete" }, handedDownByService: true });
  assert.is(handed.declared, true);
  const foreign = boundaryOf("separated", { pid: 14, environ: serviceEnv }, { env: { CLANKIE_BOUNDARY: "complete" }, handedDownByService: false });
  assert.is(foreign.declared, false);
});

Boundary("any other value is no declaration", () => {
  const environ = { ok: true as const, value: { ...serviceEnv.value, CLANKIE_BOUNDARY: "yes" } };
  assert.is(boundaryOf("separated", { pid: 14, environ }, { env: {}, handedDownByService: false }).declared, false);
});

Boundary("an unreadable declaration is unknown, still labelled not a boundary", () => {
  const b = boundaryOf("separated", { pid: 14, environ: unreadable }, { env: {}, handedDownByService: false });
  assert.is(b.declared, null);
  assert.is(b.label, NOT_YET);
  assert.match(b.source!, /EACCES/);
});

Boundary("single-uid and misconfigured bodies have no boundary, whatever they declare", () => {
  const environ = { ok: true as const, value: { CLANKIE_BOUNDARY: "complete" } };
  assert.is(boundaryOf("single-uid", { pid: 1, environ }, { env: {}, handedDownByService: false }).label, "no boundary: single-uid body, no agent uid is configured");
  assert.is(boundaryOf("misconfigured", { pid: 1, environ }, { env: {}, handedDownByService: false }).declared, false);
});


Mode.run();
Boundary.run();
