/*
 * The verdict on the stand-in service's "children" mode, shared by the
 * sandbox and the image test. Beyond ADR 0272 (which has the service hold
 * SETUID and SETGID, ambient, for its whole life), the root phase leaves the
 * service with no capability in any set, the bounding set included, and
 * NoNewPrivs; the resident spawner beside it holds SETUID and SETGID. So no
 * child of the service holds a capability, by whatever route it starts
 * (systemExec, child_process, plain execa), setpriv cannot make one root,
 * setuid(2) fails inside the service itself, execa's node/nodePath are
 * refused before anything starts, and a raw request on the service's channel
 * cannot hide a chain of its own behind NUL-ended fields.
 */
import * as assert from "uvu/assert";

export interface ChildView {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export interface Children {
  service: string;
  setids: Record<string, string>;
  nodePath: { systemExec: string; runSelfCheck: string; plantedRan: string | null };
  plantedFields: { sent: number | null; ran: string | null };
  spawnerSeen: string | null;
  systemExec: ChildView;
  plain: ChildView;
  execa: ChildView;
  systemExecSeen: { pid: number; ppid: number; status: string };
  plainSeen: { pid: number; ppid: number; status: string };
}

const capLine = (text: string, name: string): string => new RegExp(`^${name}:\\s*([0-9a-f]+)$`, "m").exec(text)?.[1] ?? `no ${name} line`;
const SETUID_SETGID = "00000000000000c0";
const NONE = "0000000000000000";
const ALL_SETS = ["CapInh", "CapPrm", "CapEff", "CapAmb", "CapBnd"];

/** No child of the service holds a capability or becomes root, by any route; the service cannot setuid(2); execa's node options are refused; control: the spawner holds SETUID+SETGID. */
export function judgeChildren(c: Children): void {
  // The service itself: nothing in any set, NoNewPrivs (its /proc/self/status).
  for (const set of ALL_SETS) assert.is(capLine(c.service, set), NONE, `the service's ${set}: ${c.service}`);
  assert.match(c.service, /^NoNewPrivs:\s*1$/m);
  assert.equal(c.setids, { "setuid(0)": "EPERM", "setuid(1001)": "EPERM", "setgid(0)": "EPERM" }, "setuid(2)/setgid(2) from inside the service");
  // execa's node: true with a planted nodePath: refused, and the planted program never ran.
  for (const where of ["systemExec", "runSelfCheck"] as const) {
    assert.is(c.nodePath[where], `refused 64: ${where}: the node option is not accepted: this package starts only the program it names, as it names it`, where);
  }
  assert.is(c.nodePath.plantedRan, null, "the planted nodePath ran");
  // A raw request on the service's channel whose socket name hides a chain of its own behind NULs: sent, and the chain never ran (the spawner refuses it, 64).
  assert.equal(c.plantedFields, { sent: 0, ran: null }, "the chain planted behind NUL-ended fields ran");
  // Every child, by every route: no capability, and setpriv to root fails (util-linux setpriv exits 127 when a credential call fails).
  for (const [how, view] of [["systemExec", c.systemExec], ["child_process", c.plain], ["execa", c.execa]] as const) {
    for (const set of ALL_SETS) assert.is(capLine(view.stdout, set), NONE, `${how} ${set}: ${view.stdout}`);
    assert.match(view.stdout, /^NoNewPrivs:\s*1$/m, how);
    assert.match(view.stdout, /^Uid:\s*1000\s+1000\s+1000\s+1000$/m, how);
    assert.match(view.stdout, /^setpriv=127$/m, `${how}: ${view.stdout}${view.stderr}`);
    assert.match(view.stderr, /^setpriv: setresuid failed: Operation not permitted$/m, how);
    assert.not.match(view.stdout, /^0$/m, how);
  }
  // The service's view of running children: their own pid (setpriv exec'd in place for systemExec), nothing held.
  assert.match(c.systemExecSeen.status, /^Name:\s*sleep$/m);
  for (const [how, seen] of [["systemExec", c.systemExecSeen], ["child_process", c.plainSeen]] as const) {
    for (const set of ALL_SETS) assert.is(capLine(seen.status, set), NONE, `${how} ${set} seen from the service: ${seen.status}`);
  }
  // Control: the capabilities are in the body, the spawner's (exactly SETUID and SETGID), out of the service's reach.
  assert.ok(c.spawnerSeen !== null, "no spawner runs beside the service");
  for (const set of ["CapPrm", "CapEff"]) assert.is(capLine(c.spawnerSeen!, set), SETUID_SETGID, `the spawner's ${set}: ${c.spawnerSeen}`);
}
