/* The pure checks, each with a passing and a failing case, from parsed inputs: no privileges. */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, type Stats } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { resolveIdentities } from "../../src/accounts.ts";
import { syscallNumbers } from "../../src/constants.ts";
import { judgeAccounts } from "../../src/self-check/accounts.ts";
import { bounded, cannotLook, octal } from "../../src/self-check/check.ts";
import { judgeEnvironment, codeLoadingNames } from "../../src/self-check/environment.ts";
import { judgeFileCapabilities, judgeMounts, judgeSetuid, judgeReadOnlyRoot } from "../../src/self-check/image.ts";
import { decodeCapabilityXattr, IMAGE_SCAN_SCRIPT, type ImageWalk, parseImageScan } from "../../src/self-check/image-scan.ts";
import { judgeKernelSetting, KERNEL_SETTINGS } from "../../src/self-check/kernel.ts";
import { excludedDirectories, mountOf, parseMountinfo } from "../../src/os/mountinfo.ts";
import { judgeRootProcesses, judgeWorkspaceExecutables, underWorkspace } from "../../src/self-check/processes.ts";
import { parseProcessStatus, type ProcessCredentials, type ProcessEntry } from "../../src/os/proc-status.ts";
import { lineage, parseEnviron } from "../../src/self-check/judged.ts";
import { judgeCapabilities, judgeNoNewPrivs, judgeProcessIds } from "../../src/self-check/service-process.ts";
import { judgeStateEntry, judgeStateZone, type StateAudit } from "../../src/self-check/state.ts";
import { judgeWorkspaceMarker, judgeWorkspaceTop } from "../../src/self-check/workspace.ts";
import { WalkedEntry } from "../../src/self-check/walk.ts";
import { stateRules } from "../../src/layout/state.ts";
import { DEFAULT_GROUP, DEFAULT_PASSWD } from "../helpers/sandbox.ts";

const ids = resolveIdentities(DEFAULT_PASSWD, DEFAULT_GROUP);
const C0 = 0xc0n;

function creds(uid: number, caps: bigint, options: { nnp?: boolean; bnd?: bigint; groups?: number[] } = {}): ProcessCredentials {
  return { uids: [uid, uid, uid, uid], gids: [uid, uid, uid, uid], groups: options.groups ?? [uid], capInh: caps, capPrm: caps, capEff: caps, capAmb: caps, capBnd: options.bnd ?? caps, noNewPrivs: options.nnp ?? true };
}

type Kind = "directory" | "file" | "symlink" | "device";
function stats(kind: Kind, mode: number, uid = 1000, gid = 1000, extra: Partial<{ nlink: number; dev: number; ino: number }> = {}): Stats {
  return {
    mode,
    uid,
    gid,
    nlink: extra.nlink ?? 1,
    dev: extra.dev ?? 1,
    ino: extra.ino ?? 2,
    isDirectory: () => kind === "directory",
    isFile: () => kind === "file",
    isSymbolicLink: () => kind === "symlink",
    isFIFO: () => false,
    isSocket: () => false,
  } as unknown as Stats;
}
function walked(path: string, kind: Kind, mode: number, depth: number, uid = 1000, extra: Partial<{ nlink: number; otherDevice: boolean }> = {}): WalkedEntry {
  return new WalkedEntry(path, path.slice(path.lastIndexOf("/") + 1), kind, stats(kind, mode, uid, uid, extra), depth, extra.otherDevice ?? false);
}

/* ------------------------------------------------------------ process -- */
const Process = suite("process checks");

Process("separated: node's ids and groups, SETUID and SETGID in every set, NoNewPrivs", () => {
  const judged = { pid: 14, name: "node", creds: creds(1000, C0, { groups: [1000, 1002] }) };
  assert.is(judgeProcessIds(judged, ids, "separated").status, "pass");
  const caps = judgeCapabilities(judged, "separated");
  assert.is(caps.status, "pass");
  assert.equal((caps.found.sets as any).CapBnd, { mask: "0x00000000000000c0", names: ["SETGID", "SETUID"] });
  assert.is(judgeNoNewPrivs(judged, "separated").status, "pass");
});

Process("separated: a missing group, an extra capability, no NoNewPrivs each fail with a fix", () => {
  const ids1 = judgeProcessIds({ pid: 14, name: "node", creds: creds(1000, C0, { groups: [1000] }) }, ids, "separated");
  assert.is(ids1.status, "fail");
  assert.match(ids1.summary, /groups 1000 \(want 1000,1002\)/);
  const caps = judgeCapabilities({ pid: 14, name: "node", creds: creds(1000, C0 | (1n << 21n)) }, "separated");
  assert.is(caps.status, "fail");
  assert.match(caps.summary, /CapInh SETGID,SETUID,SYS_ADMIN/);
  assert.match(caps.fix!, /--cap-drop ALL/);
  const nnp = judgeNoNewPrivs({ pid: 14, name: "node", creds: creds(1000, C0, { nnp: false }) }, "separated");
  assert.is(nnp.status, "fail");
  assert.match(nnp.fix!, /no-new-privileges/);
});

Process("single-uid: no capability passes; a bounding set or no NoNewPrivs warns; a held capability fails; root fails", () => {
  assert.is(judgeCapabilities({ pid: 1, name: "node", creds: creds(1000, 0n, { bnd: 0n }) }, "single-uid").status, "pass");
  assert.is(judgeCapabilities({ pid: 1, name: "node", creds: creds(1000, 0n, { bnd: C0 }) }, "single-uid").status, "warn");
  assert.is(judgeCapabilities({ pid: 1, name: "node", creds: creds(1000, 1n << 10n) }, "single-uid").status, "fail");
  assert.is(judgeNoNewPrivs({ pid: 1, name: "node", creds: creds(1000, 0n, { nnp: false }) }, "single-uid").status, "warn");
  assert.is(judgeProcessIds({ pid: 1, name: "node", creds: creds(0, 0n) }, ids, "single-uid").status, "fail");
  assert.is(judgeProcessIds({ pid: 1, name: "node", creds: creds(1000, 0n) }, ids, "single-uid").status, "pass");
});

/* ----------------------------------------------------------- accounts -- */
const Accounts = suite("accounts");

Accounts("the image's users and groups pass, with their ids", () => {
  const result = judgeAccounts(DEFAULT_PASSWD, DEFAULT_GROUP);
  assert.is(result.status, "pass");
  assert.equal((result.found.agent as any).groups, [1001, 1002]);
});

Accounts("a missing group, a shared uid, a wrong membership fail with the entrypoint's own fix", () => {
  const missing = judgeAccounts(DEFAULT_PASSWD, DEFAULT_GROUP.replace(/^clankie-workspace.*\n/m, ""));
  assert.is(missing.status, "fail");
  assert.match(missing.fix!, /rebuild the image/);
  const shared = judgeAccounts(DEFAULT_PASSWD.replace("clankie-agent:x:1001:1001", "clankie-agent:x:1000:1001"), DEFAULT_GROUP);
  assert.match(shared.summary, /same uid as node/);
  const member = judgeAccounts(DEFAULT_PASSWD, DEFAULT_GROUP.replace("node:x:1000:", "node:x:1000:clankie-agent"));
  assert.match(member.summary, /clankie-agent is a member of groups 1000/);
});

/* -------------------------------------------------------------- state -- */
const State = suite("state");
const stateZones = (a: StateAudit, mode: "separated" | "single-uid") => [judgeStateZone(a, "layout", mode), judgeStateZone(a, "release", mode)];
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

/* ---------------------------------------------------------- workspace -- */
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

/* -------------------------------------------------------------- image -- */
const Image = suite("image");

const scanOf = (partial: Partial<ImageWalk>) => ({ walk: imageWalk(partial), scan: { found: [], unreadable: [] } });
function imageWalk(partial: Partial<ImageWalk>): ImageWalk {
  return { visited: 100, privileged: [], executables: 1, problems: [], excluded: ["/proc"], ...partial };
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
  assert.is(judgeFileCapabilities({ walk: imageWalk({}), scan: { found: [], unreadable: [] } }).status, "pass");
  const failed = judgeFileCapabilities({ walk: imageWalk({}), scan: { found: [cap], unreadable: [] } });
  assert.is(failed.status, "fail");
  assert.match(failed.summary, /\/usr\/bin\/ping \(net_raw=ep\)/);
});

Image("the image walk's output is parsed: set-ID files with their mount, attributes, problems, counts", () => {
  const mounts = parseMountinfo("69 45 0:40 / / rw,relatime - overlay overlay rw\n70 69 0:41 /x /tmp rw,nosuid,nodev - tmpfs tmpfs rw\n");
  const nonUtf8 = Buffer.from([0x2f, 0x74, 0x6d, 0x70, 0x2f, 0xff]).toString("latin1"); // "/tmp/\xff"
  const out = Buffer.from(
    [
      "S", "/usr/bin/su", String(0o104755), "0", "0",
      "S", nonUtf8, String(0o102755), "1001", "1002",
      "C", "/a b", "0100000200200000000000000000000000000000",
      "E", "/sealed", "13",
      "P", "/root", "readdir", "13",
      "V", "4242", "17",
      "",
    ].join("\0"),
    "latin1",
  );
  const { walk, scan } = parseImageScan(out, mounts, new Set(["/proc", "/sys"]));
  assert.is(walk.visited, 4242);
  assert.is(walk.executables, 17);
  assert.equal(walk.excluded, ["/proc", "/sys"]);
  assert.equal(walk.privileged[0], { path: "/usr/bin/su", mode: "4755", uid: 0, gid: 0, bits: ["setuid"], mount: "/", nosuid: false });
  assert.equal(walk.privileged[1], { path: "/tmp/\\xff", mode: "2755", uid: 1001, gid: 1002, bits: ["setgid"], mount: "/tmp", nosuid: true });
  assert.equal(scan.found.map((f) => f.path), ["/a b"]);
  assert.equal(scan.unreadable, [{ path: "/sealed", errno: 13 }]);
  assert.equal(walk.problems, [{ path: "/root", syscall: "readdir", code: "EACCES" }]);
});

Image("the image walk's output is refused when cut short or malformed, never read as a clean image", () => {
  const mounts = parseMountinfo("69 45 0:40 / / rw - overlay overlay rw\n");
  const none = new Set<string>();
  const out = (...fields: string[]) => Buffer.from([...fields, ""].join("\0"), "latin1");
  assert.throws(() => parseImageScan(out("S", "/usr/bin/su"), mounts, none), /middle of a record/);
  assert.throws(() => parseImageScan(Buffer.from(""), mounts, none), /before its last record/);
  assert.throws(() => parseImageScan(out("S", "/usr/bin/su", "2541", "0", "0"), mounts, none), /before its last record/);
  assert.throws(() => parseImageScan(out("C", "/x", "zz", "V", "1", "1"), mounts, none), /malformed attribute/);
  assert.throws(() => parseImageScan(out("Q", "V", "1", "1"), mounts, none), /unknown record/);
  // The last record cut short, even where the cut leaves a NUL-terminated prefix.
  assert.throws(() => parseImageScan(Buffer.from("V\u0000123\u0000"), mounts, none), /middle of a record/);
  assert.throws(() => parseImageScan(Buffer.from("V\u0000123\u00004"), mounts, none), /does not end with a complete field/);
  assert.throws(() => parseImageScan(out("V", "1", "1", "S", "/x", "2541", "0", "0"), mounts, none), /after its last one/);
});

Image("the image walk in perl, run for real on a planted tree: set-ID bits, symlinks not followed, skipped directories, bytes in names", () => {
  const root = mkdtempSync(join(tmpdir(), "image-walk-"));
  try {
    mkdirSync(join(root, "bin"));
    writeFileSync(join(root, "bin/su"), "x", { mode: 0o755 });
    chmodSync(join(root, "bin/su"), 0o4755);
    writeFileSync(join(root, "bin/tool"), "x", { mode: 0o755 });
    mkdirSync(join(root, "skipped"));
    writeFileSync(join(root, "skipped/hidden"), "x");
    chmodSync(join(root, "skipped/hidden"), 0o6755);
    symlinkSync("/usr/bin", join(root, "link")); // never entered
    writeFileSync(Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0xff])]), "x", { mode: 0o2755 });
    chmodSync(Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0xff])]), 0o2755);
    // A directory whose name is not UTF-8, to be skipped too: the skip list is bytes on stdin.
    const odd = Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0xe9, 0x74, 0xe9])]);
    mkdirSync(odd);
    writeFileSync(Buffer.concat([odd, Buffer.from("/hidden")]), "x", { mode: 0o4755 });
    chmodSync(Buffer.concat([odd, Buffer.from("/hidden")]), 0o4755);
    // As startImageScan runs it, with the planted tree as its root (lgetxattr, ENODATA, EOPNOTSUPP).
    const skip = Buffer.concat([Buffer.from(`${join(root, "skipped")}\0`), odd, Buffer.from([0])]);
    const run = spawnSync("/usr/bin/perl", ["-e", IMAGE_SCAN_SCRIPT, String(syscallNumbers().lgetxattr), "61", "95", root], { env: {}, input: skip });
    assert.is(run.status, 0, String(run.stderr));
    const { walk, scan } = parseImageScan(run.stdout, [], new Set());
    assert.equal(walk.privileged.map((f) => [f.path.slice(root.length), f.mode]).sort(), [["/\\xff", "2755"], ["/bin/su", "4755"]]);
    assert.is(walk.visited, 8, "root, bin, su, tool, skipped and the non-UTF-8 directory (neither entered), link, the \\xff file");
    assert.is(walk.executables, 3);
    assert.equal(scan.found, []);
    assert.equal(walk.problems, []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

const MOUNTINFO = [
  "69 45 0:40 / / rw,nosuid,nodev,relatime - tmpfs tmpfs rw",
  "70 69 254:0 /usr /usr ro,nosuid,nodev,relatime - ext4 /dev/vda rw",
  "74 69 254:0 /b/state /state rw,nosuid,nodev,relatime - ext4 /dev/vda rw",
  "75 69 254:0 /b/workspace /workspace rw,relatime - ext4 /dev/vda rw",
  "78 69 0:41 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw",
  "88 81 0:43 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw,mode=620",
  "90 69 0:44 / /with\\040space rw - tmpfs tmpfs rw",
].join("\n");

Image("mountinfo: parsed, escapes undone, longest match wins, pseudo filesystems excluded", () => {
  const mounts = parseMountinfo(MOUNTINFO);
  assert.is(mounts.length, 7);
  assert.is(mounts[6]!.point, "/with space");
  assert.is(mountOf(mounts, "/usr/bin/true")!.point, "/usr");
  assert.is(mountOf(mounts, "/etc/passwd")!.point, "/");
  assert.is(mountOf(mounts, "/usrx")!.point, "/");
  assert.equal([...excludedDirectories(mounts, ["/state"])].sort(), ["/dev/pts", "/proc", "/state"]);
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
  assert.match(writable.summary, /^\/ is writable \(tmpfs, rw\): the service's SETUID and SETGID let code running as node become uid 0, which, without DAC_OVERRIDE, still owns every root-owned file/);
  assert.match(writable.fix!, /^run the container with --read-only --tmpfs \/tmp/);
  assert.match(judgeReadOnlyRoot(parseMountinfo(MOUNTINFO), "single-uid").summary, /once the service holds SETUID and SETGID/);
  const readOnly = judgeReadOnlyRoot(parseMountinfo(MOUNTINFO.replace("/ / rw,", "/ / ro,")), "separated");
  assert.equal([readOnly.status, readOnly.found.options], ["pass", ["ro", "nosuid", "nodev", "relatime"]]);
  // A later mount over / (bubblewrap's remount) decides.
  const remounted = parseMountinfo(`${MOUNTINFO}\n99 69 0:50 / / ro,nosuid - tmpfs tmpfs rw`);
  assert.is(judgeReadOnlyRoot(remounted, "separated").status, "pass");
  assert.is(judgeReadOnlyRoot([], "separated").status, "warn");
});

/* ---------------------------------------------------------- processes -- */
const Processes = suite("processes");
const links = (table: ProcessEntry[], exes: Record<number, string>) => new Map(table.map((e) => [e.pid, { ok: true as const, value: exes[e.pid]! }]));

function proc(pid: number, ppid: number, uid: number, name: string): ProcessEntry {
  return { pid, ppid, name, threads: 1, creds: creds(uid, 0n) };
}

Processes("root: the audit and what started it are left out; any other root process fails (warns single-uid)", () => {
  const table = [proc(1, 0, 1000, "tini"), proc(14, 1, 1000, "node"), proc(40, 0, 0, "sh"), proc(41, 40, 0, "MainThread")];
  assert.equal(lineage(table, 41), [41, 40]);
  assert.is(judgeRootProcesses(table, 41, "separated").status, "pass");
  const other = [...table, proc(50, 0, 0, "sleep")];
  const failed = judgeRootProcesses(other, 41, "separated");
  assert.is(failed.status, "fail");
  assert.match(failed.summary, /1 process of uid 0 still running: 50 \(sleep\)/);
  assert.is(judgeRootProcesses(other, 41, "single-uid").status, "warn");
});

Processes("workspace executables fail; unreadable links warn, never pass", () => {
  const table = [proc(1, 0, 1000, "tini"), proc(14, 1, 1000, "node"), proc(20, 14, 1000, "x"), proc(30, 14, 1000, "audit")];
  const exes: Record<number, string> = { 1: "/usr/bin/tini", 14: "/usr/local/bin/node", 20: "/workspace/bin/x (deleted)" };
  const failed = judgeWorkspaceExecutables(table, 1000, 30, links(table, exes), "separated");
  assert.is(failed.status, "fail");
  assert.equal((failed.found.underWorkspace as any).shown, [{ pid: 20, name: "x", exe: "/workspace/bin/x (deleted)" }]);
  const clean = judgeWorkspaceExecutables(table.slice(0, 2), 1000, 30, links(table, exes), "separated");
  assert.is(clean.status, "pass");
  const hidden = judgeWorkspaceExecutables(table.slice(0, 2), 1000, 30, new Map(table.map((e) => [e.pid, { ok: false as const, error: "readlink /proc/1/exe: EACCES" }])), "separated");
  assert.is(hidden.status, "warn");
  assert.ok(underWorkspace("/workspace"));
  assert.not.ok(underWorkspace("/workspaces/x"));
});

Processes("status and environ parsing", () => {
  const entry = parseProcessStatus(7, "Name:\tMainThread\nPPid:\t3\nUid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t00000000000000c0\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\n");
  assert.is(entry.name, "MainThread");
  assert.is(entry.ppid, 3);
  assert.equal(parseEnviron(Buffer.from("A=1\0B=x=y\0junk\0")), { A: "1", B: "x=y" });
});

/* -------------------------------------------------------- environment -- */
const Environment = suite("environment");

Environment("code-loading variables in the audit's or the service's environment fail; names only", () => {
  assert.equal(codeLoadingNames({ LD_PRELOAD: "/x.so", LD_AUDIT: "y", PATH: "/bin", NODE_OPTIONS: "--require z" }), ["LD_AUDIT", "LD_PRELOAD", "NODE_OPTIONS"]);
  const mine = judgeEnvironment({ LD_PRELOAD: "/x.so" }, { pid: 1, self: true, environ: { ok: true, value: {} } });
  assert.is(mine.status, "fail");
  assert.not.match(JSON.stringify(mine), /x\.so/);
  const theirs = judgeEnvironment({}, { pid: 14, self: false, environ: { ok: true, value: { GLIBC_TUNABLES: "x" } } });
  assert.is(theirs.status, "fail");
  assert.match(theirs.summary, /the service \(pid 14\) was started with GLIBC_TUNABLES/);
});

Environment("clean passes; an unreadable service environment warns", () => {
  assert.is(judgeEnvironment({ PATH: "/bin" }, { pid: 14, self: false, environ: { ok: true, value: { PATH: "/bin" } } }).status, "pass");
  assert.is(judgeEnvironment({}, { pid: 14, self: false, environ: { ok: false, error: "EACCES" } }).status, "warn");
});

/* ------------------------------------------------------------- kernel -- */
const Kernel = suite("kernel");

Kernel("each setting: the safe value passes, the other warns with its meaning, absence is judged, a read error warns", () => {
  const [tiocsti, hardlinks, symlinks] = KERNEL_SETTINGS;
  assert.is(judgeKernelSetting(tiocsti!, { ok: true, value: "0\n" }).status, "pass");
  const on = judgeKernelSetting(tiocsti!, { ok: true, value: "1\n" });
  assert.is(on.status, "warn");
  assert.match(on.summary, /^1: TIOCSTI works/);
  assert.match(on.fix!, /sysctl -w dev\.tty\.legacy_tiocsti=0/);
  assert.match(judgeKernelSetting(tiocsti!, { ok: false, error: "read x: ENOENT" }).summary, /^absent: no such setting \(Linux before 6\.2\)/);
  assert.is(judgeKernelSetting(hardlinks!, { ok: true, value: "1" }).status, "pass");
  assert.is(judgeKernelSetting(hardlinks!, { ok: true, value: "0" }).status, "warn");
  assert.is(judgeKernelSetting(symlinks!, { ok: true, value: "1" }).status, "pass");
  assert.is(judgeKernelSetting(symlinks!, { ok: true, value: "0" }).status, "warn");
  assert.match(judgeKernelSetting(symlinks!, { ok: false, error: "read x: EACCES" }).summary, /could not read/);
});

Kernel("protected_regular and protected_fifos: 1 and 2 pass, 0 and absence warn with the host's sysctl and the service's own remedy", () => {
  for (const id of ["kernel.protected-regular", "kernel.protected-fifos"]) {
    const setting = KERNEL_SETTINGS.find((s) => s.id === id)!;
    assert.is(setting.path, `/proc/sys/fs/${id.slice("kernel.".length).replace("-", "_")}`);
    const best = judgeKernelSetting(setting, { ok: true, value: "2\n" });
    assert.equal([best.status, best.fix], ["pass", null]);
    assert.match(best.summary, /^2: an O_CREAT open of .* is refused, in group-writable sticky directories too/);
    const one = judgeKernelSetting(setting, { ok: true, value: "1\n" });
    assert.is(one.status, "pass");
    assert.match(one.summary, /^1: .*2 also covers group-writable sticky directories/);
    const off = judgeKernelSetting(setting, { ok: true, value: "0\n" });
    assert.is(off.status, "warn");
    assert.match(off.summary, /^0: off: the agent can create .* in \/tmp under a name the service will open/);
    assert.match(off.fix!, new RegExp(`^on the host: sysctl -w fs\\.${setting.path.split("/").pop()}=2 .*O_EXCL`));
    assert.match(judgeKernelSetting(setting, { ok: false, error: "read x: ENOENT" }).summary, /^absent: no such setting \(Linux before 4\.19\)/);
    assert.is(judgeKernelSetting(setting, { ok: false, error: "read x: ENOENT" }).status, "warn");
    assert.match(judgeKernelSetting(setting, { ok: true, value: "7" }).summary, /^7: unexpected value 7/);
  }
});

/* ------------------------------------------------------------- common -- */
const Common = suite("check helpers");

Common("a check that cannot look fails (or warns) with its reason; counts are bounded; modes are octal", () => {
  const failed = cannotLook("/state", "nope (EACCES)", "run as root");
  assert.equal([failed.status, failed.summary, failed.found], ["fail", "could not check /state: nope (EACCES)", { error: "nope (EACCES)" }]);
  assert.is(cannotLook("y", "z", "f", "warn").status, "warn");
  assert.equal(bounded([1, 2, 3], 2), { count: 3, shown: [1, 2] });
  assert.is(octal(0o104755), "4755");
});

Process.run();
Accounts.run();
State.run();
Workspace.run();
Image.run();
Processes.run();
Environment.run();
Kernel.run();
Common.run();
