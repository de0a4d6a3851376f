/* state.*: the entrypoint's rules on walked entries, and the checks from one walk. Pure, no privileges. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { describeAcl, judgeStateEntry, judgeStateZone, type StateAudit } from "../../../src/self-check/state.ts";
import type { AclWalk } from "../../../src/layout/state-acl.ts";
import { WalkedEntry } from "../../../src/self-check/walk.ts";
import { stateRules } from "../../../src/layout/state-rules.ts";
import { ids, stats, walked } from "../../helpers/self-check-fixtures.ts";

const State = suite("state");
const NO_ACLS: AclWalk = { visited: 10, stripped: 0, checked: 0, fixed: 0, skipped: 0, left: [], found: [], problems: [], complete: true };
const stateZones = (a: StateAudit, mode: "separated" | "single-uid", acls: AclWalk = NO_ACLS) => [judgeStateZone(a, "layout", mode, acls), judgeStateZone(a, "release", mode, acls)];
const rules = stateRules(ids);

State("entries that follow the rules pass; the zone is handed down", () => {
  assert.equal(judgeStateEntry(rules, walked("/state", "directory", 0o711, 0), "top"), { descend: "top" });
  assert.equal(judgeStateEntry(rules, walked("/state/credentials.json", "file", 0o600, 1), "top"), { descend: undefined });
  assert.equal(judgeStateEntry(rules, walked("/state/install", "directory", 0o755, 1), "top"), { descend: "release" });
  assert.equal(judgeStateEntry(rules, walked("/state/install/bin/tool", "file", 0o755, 3), "release"), { descend: undefined });
  // A symlink's mode is never judged.
  assert.equal(judgeStateEntry(rules, walked("/state/link", "symlink", 0o777, 1), "private"), { descend: undefined });
});

State("the agent's home is pruned, not judged, also when it is a mount of its own", () => {
  assert.equal(judgeStateEntry(rules, walked("/state/agent", "directory", 0o755, 1, 1001), "top"), { pruned: true });
  assert.equal(judgeStateEntry(rules, walked("/state/agent", "directory", 0o700, 1, 1001, { otherDevice: true }), "top"), { pruned: true });
  // Only at the top: a mount called agent deeper down is another filesystem inside /state.
  assert.match(judgeStateEntry(rules, walked("/state/sub/agent", "directory", 0o700, 2, 1000, { otherDevice: true }), "private").violation!.reason!, /another filesystem is mounted here/);
  // A device mounted inside /state is reported as a mount (it is never entered), as before.
  assert.match(judgeStateEntry(rules, walked("/state/d", "device", 0o600, 1, 0, { otherDevice: true }), "top").violation!.reason!, /another filesystem is mounted here/);
});

State("group bits of node's own group (the service's umask 0007 since the start) are not a violation; other bits, another group or a release entry are", () => {
  assert.equal(judgeStateEntry(rules, walked("/state/credentials.json", "file", 0o660, 1), "top"), { descend: undefined, umaskGroupBits: true });
  assert.equal(judgeStateEntry(rules, walked("/state/logs", "directory", 0o770, 1), "top"), { descend: "private", umaskGroupBits: true });
  assert.equal(judgeStateEntry(rules, walked("/state/x", "file", 0o664, 1), "top").violation!.want!.mode, "0600");
  assert.equal(judgeStateEntry(rules, walked("/state/x", "file", 0o661, 1), "top").violation!.want!.mode, "0600");
  const foreignGroup = new WalkedEntry("/state/x", "x", "file", stats("file", 0o660, 1000, 1002, {}), 1, false);
  assert.ok(judgeStateEntry(rules, foreignGroup, "top").violation);
  assert.equal(judgeStateEntry(rules, walked("/state/install/s", "file", 0o660, 2), "release").violation!.want!.mode, "0644");
  const [layout] = stateZones(audit({ umaskGroupBits: 2 }), "separated");
  assert.is(layout!.status, "pass");
  assert.match(layout!.summary, /\(2 made by the service since the start keep its umask's group bits, of node's own group: the agent is not in it, and the next start removes them\)$/);
  assert.is(layout!.found.umaskGroupBits, 2);
});

State("wrong mode, wrong owner, setuid, devices, foreign hard links and mounts are violations", () => {
  const groupWritable = judgeStateEntry(rules, walked("/state/x", "file", 0o664, 1), "top").violation!;
  assert.equal(groupWritable, { path: "/state/x", kind: "file", mode: "0664", uid: 1000, gid: 1000, want: { uid: 1000, gid: 1000, mode: "0600" } });
  assert.equal(judgeStateEntry(rules, walked("/state/y", "file", 0o600, 1, 0), "top").violation!.want, { uid: 1000, gid: 1000, mode: "0600" });
  assert.is(judgeStateEntry(rules, walked("/state/install/s", "file", 0o4755, 2), "release").violation!.want!.mode, "0755");
  const device = judgeStateEntry(rules, walked("/state/dev", "device", 0o600, 1), "top").violation!;
  assert.match(device.reason!, /is a device node/);
  assert.match(device.fix!, /^remove it/);
  const link = judgeStateEntry(rules, walked("/state/passwd", "file", 0o644, 1, 0, { nlink: 2 }), "top").violation!;
  assert.match(link.reason!, /hard link \(2 names\) to a file owned by uid 0/);
  const mount = judgeStateEntry(rules, walked("/state/m", "directory", 0o700, 1, 1000, { otherDevice: true }), "top");
  assert.match(mount.violation!.reason!, /another filesystem is mounted here/);
  assert.is(mount.descend, undefined);
});

function audit(partial: Partial<StateAudit>): StateAudit {
  return { root: "/state", checked: 10, layout: [], release: [], releasePresent: true, problems: [], umaskGroupBits: 0, ...partial };
}
const violation = { path: "/state/x", kind: "file", mode: "0664", uid: 1000, gid: 1000, want: { uid: 1000, gid: 1000, mode: "0600" } };

State("stateChecks: pass, fail with the count and 50 shown, warn in single-uid", () => {
  assert.equal(stateZones(audit({}), "separated").map((c) => c.status), ["pass", "pass"]);
  const many = Array.from({ length: 70 }, (_, i) => ({ ...violation, path: `/state/x${i}` }));
  const [layout] = stateZones(audit({ layout: many }), "separated");
  assert.is(layout!.status, "fail");
  assert.is((layout!.found.violations as any).count, 70);
  assert.is((layout!.found.violations as any).shown.length, 50);
  assert.match(layout!.summary, /^70 entries break the layout contract: \/state\/x0 \(file 0664 1000:1000, want 0600 1000:1000\); .*; and 67 more$/);
  assert.match(layout!.fix!, /restart the container/);
  assert.is(stateZones(audit({ layout: many }), "single-uid")[0]!.status, "warn");
});

State("stateChecks: a refused entry's own fix comes first; unreadable entries fail, never pass; a missing release warns", () => {
  const refused = { path: "/state/dev", kind: "device", mode: "0600", uid: 0, gid: 0, reason: "/state/dev is a device node", fix: 'remove it (rm "/state/dev") and start again' };
  assert.match(stateZones(audit({ layout: [refused] }), "separated")[0]!.fix!, /^remove it \(rm "\/state\/dev"\) and start again; then restart/);
  const problems = [{ path: "/state/sealed", syscall: "readdir", code: "EACCES" }];
  const [layout, release] = stateZones(audit({ problems }), "separated");
  assert.is(layout!.status, "fail");
  assert.match(layout!.summary, /could not read 1 entry under \/state: readdir \/state\/sealed: EACCES/);
  assert.is(release!.status, "pass", "a problem outside the release root is not the release's");
  const root = stateZones(audit({ problems: [{ path: "/state", syscall: "lstat", code: "ENOENT" }], checked: 0, releasePresent: false }), "separated");
  assert.equal(root.map((c) => c.status), ["fail", "fail"]);
  assert.is(stateZones(audit({ releasePresent: false }), "separated")[1]!.status, "warn");
});

// getfacl: user::rw- user:1001:r-- group::--- mask::r-- other::---, and a default ACL of the same entries.
const NAMED = "0200000001000600ffffffff02000400e903000004000000ffffffff10000400ffffffff20000000ffffffff";
// user::rwx group::r-x other::r-x: a default ACL with no named entry.
const BASE = "0200000001000700ffffffff04000500ffffffff20000500ffffffff";

State("an ACL anywhere fails the zone it lies in, a named entry shown as getfacl writes it; the walk's problems are unreadable entries", () => {
  assert.is(describeAcl({ path: "/state", access: "", default: NAMED }), "/state (default ACL: user:1001:r--)");
  assert.is(describeAcl({ path: "/state/x", access: NAMED, default: BASE }), "/state/x (ACL: user:1001:r--; default ACL, no named entry)");
  const acls = (...found: AclWalk["found"]): AclWalk => ({ ...NO_ACLS, found });
  const [layout, release] = stateZones(audit({}), "separated", acls({ path: "/state", access: "", default: NAMED }, { path: "/state/install/.npmrc", access: NAMED, default: "" }));
  assert.is(layout!.status, "fail");
  assert.is(layout!.summary, "1 entry carries an ACL, which the layout does not allow (its mode bits are all the access there may be): /state (default ACL: user:1001:r--)");
  assert.match(layout!.fix!, /restart the container/);
  assert.equal(layout!.found.acls, { count: 1, shown: ["/state (default ACL: user:1001:r--)"] });
  assert.is(release!.status, "fail");
  assert.match(release!.summary, /^1 entry of the release root carries an ACL, .*: \/state\/install\/\.npmrc \(ACL: user:1001:r--\)$/);
  // Not hidden by the umask's excuse, and with a mode violation both are said.
  const both = stateZones(audit({ umaskGroupBits: 1, layout: [violation] }), "separated", acls({ path: "/state/x", access: NAMED, default: "" }))[0]!;
  assert.match(both.summary, /^1 entry breaks the layout contract: .*; 1 entry carries an ACL, .*\/state\/x \(ACL: user:1001:r--\)$/);
  assert.is(stateZones(audit({}), "single-uid", acls({ path: "/state/x", access: NAMED, default: "" }))[0]!.status, "warn");
  const unread = stateZones(audit({}), "separated", { ...NO_ACLS, problems: [{ path: "/state/x", syscall: "lgetxattr", code: "EACCES" }] });
  assert.equal(unread.map((c) => c.status), ["fail", "pass"]);
  assert.match(unread[0]!.summary, /could not read 1 entry under \/state: lgetxattr \/state\/x: EACCES/);
  const sealed = { ...NO_ACLS, problems: [{ path: "/state/sealed", syscall: "open", code: "EACCES" }] };
  assert.match(stateZones(audit({ problems: [{ path: "/state/sealed", syscall: "readdir", code: "EACCES" }] }), "separated", sealed)[0]!.summary, /^could not read 1 entry under \/state: readdir \/state\/sealed: EACCES$/);
});

State("a directory DEPTH_LIMIT levels deep warns in its zone when nothing else is wrong, and is counted beside violations", () => {
  const deep = { layout: { count: 1, examples: ["/state/deep/d/d..."] }, release: { count: 0, examples: [] } };
  const [layout, release] = stateZones(audit({ deep }), "separated");
  assert.is(layout!.status, "warn");
  assert.match(layout!.summary, /^1 directory 4096 levels deep was not read below .*: \/state\/deep\/d\/d\.\.\.$/);
  assert.equal(layout!.found.deep, deep.layout);
  assert.is(release!.status, "pass");
  const both = stateZones(audit({ deep, layout: [violation] }), "separated")[0]!;
  assert.is(both.status, "fail");
  assert.equal(both.found.deep, deep.layout);
});

State.run();
