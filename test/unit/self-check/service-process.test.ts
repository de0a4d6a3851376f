/* process.ids, process.capabilities, process.no-new-privs: the judged service's credentials against the mode. Pure, no privileges. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { formatMask, judgeCapabilities, judgeNoNewPrivs, judgeProcessIds } from "../../../src/self-check/service-process.ts";
import { ids, C0, creds } from "../../helpers/self-check-fixtures.ts";

const Process = suite("process checks");

Process("formatMask: 0x and 16 lowercase hex digits", () => {
  assert.is(formatMask(0n), "0x0000000000000000");
  assert.is(formatMask(0xc0n), "0x00000000000000c0");
  assert.is(formatMask(0x1ffffffffffn), "0x000001ffffffffff");
  assert.is(formatMask(0xffffffffffffffffn), "0xffffffffffffffff");
});

Process("separated: node's ids and groups, no capability in any set (the bounding set too), NoNewPrivs; ADR 0272's SETUID and SETGID fail", () => {
  const judged = { pid: 14, name: "node", creds: creds(1000, 0n, { groups: [1000, 1002] }) };
  assert.is(judgeProcessIds(judged, ids, "separated").status, "pass");
  const caps = judgeCapabilities(judged, "separated");
  assert.is(caps.status, "pass", caps.summary);
  assert.equal((caps.found.sets as any).CapBnd, { mask: "0x0000000000000000", names: [] });
  assert.is(judgeNoNewPrivs(judged, "separated").status, "pass");
  const adr = judgeCapabilities({ ...judged, creds: creds(1000, C0, { groups: [1000, 1002] }) }, "separated");
  assert.is(adr.status, "fail");
  assert.match(adr.summary, /CapInh SETGID,SETUID; .*CapBnd SETGID,SETUID \(want no capability in any set: the spawner starts agent work\)/);
});

Process("separated: a missing group, an extra capability, no NoNewPrivs each fail with a fix", () => {
  const ids1 = judgeProcessIds({ pid: 14, name: "node", creds: creds(1000, C0, { groups: [1000] }) }, ids, "separated");
  assert.is(ids1.status, "fail");
  assert.match(ids1.summary, /groups 1000 \(want 1000,1002\)/);
  const caps = judgeCapabilities({ pid: 14, name: "node", creds: creds(1000, C0 | (1n << 21n)) }, "separated");
  assert.is(caps.status, "fail");
  assert.match(caps.summary, /CapInh SETGID,SETUID,SYS_ADMIN/);
  assert.match(caps.fix!, /--cap-drop ALL/);
  const nnp = judgeNoNewPrivs({ pid: 14, name: "node", creds: creds(1000, C0, { nnp: false }) }, "separated");
  assert.is(nnp.status, "fail");
  assert.match(nnp.fix!, /no-new-privileges/);
});

Process("single-uid: no capability passes; a bounding set or no NoNewPrivs warns; a held capability fails; root fails", () => {
  assert.is(judgeCapabilities({ pid: 1, name: "node", creds: creds(1000, 0n, { bnd: 0n }) }, "single-uid").status, "pass");
  assert.is(judgeCapabilities({ pid: 1, name: "node", creds: creds(1000, 0n, { bnd: C0 }) }, "single-uid").status, "warn");
  assert.is(judgeCapabilities({ pid: 1, name: "node", creds: creds(1000, 1n << 10n) }, "single-uid").status, "fail");
  assert.is(judgeNoNewPrivs({ pid: 1, name: "node", creds: creds(1000, 0n, { nnp: false }) }, "single-uid").status, "warn");
  assert.is(judgeProcessIds({ pid: 1, name: "node", creds: creds(0, 0n) }, ids, "single-uid").status, "fail");
  assert.is(judgeProcessIds({ pid: 1, name: "node", creds: creds(1000, 0n) }, ids, "single-uid").status, "pass");
});

Process.run();
