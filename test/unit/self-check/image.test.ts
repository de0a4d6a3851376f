/* image.*: the judges of the image (the executable, set-ID files, file capabilities, mounts). Pure, no privileges. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { judgeFileCapabilities, judgeMounts, judgeSetuid, judgeReadOnlyRoot } from "../../../src/self-check/image.ts";
import { decodeCapabilityXattr, type ImageScan } from "../../../src/self-check/image-scan.ts";
import { parseMountinfo } from "../../../src/os/mountinfo.ts";
import { ids, MOUNTINFO } from "../../helpers/self-check-fixtures.ts";

const Image = suite("image");

function scanOf(partial: Partial<ImageScan>): ImageScan {
  return { visited: 100, privileged: [], executables: 1, capabilities: [], problems: [], unreadableXattrs: [], excluded: ["/proc"], ...partial };
}

Image("set-ID files: none passes; any fails, even on a nosuid mount; unreadable directories warn", () => {
  assert.is(judgeSetuid(scanOf({})).status, "pass");
  const su = { path: "/usr/bin/su", mode: "4755", uid: 0, gid: 0, bits: ["setuid" as const], mount: "/", nosuid: true };
  const failed = judgeSetuid(scanOf({ privileged: [su] }));
  assert.is(failed.status, "fail");
  assert.match(failed.summary, /\/usr\/bin\/su \(4755 0:0, on a nosuid mount\)/);
  assert.match(failed.fix!, /chmod ug-s/);
  assert.is(judgeSetuid(scanOf({ problems: [{ path: "/root", syscall: "readdir", code: "EACCES" }] })).status, "warn");
});

Image("set-ID files that grant only the agent's own ids warn, never hide a root one", () => {
  const agent = { uid: 1001, groups: [1001, 1002] };
  const mine = { path: "/tmp/x", mode: "6755", uid: 1001, gid: 1002, bits: ["setuid" as const, "setgid" as const], mount: "/tmp", nosuid: true };
  const root = { ...mine, path: "/tmp/y", uid: 0, bits: ["setuid" as const] };
  const warned = judgeSetuid(scanOf({ privileged: [mine] }), agent);
  assert.is(warned.status, "warn");
  assert.match(warned.summary, /grant only the agent's own ids/);
  assert.is(judgeSetuid(scanOf({ privileged: [mine] })).status, "fail", "without the accounts nothing is presumed harmless");
  const failed = judgeSetuid(scanOf({ privileged: [mine, root] }), agent);
  assert.is(failed.status, "fail");
  assert.equal((failed.found.files as any).shown.map((f: any) => f.path), ["/tmp/y"]);
  assert.is(judgeSetuid(scanOf({ privileged: [{ ...mine, gid: 0 }] }), agent).status, "fail");
});

Image("file capabilities: decoded from vfs_cap_data; none passes; any fails; a scan that could not run warns", () => {
  const cap = decodeCapabilityXattr("/usr/bin/ping", "0100000200200000000000000000000000000000");
  assert.equal(cap, { path: "/usr/bin/ping", permitted: ["NET_RAW"], inheritable: [], effective: true, version: 2, raw: "0100000200200000000000000000000000000000" });
  const v3 = decodeCapabilityXattr("/x", "000000030014000000000000000000000000000000000000e8030000".slice(0, 48));
  assert.is(v3.version, 3);
  assert.is(v3.effective, false);
  assert.equal(v3.permitted, ["NET_BIND_SERVICE", "NET_ADMIN"]);
  assert.is(judgeFileCapabilities(scanOf({})).status, "pass");
  const failed = judgeFileCapabilities(scanOf({ capabilities: [cap] }));
  assert.is(failed.status, "fail");
  assert.match(failed.summary, /\/usr\/bin\/ping \(net_raw=ep\)/);
});


Image("mounts: recommendations only; a volume without nosuid,nodev warns", () => {
  const check = judgeMounts(parseMountinfo(MOUNTINFO));
  assert.is(check.status, "warn");
  assert.is(check.summary, "recommended: /workspace is mounted without nosuid, nodev");
  const good = parseMountinfo(MOUNTINFO.replace("/workspace rw,relatime", "/workspace rw,nosuid,nodev"));
  assert.is(judgeMounts(good).status, "pass");
});

Image("read-only root: the mount at / with rw warns, naming what uid 0 owns there and --read-only; ro passes; the last mount at / counts", () => {
  const writable = judgeReadOnlyRoot(parseMountinfo(MOUNTINFO), "separated");
  assert.is(writable.status, "warn");
  assert.match(writable.summary, /^\/ is writable \(tmpfs, rw\): the spawner's SETUID and SETGID let code that takes it over become uid 0, which, without DAC_OVERRIDE, still owns every root-owned file/);
  assert.match(writable.fix!, /^run the container with --read-only --tmpfs \/tmp/);
  assert.match(judgeReadOnlyRoot(parseMountinfo(MOUNTINFO), "single-uid").summary, /in the separated launch the spawner holds SETUID and SETGID, and code that takes it over can become uid 0/);
  const readOnly = judgeReadOnlyRoot(parseMountinfo(MOUNTINFO.replace("/ / rw,", "/ / ro,")), "separated");
  assert.equal([readOnly.status, readOnly.found.options], ["pass", ["ro", "nosuid", "nodev", "relatime"]]);
  // A later mount over / (bubblewrap's remount) decides.
  const remounted = parseMountinfo(`${MOUNTINFO}\n99 69 0:50 / / ro,nosuid - tmpfs tmpfs rw`);
  assert.is(judgeReadOnlyRoot(remounted, "separated").status, "pass");
  assert.is(judgeReadOnlyRoot([], "separated").status, "warn");
});

Image.run();
