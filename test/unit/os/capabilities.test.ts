import { test } from "uvu";
import * as assert from "uvu/assert";
import { CAPABILITY_NAMES, capabilityBit, maskOf, namesOf, setprivCapList } from "../../../src/os/capabilities.ts";
import { ROOT_CAPABILITIES, SPAWNER_CAPABILITIES } from "../../../src/constants.ts";

// Bit numbers from linux/capability.h, written out independently of src/.
const KERNEL_BITS: ReadonlyArray<readonly [string, number]> = [
  ["CHOWN", 0],
  ["DAC_OVERRIDE", 1],
  ["DAC_READ_SEARCH", 2],
  ["FOWNER", 3],
  ["FSETID", 4],
  ["KILL", 5],
  ["SETGID", 6],
  ["SETUID", 7],
  ["SETPCAP", 8],
  ["NET_BIND_SERVICE", 10],
  ["NET_RAW", 13],
  ["SYS_CHROOT", 18],
  ["SYS_PTRACE", 19],
  ["SYS_ADMIN", 21],
  ["MKNOD", 27],
  ["AUDIT_WRITE", 29],
  ["SETFCAP", 31],
  ["MAC_OVERRIDE", 32],
  ["SYSLOG", 34],
  ["AUDIT_READ", 37],
  ["PERFMON", 38],
  ["BPF", 39],
  ["CHECKPOINT_RESTORE", 40],
];

test("capabilityBit: the bit numbers of linux/capability.h", () => {
  for (const [name, bit] of KERNEL_BITS) assert.is(capabilityBit(name), bit, name);
  assert.is(CAPABILITY_NAMES.length, 41);
});

test("capabilityBit: accepts the CAP_ prefix and any case", () => {
  for (const spelling of ["SETUID", "setuid", "CAP_SETUID", "cap_setuid", "Cap_SetUid"]) {
    assert.is(capabilityBit(spelling), 7, spelling);
  }
});

test("capabilityBit: refuses unknown names", () => {
  for (const name of ["", "SETUIDX", "CAP_", "ALL", "CAP_CAP_SETUID", " SETUID"]) {
    assert.throws(() => capabilityBit(name), (error: Error) => error.message === `unknown capability ${name}`, JSON.stringify(name));
  }
});

test("maskOf: the launcher's six and the service's two, as the kernel prints them", () => {
  // CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, SETGID 6, SETUID 7, SETPCAP 8
  assert.is(maskOf(ROOT_CAPABILITIES), 0x1cbn);
  // /proc/<pid>/status of a process holding SETUID and SETGID shows 00000000000000c0
  assert.is(maskOf(SPAWNER_CAPABILITIES), 0xc0n);
  assert.is(maskOf([]), 0n);
  assert.is(maskOf(["CHECKPOINT_RESTORE"]), 1n << 40n);
  assert.is(maskOf(["setuid", "SETUID", "cap_setuid"]), 0x80n);
});

test("maskOf: one unknown name fails the whole mask", () => {
  assert.throws(() => maskOf(["SETUID", "SETUIDD"]), /unknown capability SETUIDD/);
});

test("namesOf: names in bit order, unknown bits by number", () => {
  const cases: ReadonlyArray<readonly [bigint, string[]]> = [
    [0n, []],
    [0xc0n, ["SETGID", "SETUID"]],
    [0x1cbn, ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "SETPCAP"]],
    [1n << 40n, ["CHECKPOINT_RESTORE"]],
    [1n << 41n, ["CAP_41"]],
    [(1n << 63n) | 1n, ["CHOWN", "CAP_63"]],
    // the kernel prints 64 bits: nothing above bit 63 is named
    [1n << 64n, []],
  ];
  for (const [mask, names] of cases) assert.equal(namesOf(mask), names, mask.toString(16));
});

test("namesOf: a full mask names every capability, then the unknown high bits", () => {
  const names = namesOf(0xffffffffffffffffn);
  assert.is(names.length, 64);
  assert.equal(names.slice(0, 41), [...CAPABILITY_NAMES]);
  assert.is(names[41], "CAP_41");
  assert.is(names[63], "CAP_63");
});

test("namesOf and maskOf are inverse for known capabilities", () => {
  for (const mask of [0n, 0xc0n, 0x1cbn, 0x1ffffffffffn, 0xa5a5a5a5an]) {
    assert.is(maskOf(namesOf(mask)), mask, mask.toString(16));
  }
});

test("setprivCapList: the spelling setpriv(1) takes", () => {
  assert.is(setprivCapList(SPAWNER_CAPABILITIES), "-all,+setuid,+setgid");
  assert.is(setprivCapList([]), "-all");
  assert.is(setprivCapList(["DAC_OVERRIDE"]), "-all,+dac_override");
});

test.run();
