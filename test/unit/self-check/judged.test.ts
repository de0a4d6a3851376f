/* Which process stands for the body, and how the audit relates to it. Pure. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { ProcessCredentials } from "../../../src/os/proc-status.ts";
import type { ProcessEntry } from "../../../src/self-check/process-table.ts";
import { chooseJudged, handedDownByService, relationTo } from "../../../src/self-check/judged.ts";

const C0 = 0xc0n;

function creds(uid: number, caps: bigint, nnp = true, bnd = caps): ProcessCredentials {
  return { uids: [uid, uid, uid, uid], gids: [uid, uid, uid, uid], groups: [uid], capInh: caps, capPrm: caps, capEff: caps, capAmb: caps, capBnd: bnd, noNewPrivs: nnp };
}
function entry(pid: number, ppid: number, uid: number, name = "node", caps = 0n): ProcessEntry {
  return { pid, ppid, name, creds: creds(uid, caps) };
}

const Judged = suite("chooseJudged");

Judged("tini is passed over for the service under it; the audit below is a descendant", () => {
  const table = [entry(1, 0, 1000, "tini", C0), entry(14, 1, 1000, "MainThread", C0), entry(30, 14, 1000, "MainThread", C0)];
  const choice = chooseJudged(table, table[2]!, 1000);
  assert.is(choice.entry.pid, 14);
  assert.is(choice.reason, "the service: the first process of uid 1000 under pid 1");
  assert.is(relationTo(table, 30, 14), "descendant");
  assert.ok(handedDownByService(table, 30, 14, 1000));
});

Judged("the service is pid 1 when there is no tini", () => {
  const table = [entry(1, 0, 1000, "node", C0), entry(9, 0, 0, "MainThread", 0x1cbn)];
  const choice = chooseJudged(table, table[1]!, 1000);
  assert.is(choice.entry.pid, 1);
  assert.is(relationTo(table, 9, 1), "outside");
  assert.not.ok(handedDownByService(table, 9, 1, 1000));
});

Judged("breadth first: the service, not a deeper process of the same uid", () => {
  const table = [entry(1, 0, 0, "init"), entry(5, 1, 1000, "service"), entry(6, 1, 1001, "agent"), entry(7, 6, 1000, "deep")];
  assert.is(chooseJudged(table, table[0]!, 1000).entry.pid, 5);
});

Judged("a process of another uid between the audit and the service does not hand down", () => {
  const table = [entry(1, 0, 1000, "service"), entry(2, 1, 1001, "agent"), entry(3, 2, 1000, "audit")];
  assert.not.ok(handedDownByService(table, 3, 1, 1000));
});

Judged("no service process: the audit judges itself and says why", () => {
  const self = entry(1, 0, 0, "MainThread", 0x1cbn);
  const choice = chooseJudged([self], self, 1000);
  assert.is(choice.entry, self);
  assert.match(choice.reason, /no process of uid 1000 under pid 1; judged this audit's own process/);
  assert.match(chooseJudged([self], self, undefined).reason, /the service user is not defined/);
  assert.is(relationTo([self], 1, 1), "self");
});

Judged.run();
