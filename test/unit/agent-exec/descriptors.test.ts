import { closeSync, openSync, readFileSync } from "node:fs";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { listDescriptors, type OpenDescriptor, parseFdinfoFlags, strayDescriptors } from "../../../src/agent-exec/descriptors.ts";

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

test("parseFdinfoFlags: reads what the kernel writes for a close-on-exec fd of this process", () => {
  const fd = openSync("/dev/null", "r"); // Node opens every fd with O_CLOEXEC
  try {
    const flags = parseFdinfoFlags(readFileSync(`/proc/self/fdinfo/${fd}`, "latin1"));
    assert.ok(flags !== undefined);
    assert.is(flags & O_CLOEXEC, O_CLOEXEC);
    assert.ok(listDescriptors().some((d) => d.fd === fd && d.cloexec));
  } finally {
    closeSync(fd);
  }
});

test("strayDescriptors: only fds above 2, without close-on-exec, not asked for", () => {
  const open: OpenDescriptor[] = [
    { fd: 0, cloexec: false },
    { fd: 1, cloexec: false },
    { fd: 2, cloexec: false },
    { fd: 3, cloexec: false },
    { fd: 4, cloexec: true },
    { fd: 5, cloexec: false },
    { fd: 17, cloexec: false },
    { fd: 20, cloexec: false },
    { fd: 21, cloexec: true },
  ];
  const cases: ReadonlyArray<readonly [number[], number[]]> = [
    [[], [3, 5, 17, 20]],
    [[17], [3, 5, 20]],
    [[17, 20, 5, 3], []],
    [[4, 21], [3, 5, 17, 20]],
    [[99], [3, 5, 17, 20]],
  ];
  for (const [keep, stray] of cases) assert.equal(strayDescriptors(open, keep), stray, `keep ${keep.join(",")}`);
  assert.equal(strayDescriptors([], []), []);
  assert.equal(strayDescriptors(open.slice(0, 3), []), []);
});

test.run();
