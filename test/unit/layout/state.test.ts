import { test } from "uvu";
import * as assert from "uvu/assert";
import { stateModes } from "../../../src/layout/state.ts";

const octal = (mode: number): string => mode.toString(8).padStart(4, "0");

function table(rule: (mode: number) => number, cases: ReadonlyArray<readonly [number, number]>): void {
  for (const [from, to] of cases) assert.is(octal(rule(from)), octal(to), `${octal(from)} -> ${octal(to)}`);
}

test("fixed modes: /state traversable but not listable, the release root 0755, the agent's home 0700", () => {
  assert.is(octal(stateModes.top()), "0711");
  assert.is(octal(stateModes.releaseRoot()), "0755");
  assert.is(octal(stateModes.agentHome()), "0700");
});

test("private: the owner's bits only; group, other, set-id and sticky bits go", () => {
  table(stateModes.private, [
    [0o600, 0o600],
    [0o644, 0o600],
    [0o666, 0o600],
    [0o777, 0o700],
    [0o755, 0o700],
    [0o4755, 0o700],
    [0o2775, 0o700],
    [0o1777, 0o700],
    [0o7777, 0o700],
    [0o000, 0o000],
    [0o070, 0o000],
    [0o400, 0o400],
  ]);
});

test("release: other may read and execute what group or other could already, never what only the owner could; only the owner writes", () => {
  table(stateModes.release, [
    // what the release keeps private stays private
    [0o600, 0o600],
    [0o700, 0o700],
    [0o400, 0o400],
    [0o000, 0o000],
    // unpacked under umask 0022: unchanged
    [0o644, 0o644],
    [0o755, 0o755],
    [0o555, 0o555],
    // written by the service under its umask 0007: the group's bits are shared with other
    [0o660, 0o644],
    [0o770, 0o755],
    [0o640, 0o644],
    [0o750, 0o755],
    // other's own bits are shared with the group too (the group is node's)
    [0o604, 0o644],
    [0o705, 0o755],
    // execute without read stays execute without read
    [0o611, 0o611],
    [0o711, 0o711],
    // write, set-id and sticky bits go
    [0o666, 0o644],
    [0o777, 0o755],
    [0o4755, 0o755],
    [0o6755, 0o755],
    [0o1777, 0o755],
    [0o2770, 0o755],
  ]);
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
