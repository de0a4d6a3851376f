import { test } from "uvu";
import * as assert from "uvu/assert";
import { stateModes } from "../../../src/entrypoint/state-layout.ts";

const octal = (mode: number): string => mode.toString(8).padStart(4, "0");

function table(rule: (mode: number) => number, cases: ReadonlyArray<readonly [number, number]>): void {
  for (const [from, to] of cases) assert.is(octal(rule(from)), octal(to), `${octal(from)} -> ${octal(to)}`);
}

test("fixed modes: /state traversable but not listable, release directories 0755, the agent's home 0700", () => {
  assert.is(octal(stateModes.top()), "0711");
  assert.is(octal(stateModes.releaseDirectory()), "0755");
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

test("release file: readable by all, executable by all when the owner may execute, writable by the owner only", () => {
  table(stateModes.releaseFile, [
    [0o600, 0o644],
    [0o644, 0o644],
    [0o666, 0o644],
    [0o700, 0o755],
    [0o755, 0o755],
    [0o777, 0o755],
    [0o4755, 0o755],
    [0o6755, 0o755],
    [0o1755, 0o755],
    [0o400, 0o444],
    [0o500, 0o555],
    [0o000, 0o044],
    // group or other execute alone does not make it executable for all
    [0o611, 0o644],
  ]);
});

test("no rule ever leaves a set-user-ID, set-group-ID, or group/other write bit", () => {
  for (let mode = 0; mode <= 0o7777; mode++) {
    for (const rule of [stateModes.private, stateModes.releaseFile]) {
      const result = rule(mode);
      assert.is(result & 0o7022, 0, `${octal(mode)} -> ${octal(result)}`);
    }
  }
});

test.run();
