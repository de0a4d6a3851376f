import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { parseStat, readSession } from "../../../src/os/proc-stat.ts";
import { parseStatus, readStatus } from "../../../src/os/proc-status.ts";
import { creds, SERVICE_CREDENTIALS } from "../../helpers/credentials.ts";

/** A /proc/<pid>/status as Linux 6.x prints it for the spawner (uid 1000, SETUID+SETGID). */
const SERVICE_STATUS = [
  "Name:\tnode",
  "Umask:\t0022",
  "State:\tS (sleeping)",
  "Tgid:\t41",
  "Pid:\t41",
  "PPid:\t1",
  "TracerPid:\t0",
  "Uid:\t1000\t1000\t1000\t1000",
  "Gid:\t1000\t1000\t1000\t1000",
  "FDSize:\t64",
  "Groups:\t1000 1002 ",
  "NStgid:\t41",
  "VmPeak:\t    3060 kB",
  "SigQ:\t0/96362",
  "SigBlk:\t0000000000000000",
  "CapInh:\t00000000000000c0",
  "CapPrm:\t00000000000000c0",
  "CapEff:\t00000000000000c0",
  "CapBnd:\t00000000000000c0",
  "CapAmb:\t00000000000000c0",
  "NoNewPrivs:\t1",
  "Seccomp:\t2",
  "Speculation_Store_Bypass:\tthread vulnerable",
  "Cpus_allowed_list:\t0-1",
  "",
].join("\n");

function withLine(name: string, value: string | undefined): string {
  const lines = SERVICE_STATUS.split("\n").filter((line) => !line.startsWith(`${name}:`));
  if (value !== undefined) lines.splice(5, 0, `${name}:${value}`);
  return lines.join("\n");
}

const SERVICE = SERVICE_CREDENTIALS;

test("parseStatus: the service's status", () => {
  assert.equal(parseStatus(SERVICE_STATUS), SERVICE);
});

test("parseStatus: root with a full set, empty Groups as the kernel prints it (tab, space)", () => {
  const text = [
    "Name:\tcat",
    "Uid:\t0\t0\t0\t0",
    "Gid:\t0\t0\t0\t0",
    "Groups:\t ",
    "CapInh:\t0000000000000000",
    "CapPrm:\t000001ffffffffff",
    "CapEff:\t000001ffffffffff",
    "CapBnd:\t000001ffffffffff",
    "CapAmb:\t0000000000000000",
    "NoNewPrivs:\t0",
  ].join("\n");
  assert.equal(parseStatus(text), { ...creds(0, 0x1ffffffffffn, { groups: [], nnp: false }), capInh: 0n, capAmb: 0n });
});

test("parseStatus: distinct real, effective, saved and filesystem ids keep their order", () => {
  const status = parseStatus(withLine("Uid", "\t1000\t0\t1001\t4294967294").replace("Gid:\t1000\t1000\t1000\t1000", "Gid:\t5\t6\t7\t8"));
  assert.equal(status.uids, [1000, 0, 1001, 4294967294]);
  assert.equal(status.gids, [5, 6, 7, 8]);
});

test("parseStatus: a comm containing a colon does not confuse the fields", () => {
  assert.equal(parseStatus(withLine("Name", "\tUid: 0 0 0 0")), SERVICE);
});

test("parseStatus: every field it needs must be present", () => {
  for (const name of ["Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"]) {
    assert.throws(() => parseStatus(withLine(name, undefined)), (error: Error) => error.message === `/proc status has no ${name} line`, name);
  }
  assert.throws(() => parseStatus(""), /^\/proc status has no /);
});

test("parseStatus: malformed uid and gid lines are refused with the line quoted", () => {
  const malformed = {
    Uid: ["\t1000\t1000\t1000", "\t10000000000\t1000\t1000\t1000", "\t1000\t4294967295\t1000\t1000", "\t1000\t1000\t1000\t1000\t1000", "\t-1\t1000\t1000\t1000", "\t1000\tx\t1000\t1000", "\t1000\t1000.5\t1000\t1000", ""],
    Gid: ["\t1000 1000 1000", "\tnode\tnode\tnode\tnode"],
  };
  for (const [name, value] of Object.entries(malformed).flatMap(([line, values]) => values.map((v) => [line, v] as const))) {
    assert.throws(
      () => parseStatus(withLine(name, value)),
      (error: Error) => error.message === `/proc status ${name} line is malformed: ${JSON.stringify(value)}`,
      `${name}:${JSON.stringify(value)}`,
    );
  }
});

test("parseStatus: malformed capability masks are refused", () => {
  const bad = ["", "\tc0", "\t0000000000000c0", "\t000000000000000c0", "\t00000000000000C0", "\t0x000000000000c0", "\t00000000000000g0", "\t0000000000000 c0"];
  for (const name of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) {
    for (const value of bad) {
      assert.throws(
        () => parseStatus(withLine(name, value)),
        (error: Error) => error.message === `/proc status ${name} line is malformed: ${JSON.stringify(value)}`,
        `${name}:${JSON.stringify(value)}`,
      );
    }
  }
});

test("parseStatus: malformed Groups and NoNewPrivs are refused", () => {
  for (const value of ["\t1000 x", "\t1000 -1", "\t1000,1002", "\t1.5"]) {
    assert.throws(() => parseStatus(withLine("Groups", value)), (error: Error) => error.message === "/proc status Groups line is malformed", value);
  }
  for (const value of ["", "\t2", "\tyes", "\t01", "\t-1"]) {
    assert.throws(() => parseStatus(withLine("NoNewPrivs", value)), (error: Error) => error.message === "/proc status NoNewPrivs line is malformed", value);
  }
});

test("readStatus: agrees with what Node knows of this process", () => {
  const status = readStatus();
  const uid = process.getuid!();
  const gid = process.getgid!();
  assert.is(status.uids[0], uid);
  assert.is(status.uids[1], process.geteuid!());
  assert.is(status.gids[0], gid);
  // Node adds the effective gid to getgroups(); the kernel's Groups line does not.
  const nodeGroups = new Set(process.getgroups!());
  nodeGroups.delete(process.getegid!());
  for (const group of nodeGroups) assert.ok(status.groups.includes(group), `group ${group}`);
  for (const group of status.groups) assert.ok(process.getgroups!().includes(group), `group ${group}`);
});

/* --------------------------------------------------------------- parseStat -- */

test("parseStat: pid, process group, session and controlling terminal", () => {
  const text = "18300 (cat) R 18295 18295 6763 34816 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 129726 3133440 383 18446744073709551615 0\n";
  assert.equal(parseStat(text), { pid: 18300, pgrp: 18295, session: 6763, ttyNr: 34816 });
});

test("parseStat: a comm with spaces and parentheses cannot shift the fields", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["a b", "a b"],
    [") S 9 9 9 9", "fake fields"],
    ["x) R 1 2 3 4 (", "close then open"],
    ["((", "open only"],
    [")", "a single close"],
    [" ", "a space"],
  ];
  for (const [comm, label] of cases) {
    const text = `77 (${comm}) S 1 77 77 0 -1 4194560 0 0 0 0\n`;
    assert.equal(parseStat(text), { pid: 77, pgrp: 77, session: 77, ttyNr: 0 }, label);
  }
});

test("readSession: agrees with the kernel for this process", () => {
  const session = readSession();
  assert.is(session.pid, process.pid);
  assert.ok(Number.isInteger(session.pgrp) && session.pgrp > 0);
  assert.ok(Number.isInteger(session.session) && session.session >= 0);
  assert.ok(Number.isInteger(session.ttyNr));
});

test("readSession and readStatus of a process whose name holds bytes that are not UTF-8 and a ')': the fields are the kernel's", async () => {
  const dir = mkdtempSync(join(tmpdir(), "clankie-comm-"));
  // The kernel names a process after the file it executed (comm): bytes ff e2 29 29 20 39 20 39 20 c3.
  const name = Buffer.from([0xff, 0xe2, 0x29, 0x29, 0x20, 0x39, 0x20, 0x39, 0x20, 0xc3]);
  symlinkSync("/bin/sleep", Buffer.concat([Buffer.from(`${dir}/`), name]));
  const child = spawn("/bin/sh", ["-c", String.raw`exec "$(printf '%s/\377\342)) 9 9 \303' "$0")" 5`, dir], { detached: true, stdio: "ignore" });
  try {
    let stat = Buffer.alloc(0);
    for (let i = 0; i < 200 && !stat.includes(name); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      stat = readFileSync(`/proc/${child.pid}/stat`);
    }
    assert.ok(stat.includes(name), "control failed: the process is not named after the link");
    assert.equal(readSession(child.pid!), { pid: child.pid!, pgrp: child.pid!, session: child.pid!, ttyNr: 0 });
    const uid = process.getuid!();
    assert.equal(readStatus(child.pid!).uids, [uid, uid, uid, uid]);
  } finally {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

test("parseStat refuses text it cannot parse instead of returning NaN", () => {
  assert.throws(() => parseStat("garbage"), /malformed/);
  assert.equal(parseStat("42 (a b) c) S 1 42 42 0 -1"), { pid: 42, pgrp: 42, session: 42, ttyNr: 0 });
});

test.run();
