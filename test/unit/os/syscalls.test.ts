/* src/os/syscalls.ts: the system call numbers perl calls by. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { syscallNumbers } from "../../../src/os/syscalls.ts";

test("the numbers perl calls by: one set per architecture, none guessed", () => {
  assert.is(syscallNumbers("x64").landlockCreateRuleset, 444);
  assert.is(syscallNumbers("arm64").ioctl, 29);
  assert.throws(() => syscallNumbers("mips"), /no system call numbers for mips/);
});

test.run();
