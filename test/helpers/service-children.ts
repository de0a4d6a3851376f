/*
 * The verdict on the stand-in service's "children" mode, shared by the
 * sandbox and the image test. The service runs with SETUID and SETGID in its
 * ambient set (ADR 0272), and capabilities(7) carries the ambient set across
 * execve(2): a plain child holds them, and setpriv makes it root.
 * systemExec's children hold nothing, and cannot.
 */
import * as assert from "uvu/assert";

export interface ChildView {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export interface Children {
  service: string;
  systemExec: ChildView;
  plain: ChildView;
  execa: ChildView;
  systemExecSeen: { pid: number; ppid: number; status: string };
  plainSeen: { pid: number; ppid: number; status: string };
}

const capLine = (text: string, name: string): string => new RegExp(`^${name}:\\s*([0-9a-f]+)$`, "m").exec(text)?.[1] ?? `no ${name} line`;
const SETUID_SETGID = "00000000000000c0";
const NONE = "0000000000000000";

/** A systemExec child holds no capability and cannot become root; the controls (child_process, plain execa) hold SETUID+SETGID and become uid 0. */
export function judgeChildren(c: Children): void {
  assert.is(capLine(c.service, "CapAmb"), SETUID_SETGID, `the service itself: ${c.service}`);
  // The child's own /proc/self/status, and its try at root.
  for (const set of ["CapInh", "CapPrm", "CapEff", "CapAmb"]) assert.is(capLine(c.systemExec.stdout, set), NONE, `${set}: ${c.systemExec.stdout}`);
  assert.is(capLine(c.systemExec.stdout, "CapBnd"), SETUID_SETGID, "the bounding set stays: NoNewPrivs keeps it out of reach");
  assert.match(c.systemExec.stdout, /^NoNewPrivs:\s*1$/m);
  assert.match(c.systemExec.stdout, /^Uid:\s*1000\s+1000\s+1000\s+1000$/m);
  assert.match(c.systemExec.stdout, /^setpriv=127$/m); // util-linux setpriv exits 127 when a credential call fails
  assert.match(c.systemExec.stderr, /^setpriv: setresuid failed: Operation not permitted$/m);
  assert.not.match(c.systemExec.stdout, /^0$/m);
  // The service's view of a running systemExec child: its own pid (setpriv exec'd in place), nothing held.
  assert.match(c.systemExecSeen.status, /^Name:\s*sleep$/m);
  for (const set of ["CapInh", "CapPrm", "CapEff", "CapAmb"]) assert.is(capLine(c.systemExecSeen.status, set), NONE, `${set} seen from the service: ${c.systemExecSeen.status}`);
  // Controls: child_process and plain execa, same service, same moment.
  for (const [how, view] of [["child_process", c.plain], ["execa", c.execa]] as const) {
    for (const set of ["CapPrm", "CapEff", "CapAmb"]) assert.is(capLine(view.stdout, set), SETUID_SETGID, `${how} ${set}: ${view.stdout}`);
    assert.match(view.stdout, /^0\nsetpriv=0$/m, `${how}: ${view.stdout}${view.stderr}`);
  }
  assert.is(capLine(c.plainSeen.status, "CapAmb"), SETUID_SETGID, c.plainSeen.status);
}
