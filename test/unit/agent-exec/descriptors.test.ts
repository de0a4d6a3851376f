import { spawnSync } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { checkHandedDescriptor, closeStrayDescriptors, inheritableCandidates, listDescriptors, parseFdinfoFlags, readDescriptorFlags } from "../../../src/agent-exec/descriptors.ts";
import { EXIT } from "../../../src/constants.ts";
import { NODE24, REPO } from "../../helpers/paths.ts";
import { assertRefusal } from "../../helpers/refusal.ts";

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
    assert.is(readDescriptorFlags(fd), flags);
    assert.ok(listDescriptors().includes(fd));
  } finally {
    closeSync(fd);
  }
  assert.is(readDescriptorFlags(1000), undefined);
});

test("inheritableCandidates: fds from 16 up that are not kept", () => {
  const open = [0, 1, 2, 3, 4, 15, 16, 17, 20, 21];
  const cases: ReadonlyArray<readonly [number[], number[]]> = [
    [[], [16, 17, 20, 21]],
    [[17], [16, 20, 21]],
    [[17, 20, 16, 21], []],
    [[99], [16, 17, 20, 21]],
  ];
  for (const [keep, candidates] of cases) assert.equal(inheritableCandidates(open, keep), candidates, `keep ${keep.join(",")}`);
  assert.equal(inheritableCandidates([0, 1, 2, 3, 15], []), []);
});

test("checkHandedDescriptor: a kept fd or the started marker that is not open, or is close-on-exec, is refused (64)", () => {
  const cases = [
    { what: "--keep-fd N", thing: "the fd" },
    { what: "CLANKIE_STARTED_FD=N", thing: "the marker pipe" },
  ];
  for (const { what, thing } of cases) {
    const named = (fd: number) => what.replace("N", String(fd));
    assertRefusal(() => checkHandedDescriptor(1000, named(1000), thing), { exitCode: EXIT.usage, what: `${named(1000)}: fd 1000 is not open`, fix: `open ${thing} in the shim's parent before the spawn` });
    const fd = openSync("/dev/null", "r");
    try {
      assertRefusal(() => checkHandedDescriptor(fd, named(fd), thing), {
        exitCode: EXIT.usage,
        what: `${named(fd)}: fd ${fd} is close-on-exec here (Node 24 marks fds 0-15 so at start-up, and every open fd after them up to the first that is not open)`,
        fix: `hand ${thing} to the shim as fd 17 or higher, with fd 16 not open`,
      });
    } finally {
      closeSync(fd);
    }
  }
  assert.throws(() => closeStrayDescriptors([1000]), /--keep-fd 1000: fd 1000 is not open/, "closeStrayDescriptors checks every kept fd first");
  // and the started marker under its own name, before the kept fds
  assertRefusal(() => closeStrayDescriptors([1001], 1000), { exitCode: EXIT.usage, what: "CLANKIE_STARTED_FD=1000: fd 1000 is not open", fix: "open the marker pipe in the shim's parent before the spawn" });
});

/*
 * closeStrayDescriptors in a Node process of its own, started with /dev/null
 * inherited as fds 5, 20 and 21, none of them close-on-exec as they arrive.
 * It reports what it closed, then execs perl, which prints the fds it was
 * given (and the one it lists /proc/self/fd with, the lowest free number, 3).
 * The control does the same without the call: it shows that 20 and 21 would
 * cross the exec, and that 5 would not (Node marks fds below 16 close-on-exec
 * at start-up, which is why the shim need not read them).
 */
const CHILD = `
import { writeSync } from "node:fs";
import { closeStrayDescriptors } from ${JSON.stringify(join(REPO, "src/agent-exec/descriptors.ts"))};
writeSync(2, JSON.stringify(process.argv[1] === "close" ? closeStrayDescriptors([20]) : []));
process.execve("/usr/bin/perl", ["perl", "-e", 'opendir(my $d, "/proc/self/fd") or die; print join(",", sort { $a <=> $b } grep { /^[0-9]+$/ } readdir $d)'], {});
`;

function fdsAcrossExec(mode: string): { crossed: number[]; closed: number[] } {
  const devnull = openSync("/dev/null", "r");
  try {
    const stdio = ["ignore", "pipe", "pipe", "ignore", "ignore", devnull, ...Array(14).fill("ignore"), devnull, devnull];
    const result = spawnSync(NODE24, ["--input-type=module", "--import", join(REPO, "scripts/text-modules.mjs"), "-e", CHILD, mode], { encoding: "utf8", stdio: stdio as never });
    assert.is(result.status, 0, `child exited ${result.status ?? result.signal}: ${result.stderr}`);
    return { crossed: result.stdout.split(",").map(Number), closed: JSON.parse(result.stderr) as number[] };
  } finally {
    closeSync(devnull);
  }
}

test("closeStrayDescriptors: only 0-2 and the kept fd cross the exec; Node's own fds stay open until then", () => {
  // The control may show more: fds this test's own caller leaked without close-on-exec.
  const control = fdsAcrossExec("control");
  assert.ok(control.crossed.includes(20) && control.crossed.includes(21), `control: inherited fds 20 and 21 did not cross the exec, so the test proves nothing: ${control.crossed}`);
  assert.not.ok(control.crossed.includes(5), "inherited fd 5 crossed the exec: Node no longer marks fds below 16 close-on-exec, so the shim must read them too");
  const child = fdsAcrossExec("close");
  assert.equal(child.crossed, [0, 1, 2, 3, 20]);
  // It closed exactly what would have crossed (21, and any the caller leaked), none of Node's own.
  assert.equal(child.closed, control.crossed.filter((fd) => fd > 3 && fd !== 20));
});

test.run();
