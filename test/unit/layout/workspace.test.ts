import { test } from "uvu";
import * as assert from "uvu/assert";
import { workspaceModes } from "../../../src/layout/workspace.ts";
import { assertModes, octal } from "../../helpers/modes.ts";

test("directory: group rwx and set-group-ID added, set-user-ID removed, sticky and other bits kept", () => {
  assertModes(workspaceModes.directory, "0755>2775 0700>2770 0000>2070 2775>2775 4755>2775 1777>3777 7777>3777 0750>2770");
});

test("file: group read/write, group execute when the owner may execute, set-id and sticky removed", () => {
  assertModes(workspaceModes.file, "0644>0664 0600>0660 0755>0775 0700>0770 4755>0775 2755>0775 1644>0664 0000>0060 0611>0671 0601>0661");
});

test("other (fifo, socket): group read/write, set-id and sticky removed, no execute added", () => {
  assertModes(workspaceModes.other, "0600>0660 0644>0664 0700>0760 4755>0775 0000>0060");
});

test("no file rule leaves a set-user-ID or set-group-ID bit; every rule gives the group read and write", () => {
  for (let mode = 0; mode <= 0o7777; mode++) {
    for (const rule of [workspaceModes.file, workspaceModes.other]) assert.is(rule(mode) & 0o7000, 0, octal(mode));
    for (const rule of [workspaceModes.file, workspaceModes.other, workspaceModes.directory]) assert.is(rule(mode) & 0o060, 0o060, octal(mode));
    assert.is(workspaceModes.directory(mode) & 0o6070, 0o2070, octal(mode));
  }
});

test.run();
