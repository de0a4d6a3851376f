import { spawnSync } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { checkKeptDescriptors, listDescriptors, parseFdinfoFlags, strayDescriptors } from "../../../src/agent-exec/descriptors.ts";
import { EXIT } from "../../../src/constants.ts";
import { NODE24, REPO } from "../../helpers/paths.ts";
import { assertRefusal } from "../helpers/refusal.ts";

const O_CLOEXEC = 0o2000000;

test("parseFdinfoFlags: the octal flags field of /proc/<pid>/fdinfo/<fd>", () => {
  const fdinfo = (flags: string): string => `pos:\t0\nflags:\t${flags}\nmnt_id:\t25\nino:\t1234\n`;
  assert.is(parseFdinfoFlags(fdinfo("02100002")), 0o2100002);
  assert.is(parseFdinfoFlags(fdinfo("0100002")), 0o100002);
  assert.is(parseFdinfoFlags(fdinfo("00")), 0);
  assert.is(parseFdinfoFlags("flags: 02000000"), O_CLOEXEC);
  assert.ok((parseFdinfoFlags(fdinfo("02100002"))! & O_CLOEXEC) !== 0);
  assert.ok((parseFdinfoFlags(fdinfo("0100002"))! & O_CLOEXEC) === 0);
});

test("parseFdinfoFlags: no flags line, or a malformed one, is undefined", () => {
  for (const text of ["", "pos:\t0\nmnt_id:\t25\n", "flags:\t\n", "flags:\t0800\n", "flags:\t0x10\n", "flags:\t-1\n", "xflags:\t02\n", "flags:\t02 3\n", "Flags:\t02\n"]) {
    assert.is(parseFdinfoFlags(text), undefined, JSON.stringify(text));
  }
});

test("parseFdinfoFlags and listDescriptors: what the kernel shows for a close-on-exec fd of this process", () => {
  const fd = openSync("/dev/null", "r"); // Node opens every fd with O_CLOEXEC
  try {
    const flags = parseFdinfoFlags(readFileSync(`/proc/self/fdinfo/${fd}`, "latin1"));
    assert.ok(flags !== undefined);
    assert.is(flags & O_CLOEXEC, O_CLOEXEC);
    assert.ok(listDescriptors().includes(fd));
  } finally {
    closeSync(fd);
  }
});

test("strayDescriptors: every fd above 2 not asked for, close-on-exec or not", () => {
  const open = [0, 1, 2, 3, 4, 5, 17, 20, 21];
  const cases: ReadonlyArray<readonly [number[], number[]]> = [
    [[], [3, 4, 5, 17, 20, 21]],
    [[17], [3, 4, 5, 20, 21]],
    [[17, 20, 5, 3, 4, 21], []],
    [[99], [3, 4, 5, 17, 20, 21]],
  ];
  for (const [keep, stray] of cases) assert.equal(strayDescriptors(open, keep), stray, `keep ${keep.join(",")}`);
  assert.equal(strayDescriptors([], []), []);
  assert.equal(strayDescriptors([0, 1, 2], []), []);
});

test("checkKeptDescriptors: an fd that is not open, or is close-on-exec, is refused (64)", () => {
  assertRefusal(() => checkKeptDescriptors([1000]), { exitCode: EXIT.usage, what: "--keep-fd 1000: fd 1000 is not open", fix: "open it in the shim's parent before the spawn" });
  const fd = openSync("/dev/null", "r");
  try {
    assertRefusal(() => checkKeptDescriptors([fd]), {
      exitCode: EXIT.usage,
      what: `--keep-fd ${fd}: fd ${fd} is close-on-exec here (Node 24 marks inherited fds 3-16 so at start-up)`,
      fix: "hand the fd to the shim as fd 17 or higher",
    });
  } finally {
    closeSync(fd);
  }
  checkKeptDescriptors([]);
});

/*
 * closeStrayDescriptors in a Node process of its own, started with /dev/null
 * inherited as fds 3 (Node marks it close-on-exec at start-up) and 20 and 21
 * (left as they came: they would cross an exec). It then execs perl, which
 * prints the fds it was given (and the one it lists /proc/self/fd with, the
 * lowest free number, 3). The control does the same without the call.
 * After the call the process must exec: the fds of Node's own event loops
 * are closed too, and Node aborts if it goes back to its loop.
 */
const CHILD = `
import { closeStrayDescriptors } from ${JSON.stringify(join(REPO, "src/agent-exec/descriptors.ts"))};
if (process.argv[1] === "close") closeStrayDescriptors([20]);
process.execve("/usr/bin/perl", ["perl", "-e", 'opendir(my $d, "/proc/self/fd") or die; print join(",", sort { $a <=> $b } grep { /^[0-9]+$/ } readdir $d)'], {});
`;

function fdsAcrossExec(mode: string): string {
  const devnull = openSync("/dev/null", "r");
  try {
    const stdio = ["ignore", "pipe", "pipe", devnull, ...Array(16).fill("ignore"), devnull, devnull];
    const result = spawnSync(NODE24, ["--input-type=module", "--import", join(REPO, "scripts/text-modules.mjs"), "-e", CHILD, mode], { encoding: "utf8", stdio: stdio as never });
    assert.is(result.status, 0, `child exited ${result.status ?? result.signal}: ${result.stderr}`);
    assert.is(result.stderr, "");
    return result.stdout;
  } finally {
    closeSync(devnull);
  }
}

test("closeStrayDescriptors: only 0-2 and the kept fd cross the exec (3: perl's own listing)", () => {
  // The control may show more: fds this test's own caller leaked without close-on-exec.
  assert.ok(fdsAcrossExec("control").split(",").includes("21"), "control: inherited fd 21 did not cross the exec, so the test proves nothing");
  assert.is(fdsAcrossExec("close"), "0,1,2,3,20");
});

test.run();
