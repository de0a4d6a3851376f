import { test } from "uvu";
import * as assert from "uvu/assert";
import { stateModes } from "../../../src/layout/state.ts";
import { assertModes, octal } from "../../helpers/modes.ts";

test("fixed modes: /state traversable but not listable, the release root 0755, the agent's home 0700", () => {
  assert.is(octal(stateModes.top()), "0711");
  assert.is(octal(stateModes.releaseRoot()), "0755");
  assert.is(octal(stateModes.agentHome()), "0700");
});

test("private: the owner's bits only; group, other, set-id and sticky bits go", () => {
  assertModes(stateModes.private, "0600>0600 0644>0600 0666>0600 0777>0700 0755>0700 4755>0700 2775>0700 1777>0700 7777>0700 0000>0000 0070>0000 0400>0400");
});

test("release: other may read and execute what group or other could already, never what only the owner could; only the owner writes", () => {
  // what the release keeps private stays private
  assertModes(stateModes.release, "0600>0600 0700>0700 0400>0400 0000>0000");
  // unpacked under umask 0022: unchanged
  assertModes(stateModes.release, "0644>0644 0755>0755 0555>0555");
  // written by the service under its umask 0007: the group's bits are shared with other
  assertModes(stateModes.release, "0660>0644 0770>0755 0640>0644 0750>0755");
  // other's own bits are shared with the group too (the group is node's)
  assertModes(stateModes.release, "0604>0644 0705>0755");
  // execute without read stays execute without read
  assertModes(stateModes.release, "0611>0611 0711>0711");
  // write, set-id and sticky bits go
  assertModes(stateModes.release, "0666>0644 0777>0755 4755>0755 6755>0755 1777>0755 2770>0755");
});

test("release: a second pass changes nothing (the walk and the audit agree on what is wanted)", () => {
  for (let mode = 0; mode <= 0o7777; mode++) {
    const once = stateModes.release(mode);
    assert.is(stateModes.release(once), once, octal(mode));
  }
});

test("release: never grants other a read or execute bit that neither group nor other had", () => {
  for (let mode = 0; mode <= 0o7777; mode++) {
    const result = stateModes.release(mode);
    assert.is(result & 0o007 & ~((mode >> 3) | mode), 0, `${octal(mode)} -> ${octal(result)}`);
  }
});

test("no rule ever leaves a set-user-ID, set-group-ID, or group/other write bit", () => {
  for (let mode = 0; mode <= 0o7777; mode++) {
    for (const rule of [stateModes.private, stateModes.release]) {
      const result = rule(mode);
      assert.is(result & 0o7022, 0, `${octal(mode)} -> ${octal(result)}`);
    }
  }
});

test.run();
