import { test } from "uvu";
import * as assert from "uvu/assert";
import { workspaceModes } from "../../../src/layout/workspace.ts";

const octal = (mode: number): string => mode.toString(8).padStart(4, "0");

function table(rule: (mode: number) => number, cases: ReadonlyArray<readonly [number, number]>): void {
  for (const [from, to] of cases) assert.is(octal(rule(from)), octal(to), `${octal(from)} -> ${octal(to)}`);
}

test("directory: group rwx and set-group-ID added, set-user-ID removed, sticky and other bits kept", () => {
  table(workspaceModes.directory, [
    [0o755, 0o2775],
    [0o700, 0o2770],
    [0o000, 0o2070],
    [0o2775, 0o2775],
    [0o4755, 0o2775],
    [0o1777, 0o3777],
    [0o7777, 0o3777],
    [0o750, 0o2770],
  ]);
});

test("file: group read/write, group execute when the owner may execute, set-id and sticky removed", () => {
  table(workspaceModes.file, [
    [0o644, 0o664],
    [0o600, 0o660],
    [0o755, 0o775],
    [0o700, 0o770],
    [0o4755, 0o775],
    [0o2755, 0o775],
    [0o1644, 0o664],
    [0o000, 0o060],
    [0o611, 0o671],
    [0o601, 0o661],
  ]);
});

test("other (fifo, socket): group read/write, set-id and sticky removed, no execute added", () => {
  table(workspaceModes.other, [
    [0o600, 0o660],
    [0o644, 0o664],
    [0o700, 0o760],
    [0o4755, 0o775],
    [0o000, 0o060],
  ]);
});

test("no file rule leaves a set-user-ID or set-group-ID bit; every rule gives the group read and write", () => {
  for (let mode = 0; mode <= 0o7777; mode++) {
    for (const rule of [workspaceModes.file, workspaceModes.other]) assert.is(rule(mode) & 0o7000, 0, octal(mode));
    for (const rule of [workspaceModes.file, workspaceModes.other, workspaceModes.directory]) assert.is(rule(mode) & 0o060, 0o060, octal(mode));
    assert.is(workspaceModes.directory(mode) & 0o6070, 0o2070, octal(mode));
  }
});

test.run();
