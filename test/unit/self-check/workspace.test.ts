/* workspace.*: the top of /workspace and the layout marker. Pure, no privileges. */
import { type Stats } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { judgeWorkspaceDefaults, judgeWorkspaceMarker, judgeWorkspaceTop } from "../../../src/self-check/workspace.ts";
import type { AclWalk } from "../../../src/layout/state-acl.ts";
import { ids, stats, walkOf } from "../../helpers/self-check-fixtures.ts";

const Workspace = suite("workspace");
const ok = (st: Stats) => ({ ok: true as const, value: st });

Workspace("top: node:clankie-workspace 2775 passes; without set-group-ID fails", () => {
  assert.is(judgeWorkspaceTop(ids, ok(stats("directory", 0o2775, 1000, 1002)), 1, "separated").status, "pass");
  const bad = judgeWorkspaceTop(ids, ok(stats("directory", 0o775, 1000, 1000)), 1, "separated");
  assert.is(bad.status, "fail");
  assert.match(bad.summary, /group 1000, want 1002 \(clankie-workspace\); mode 0775, want 2775/);
  assert.is(judgeWorkspaceTop(ids, ok(stats("directory", 0o755, 1000, 1000)), 1, "single-uid").status, "warn");
});

Workspace("marker: current passes; missing, stale, malformed or another volume's fails", () => {
  const top = stats("directory", 0o2775, 1000, 1002, { dev: 7, ino: 99 });
  assert.is(judgeWorkspaceMarker({ text: "version=1 dev=7 ino=99\n" }, ok(top), "separated").status, "pass");
  assert.match(judgeWorkspaceMarker({ text: "version=0 dev=7 ino=99\n" }, ok(top), "separated").summary, /version 0, want 1/);
  assert.match(judgeWorkspaceMarker({ text: "version=1 dev=7 ino=98\n" }, ok(top), "separated").summary, /names another volume/);
  assert.match(judgeWorkspaceMarker({ text: "junk" }, ok(top), "separated").summary, /malformed/);
  assert.is(judgeWorkspaceMarker({ error: "read x: ENOENT" }, ok(top), "separated").status, "fail");
  assert.is(judgeWorkspaceMarker({ error: "read x: ENOENT" }, ok(top), "single-uid").status, "warn");
});

Workspace("default-acl: a directory with a default ACL warns, named; an access ACL alone and a clean tree pass; an unreadable directory warns", () => {
  const walk = (more: Partial<AclWalk>): AclWalk => walkOf({ visited: 5, ...more });
  assert.is(judgeWorkspaceDefaults(walk({})).status, "pass");
  assert.is(judgeWorkspaceDefaults(walk({ found: [{ path: "/workspace/a", access: "02", default: "" }] })).status, "pass");
  const warned = judgeWorkspaceDefaults(walk({ found: [{ path: "/workspace/a", access: "", default: "02" }, { path: "/workspace/b", access: "02", default: "02" }] }));
  assert.is(warned.status, "warn");
  assert.match(warned.summary, /^2 directories below \/workspace carry a default ACL, .*: \/workspace\/a; \/workspace\/b$/);
  const unread = judgeWorkspaceDefaults(walk({ problems: [{ path: "/workspace/x", syscall: "open", code: "EACCES" }] }));
  assert.is(unread.status, "warn");
  assert.match(unread.summary, /could not read 1 directory below \/workspace: open \/workspace\/x: EACCES/);
});

Workspace.run();
