/*
 * state.*: the audit's walk of /state (src/self-check/state.ts) and its two
 * checks. The real perl walk (src/perl/state-acl.pl with state-audit.pl, mode
 * audit) on planted trees, as root where a tree needs another owner or a
 * device node, its findings put to the checks; what the start would make of
 * each entry is written out here, not read from the walk's table. Then the
 * checks alone, on walks written by hand. And the audit's promise that it
 * changes nothing, checked on the source: no module of src/self-check
 * imports a call that writes, and none starts a program except through
 * src/exec/capture.ts.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Identities } from "../../../src/accounts.ts";
import { STATE_ACL_SCRIPT, stateAclArgs } from "../../../src/layout/state-acl.ts";
import { DEPTH_LIMIT, SHOWN_PATH_BYTES } from "../../../src/layout/rules.ts";
import { stateModes } from "../../../src/layout/state.ts";
import { describeAcl, judgeStateZone, parseStateWalk, READ_ONLY_WALK, type StateAudit, type StateViolation, type StateWalk, startStateAudit, violationOf } from "../../../src/self-check/state.ts";
import { REPO } from "../../helpers/paths.ts";
import { walkOf } from "../../helpers/self-check-fixtures.ts";

const Walk = suite("the audit's walk of /state");
const uid = process.getuid!();
const gid = process.getgid!();
const asRoot = uid === 0;
// The service is whoever runs the test (root too), so that the tree can follow the contract without chown.
const ids: Identities = {
  service: { name: "node", uid, gid, home: "/home/node", shell: "/bin/sh" },
  serviceGroups: [gid, gid + 2],
  agent: { name: "clankie-agent", uid: uid + 1001, gid: gid + 1001, home: "/state/agent", shell: "/usr/sbin/nologin" },
  workspaceGroup: { name: "clankie-workspace", gid: gid + 1002, members: ["node"] },
  groups: [],
};
const FOREIGN = 4242;

/** A tree that follows the contract. */
function tree(): string {
  const root = mkdtempSync(join(tmpdir(), "clankie-audit-"));
  chmodSync(root, 0o711);
  mkdirSync(join(root, "telemetry"), { mode: 0o700 });
  writeFileSync(join(root, "telemetry/spool"), "x", { mode: 0o600 });
  writeFileSync(join(root, "credentials.json"), "{}", { mode: 0o600 });
  mkdirSync(join(root, "install/current"), { recursive: true, mode: 0o755 });
  chmodSync(join(root, "install"), 0o755);
  chmodSync(join(root, "install/current"), 0o755);
  writeFileSync(join(root, "install/current/server.js"), "", { mode: 0o644 });
  mkdirSync(join(root, "agent"), { mode: 0o777 }); // the agent's: left alone, never judged here
  chmodSync(join(root, "agent"), 0o777);
  writeFileSync(join(root, "agent/anything"), "", { mode: 0o666 });
  symlinkSync("/etc", join(root, "etc-link"));
  return root;
}

/** An entry made with exactly `mode` (no umask). */
function plant(path: string, kind: "file" | "directory", mode: number): void {
  if (kind === "directory") mkdirSync(path);
  else writeFileSync(path, "");
  chmodSync(path, mode);
}

async function audit(root: string, mounts: string[] = []): Promise<StateWalk> {
  const result = await startStateAudit(ids, mounts, root);
  assert.is(String(result.stderr), "");
  assert.is(result.status, 0);
  const walk = parseStateWalk(result.stdout);
  assert.ok(walk.complete);
  return walk;
}

/** A verdict, its found read as the document gives it. */
type Seen = { status: string; summary: string; fix: string | null; found: any };
const zones = (root: string, walk: StateWalk): Seen[] => (["layout", "release"] as const).map((zone) => judgeStateZone({ root, walk, releasePresent: true }, zone, "separated", ids.service));
const sorted = (violations: StateViolation[]): StateViolation[] => [...violations].sort((a, b) => a.path.localeCompare(b.path));
const want = (mode: string, owner = { uid, gid }) => ({ ...owner, mode });

Walk("a tree that follows the contract passes both checks; the agent's home is not walked; a symlink is judged by its owner, never followed", async () => {
  const root = tree();
  try {
    const walk = await audit(root);
    assert.equal(walk.wrong, []);
    assert.equal(walk.found, []);
    assert.equal(walk.problems, []);
    assert.is(walk.visited, 8, "root, telemetry, spool, credentials, install, current, server.js, etc-link");
    assert.equal(zones(root, walk).map((c) => c.status), ["pass", "pass"]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("what the start would change is found with the mode it would give, in its zone: private entries lose group and other bits and every special bit; the release keeps what group or other could read or run, for other too; the release root is 0755 and /state 0711", async () => {
  const root = tree();
  try {
    const p = (name: string) => join(root, name);
    chmodSync(root, 0o755);
    chmodSync(p("install"), 0o700);
    // private: [name, kind, mode, the mode the start gives it]
    const privateCases: Array<[string, "file" | "directory", number, string]> = [["open", "file", 0o644, "0600"], ["script", "file", 0o755, "0700"], ["setuid", "file", 0o4755, "0700"], ["shared", "directory", 0o2775, "0700"], ["sticky", "directory", 0o1777, "0700"]];
    const releaseCases: Array<[string, "file" | "directory", number, string]> = [["writable", "file", 0o666, "0644"], ["group-only", "file", 0o750, "0755"], ["other-read", "file", 0o604, "0644"], ["umask", "file", 0o660, "0644"], ["setgid", "directory", 0o2755, "0755"]];
    for (const [name, kind, mode] of privateCases) plant(p(`telemetry/${name}`), kind, mode);
    for (const [name, kind, mode] of releaseCases) plant(p(`install/current/${name}`), kind, mode);
    // Modes the start keeps: found nowhere.
    plant(p("install/current/private"), "file", 0o600);
    plant(p("install/current/tool"), "file", 0o755);
    plant(p("telemetry/closed"), "file", 0o400);
    const walk = await audit(root);
    const [layout, release] = zones(root, walk);
    const seen = (path: string, kind: string, mode: number, wanted: string): StateViolation => ({ path, kind, mode: mode.toString(8).padStart(4, "0"), uid, gid, want: want(wanted) });
    assert.equal(sorted(layout!.found.violations.shown), sorted([seen(root, "directory", 0o755, "0711"), ...privateCases.map(([name, kind, mode, wanted]) => seen(p(`telemetry/${name}`), kind, mode, wanted))]));
    assert.equal(sorted(release!.found.violations.shown), sorted([seen(p("install"), "directory", 0o700, "0755"), ...releaseCases.map(([name, kind, mode, wanted]) => seen(p(`install/current/${name}`), kind, mode, wanted))]));
    assert.is(layout!.status, "fail");
    assert.match(layout!.summary, /^6 entries break the layout contract: /);
    assert.match(release!.summary, /^6 entries of the release root break the layout contract: /);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("what the service's umask 0007 leaves in the private zone (0660, 0770 of its own owner) is counted, not found; other bits, another group or the same modes in the release are found", async () => {
  const root = tree();
  try {
    plant(join(root, "credentials.json.new"), "file", 0o660);
    plant(join(root, "spool"), "directory", 0o770);
    plant(join(root, "readable"), "file", 0o664);
    plant(join(root, "install/current/written"), "file", 0o660);
    if (asRoot) {
      plant(join(root, "other-group"), "file", 0o660);
      chownSync(join(root, "other-group"), uid, FOREIGN);
    }
    const walk = await audit(root);
    assert.is(walk.tally.umask, 2);
    const [layout, release] = zones(root, walk);
    assert.equal(layout!.found.violations.shown.map((v: StateViolation) => `${v.path.slice(root.length)} ${v.mode} ${v.gid}`).sort(), ["/readable 0664 " + gid, ...(asRoot ? [`/other-group 0660 ${FOREIGN}`] : [])].sort());
    assert.is(layout!.found.umaskGroupBits, 2);
    assert.equal(release!.found.violations.shown.map((v: StateViolation) => `${v.path.slice(root.length)} ${v.want!.mode}`), ["/install/current/written 0644"]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("a device node, a hard link to another uid's file and a mount point are found with the start's own words, and the walk goes on; control: a FIFO, the service's own hard link and another uid's file of one name are judged by owner and mode", async () => {
  const root = tree();
  const outside = mkdtempSync(join(tmpdir(), "clankie-audit-outside-"));
  try {
    const p = (name: string) => join(root, name);
    mkdirSync(p("data"), { mode: 0o700 });
    assert.is(spawnSync("/usr/bin/mkfifo", ["-m", "0644", p("data/fifo")]).status, 0);
    writeFileSync(p("data/own"), "x", { mode: 0o600 });
    linkSync(p("data/own"), p("data/own-too"));
    mkdirSync(p("mounted"), { mode: 0o700 });
    writeFileSync(p("mounted/inside"), "", { mode: 0o666 }); // never reached
    chmodSync(p("mounted/inside"), 0o666);
    if (asRoot) {
      assert.is(spawnSync("/usr/bin/mknod", ["-m", "0600", p("data/null"), "c", "1", "3"]).status, 0);
      writeFileSync(join(outside, "passwd"), "x", { mode: 0o644 });
      chownSync(join(outside, "passwd"), FOREIGN, FOREIGN);
      linkSync(join(outside, "passwd"), p("data/passwd"));
      writeFileSync(p("data/single"), "x", { mode: 0o600 });
      chownSync(p("data/single"), FOREIGN, FOREIGN);
    }
    const walk = await audit(root, [p("mounted")]);
    const [layout] = zones(root, walk);
    const device = { path: p("data/null"), kind: "device", mode: "0600", uid, gid, reason: `${p("data/null")} is a device node`, fix: `remove it (rm "${p("data/null")}") and start again` };
    const link = {
      path: p("data/passwd"),
      kind: "file",
      mode: "0644",
      uid: FOREIGN,
      gid: FOREIGN,
      reason: `${p("data/passwd")} is a hard link (2 names) to a file owned by uid ${FOREIGN}; taking it over would change that file everywhere`,
      fix: `remove it (rm "${p("data/passwd")}") and start again`,
    };
    assert.equal(
      sorted(layout!.found.violations.shown),
      sorted([
        { path: p("data/fifo"), kind: "fifo", mode: "0644", uid, gid, want: want("0600") },
        { path: p("mounted"), kind: "directory", mode: "0700", uid, gid, reason: "another filesystem is mounted here; the entrypoint does not enter it" },
        ...(asRoot ? [device, link, { path: p("data/single"), kind: "file", mode: "0600", uid: FOREIGN, gid: FOREIGN, want: want("0600") }] : []),
      ]),
    );
    if (asRoot) assert.match(layout!.fix!, /^remove it \(rm "[^"]*\/data\/(null|passwd)"\) and start again; then restart the container/);
    assert.is(lstatSync(join(outside, "passwd")).uid, FOREIGN, "nothing changed");
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }
});

Walk("an ACL below /state is found in its zone, named as getfacl writes it; one on /state belongs to state.layout", async () => {
  const root = tree();
  try {
    const setfacl = (...args: string[]) => assert.is(spawnSync("setfacl", args).status, 0, args.join(" "));
    setfacl("-d", "-m", "u:1001:r", root);
    setfacl("-m", "u:1001:r", join(root, "install/current/server.js"));
    const walk = await audit(root);
    const [layout, release] = zones(root, walk);
    assert.equal(layout!.found.acls, { count: 1, shown: [`${root} (default ACL: user:1001:r--)`] });
    assert.equal(release!.found.acls, { count: 1, shown: [`${root}/install/current/server.js (ACL: user:1001:r--)`] });
    assert.equal([layout!.status, release!.status], ["fail", "fail"]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("every mode 0000-7777 of a file, in the private zone and in the release: the mode the walk wants is stateModes' (src/layout/state.ts, the layout as data); what it does not report already fits, or is the umask's excuse", async () => {
  const root = tree();
  try {
    mkdirSync(join(root, "modes"), { mode: 0o700 });
    for (const zone of ["modes", "install/current"]) for (let mode = 0; mode <= 0o7777; mode++) plant(join(root, zone, mode.toString(8)), "file", mode);
    const result = await startStateAudit(ids, [], root);
    const walk = parseStateWalk(result.stdout);
    // Every finding kept: the modes are many more than a check shows.
    const all = spawnSync("/usr/bin/perl", ["-e", `${STATE_ACL_SCRIPT}\n${READ_ONLY_WALK.part.trim()}`, ...stateAclArgs("audit", root, ids.service), String(2 * 0o10000)], { input: "", maxBuffer: 64 << 20 });
    const found = new Map(parseStateWalk(all.stdout).wrong.map((w) => [w.path, w.want]));
    assert.equal(walk.tally, parseStateWalk(all.stdout).tally);
    let excused = 0;
    for (const [zone, rule] of [["modes", stateModes.private], ["install/current", stateModes.release]] as const) {
      for (let mode = 0; mode <= 0o7777; mode++) {
        const path = join(root, zone, mode.toString(8));
        const wanted = rule(mode);
        if (found.has(path)) assert.is(found.get(path), wanted, `${path}: want ${wanted.toString(8)}`);
        else if (wanted !== mode) {
          assert.ok(zone === "modes" && (mode & ~0o070) === wanted, `${path} not reported, want ${wanted.toString(8)}`);
          excused++;
        }
      }
    }
    assert.is(excused, 7 * 8, "private: owner bits any, group bits not 0, other and special bits 0");
    assert.is(walk.tally.umask, excused);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("names that are not UTF-8 are reached and shown escaped", async () => {
  const root = tree();
  try {
    const name = Buffer.concat([Buffer.from(`${root}/telemetry/bad-`), Buffer.from([0xff, 0xfe])]);
    writeFileSync(name, "", { mode: 0o644 });
    chmodSync(name, 0o644);
    const walk = await audit(root);
    assert.equal(walk.wrong.map((w) => [w.path, w.mode & 0o7777, w.want]), [[`${root}/telemetry/bad-\\xff\\xfe`, 0o644, 0o600]]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("more wrong entries than a check shows: 50 of each kind kept per zone, every one counted", async () => {
  const root = tree();
  try {
    for (let i = 0; i < 70; i++) plant(join(root, `readable-${i}`), "file", 0o664);
    const walk = await audit(root);
    assert.is(walk.wrong.length, 50);
    assert.equal(walk.tally.wrong, [70, 0]);
    const [layout] = zones(root, walk);
    assert.is(layout!.found.violations.count, 70);
    assert.is(layout!.found.violations.shown.length, 50);
    assert.match(layout!.summary, /^70 entries break the layout contract: .*; and 67 more$/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/** A chain of `levels` directories of 255-byte names, 0755, below `root`, made by mkdir and chdir (no path string names it). */
function plantLongChain(root: string, levels: number): void {
  const made = spawnSync("perl", ["-e", 'my ($root, $n) = @ARGV; my $name = "a" x 255; chdir $root or die; for (1..$n) { mkdir $name, 0755 or die; chdir $name or die } open(my $f, ">", "leaf") or die', root, String(levels)]);
  assert.is(made.status, 0, String(made.stderr));
}

Walk("a chain deeper than DEPTH_LIMIT of 255-byte names: every level to the limit judged, the one at the limit counted deep, nothing below it read; the output and the address space stay bounded (the control: each level's path kept dies under the same limit)", () => {
  const root = mkdtempSync(join(tmpdir(), "clankie-audit-deep-"));
  try {
    chmodSync(root, 0o711);
    plantLongChain(root, DEPTH_LIMIT + 10);
    const limit = String(256 << 20);
    const program = `${STATE_ACL_SCRIPT}\n${READ_ONLY_WALK.part.trim()}`;
    const run = spawnSync("prlimit", [`--as=${limit}`, "/usr/bin/perl", "-e", program, ...stateAclArgs("audit", root, ids.service), String(READ_ONLY_WALK.keep)], { env: {}, input: "", maxBuffer: 64 << 20 });
    assert.is(String(run.stderr), "");
    assert.is(run.status, 0);
    assert.ok(run.stdout.length < 2 << 20, `${run.stdout.length} bytes printed`);
    const walk = parseStateWalk(run.stdout);
    assert.is(walk.visited, DEPTH_LIMIT + 1);
    assert.equal(walk.tally.wrong, [DEPTH_LIMIT, 0], "each level 0755, want 0700");
    assert.equal(walk.tally.deep, [1, 0]);
    const atLimit = `${`${root}${`/${"a".repeat(255)}`.repeat(DEPTH_LIMIT)}`.slice(0, SHOWN_PATH_BYTES)}...`;
    assert.equal(walk.left, [{ path: atLimit, why: "deep" }]);
    const [layout] = zones(root, walk);
    assert.is(layout!.found.violations.count, DEPTH_LIMIT);
    assert.equal(layout!.found.deep.count, 1);
    const control = spawnSync("prlimit", [`--as=${limit}`, "/usr/bin/perl", "-e", 'my ($p, @paths) = (""); for (1..$ARGV[0]) { $p .= "/" . ("a" x 255); push @paths, $p }', String(DEPTH_LIMIT + 10)], { encoding: "utf8" });
    assert.not.equal(control.status, 0);
    assert.match(control.stderr, /Out of memory/);
  } finally {
    spawnSync("rm", ["-rf", root]);
  }
});

Walk("a directory removed between the walk's lstat and its open is no entry to judge, not a problem; control: one the walk may not open is a problem", () => {
  const root = tree();
  try {
    mkdirSync(join(root, "victim"), { mode: 0o700 });
    const program = `${STATE_ACL_SCRIPT}\n${READ_ONLY_WALK.part.trim()}`;
    // strace(1) fails the walk's openat(2) of the name `victim` as the kernel does for a name gone (ENOENT), or one it may not open (EACCES).
    const run = (errno: string) => {
      const result = spawnSync("strace", ["-qq", "-f", "-o", "/dev/null", "-e", "trace=openat", "-e", `inject=openat:error=${errno}`, "-P", "victim", "/usr/bin/perl", "-e", program, ...stateAclArgs("audit", root, ids.service), String(READ_ONLY_WALK.keep)], { input: "" });
      assert.is(result.status, 0, String(result.stderr));
      return parseStateWalk(result.stdout);
    };
    const gone = run("ENOENT");
    assert.ok(gone.complete);
    assert.equal(gone.problems, []);
    assert.equal(run("EACCES").problems, [{ path: join(root, "victim"), syscall: "open", code: "EACCES" }]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("nothing under the walked tree changes: modes, owners, ACLs and times stay", async () => {
  const root = tree();
  try {
    chmodSync(join(root, "credentials.json"), 0o666);
    assert.is(spawnSync("setfacl", ["-m", "u:1001:rw", join(root, "telemetry/spool")]).status, 0);
    const before = snapshot(root);
    await audit(root);
    assert.equal(snapshot(root), before);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

function snapshot(root: string): string[] {
  const out: string[] = [];
  const visit = (path: string): void => {
    const st = lstatSync(path);
    const acl = spawnSync("getfacl", ["-p", "-s", path], { encoding: "utf8" }).stdout;
    out.push(`${path} ${st.mode} ${st.uid} ${st.gid} ${st.mtimeMs} ${st.ctimeMs} ${acl}`);
    if (st.isDirectory()) for (const name of readdirSync(path).sort()) visit(join(path, name));
  };
  visit(root);
  return out;
}

const Judge = suite("state.layout and state.release from a walk");
const ROOT = "/state";
const stateZones = (walk: StateWalk, mode: "separated" | "single-uid" = "separated", releasePresent = true): Seen[] => (["layout", "release"] as const).map((zone) => judgeStateZone({ root: ROOT, walk, releasePresent } satisfies StateAudit, zone, mode, { uid: 1000, gid: 1000 }));
const wrongFile = { path: "/state/x", mode: 0o100664, uid: 1000, gid: 1000, links: 1, want: 0o600, why: "" as const };

Judge("parseStateWalk: the audit's records (M, T) beside the walk's own, paths shown printable; an unknown reason throws", () => {
  const fields = (...items: (string | Buffer)[]) => Buffer.concat(items.map((item) => Buffer.concat([Buffer.from(item as string), Buffer.from([0])])));
  const out = fields("M", "/state/y", String(0o100664), "1000", "1000", "1", String(0o600), "", "M", Buffer.from([0x2f, 0x73, 0x74, 0x61, 0x74, 0x65, 0x2f, 0xff]), String(0o120777), "0", "0", "1", "", "", "M", "/state/dev", String(0o020600), "0", "0", "1", "", "device", "T", "3", "0", "2", "0", "1", "0", "4", "V", "12", "0", "12", "0", "1");
  const walk = parseStateWalk(out);
  assert.equal(walk.wrong, [
    { path: "/state/y", mode: 0o100664, uid: 1000, gid: 1000, links: 1, want: 0o600, why: "" },
    { path: "/state/\\xff", mode: 0o120777, uid: 0, gid: 0, links: 1, why: "" },
    { path: "/state/dev", mode: 0o020600, uid: 0, gid: 0, links: 1, why: "device" },
  ]);
  assert.equal(walk.tally, { wrong: [3, 0], acls: [2, 0], deep: [1, 0], umask: 4 });
  assert.ok(walk.complete);
  assert.throws(() => parseStateWalk(fields("M", "/state/y", "420", "0", "0", "1", "", "why")), /unknown reason/);
  assert.throws(() => parseStateWalk(fields("T", "1", "2")), /middle of a record/);
});

Judge("violationOf: what the start would set, or the start's own refusal, or the mount it never enters; a symlink's mode is never wanted", () => {
  const owner = { uid: 1000, gid: 1000 };
  assert.equal(violationOf(wrongFile, owner), { path: "/state/x", kind: "file", mode: "0664", uid: 1000, gid: 1000, want: { uid: 1000, gid: 1000, mode: "0600" } });
  assert.equal(violationOf({ ...wrongFile, path: "/state/l", mode: 0o120777, uid: 0, gid: 0, want: undefined }, owner), { path: "/state/l", kind: "symlink", mode: "0777", uid: 0, gid: 0, want: { uid: 1000, gid: 1000 } });
  assert.equal(violationOf({ ...wrongFile, path: "/state/dev", mode: 0o020600, want: undefined, why: "device" }, owner).fix, 'remove it (rm "/state/dev") and start again');
  assert.match(violationOf({ ...wrongFile, path: "/state/passwd", uid: 0, links: 2, want: undefined, why: "link" }, owner).reason!, /hard link \(2 names\) to a file owned by uid 0/);
  assert.equal(violationOf({ ...wrongFile, path: "/state/m", mode: 0o040700, want: undefined, why: "mount" }, owner).reason, "another filesystem is mounted here; the entrypoint does not enter it");
});

Judge("pass, fail with the count and 50 shown, warn in single-uid; the umask's group bits counted in the pass", () => {
  assert.equal(stateZones(walkOf()).map((c) => c.status), ["pass", "pass"]);
  const umask = stateZones(walkOf({ tally: { wrong: [0, 0], acls: [0, 0], deep: [0, 0], umask: 2 } }))[0]!;
  assert.is(umask.status, "pass");
  assert.match(umask.summary, /^10 entries checked; .*\(2 made by the service since the start keep its umask's group bits, of node's own group: the agent is not in it, and the next start removes them\)$/);
  const many = walkOf({ wrong: Array.from({ length: 50 }, (_, i) => ({ ...wrongFile, path: `/state/x${i}` })), tally: { wrong: [70, 0], acls: [0, 0], deep: [0, 0], umask: 0 } });
  const [layout, release] = stateZones(many);
  assert.is(layout!.status, "fail");
  assert.is(release!.status, "pass");
  assert.is(layout!.found.violations.count, 70);
  assert.is(layout!.found.violations.shown.length, 50);
  assert.match(layout!.summary, /^70 entries break the layout contract: \/state\/x0 \(file 0664 1000:1000, want 0600 1000:1000\); .*; and 67 more$/);
  assert.match(layout!.fix!, /^restart the container/);
  assert.is(stateZones(many, "single-uid")[0]!.status, "warn");
});

Judge("a refused entry's own fix comes first; unreadable entries fail, never pass, the root's in both checks; a missing release warns", () => {
  const device = walkOf({ wrong: [{ ...wrongFile, path: "/state/dev", mode: 0o020600, want: undefined, why: "device" }], tally: { wrong: [1, 0], acls: [0, 0], deep: [0, 0], umask: 0 } });
  assert.match(stateZones(device)[0]!.fix!, /^remove it \(rm "\/state\/dev"\) and start again; then restart/);
  const [layout, release] = stateZones(walkOf({ problems: [{ path: "/state/sealed", syscall: "open", code: "EACCES" }] }));
  assert.is(layout!.status, "fail");
  assert.match(layout!.summary, /^could not read 1 entry under \/state: open \/state\/sealed: EACCES$/);
  assert.is(release!.status, "pass", "a problem outside the release root is not the release's");
  assert.equal(stateZones(walkOf({ problems: [{ path: "/state/install/x", syscall: "lstat", code: "EACCES" }] })).map((c) => c.status), ["pass", "fail"]);
  assert.equal(stateZones(walkOf({ problems: [{ path: "/state", syscall: "lstat", code: "ENOENT" }] })).map((c) => c.status), ["fail", "fail"]);
  assert.is(stateZones(walkOf(), "separated", false)[1]!.status, "warn");
});

// getfacl: user::rw- user:1001:r-- group::--- mask::r-- other::---, and a default ACL of the same entries.
const NAMED = "0200000001000600ffffffff02000400e903000004000000ffffffff10000400ffffffff20000000ffffffff";
// user::rwx group::r-x other::r-x: a default ACL with no named entry.
const BASE = "0200000001000700ffffffff04000500ffffffff20000500ffffffff";

Judge("an ACL fails the zone it lies in, a named entry shown as getfacl writes it, counted beyond those shown; with a mode violation both are said", () => {
  assert.is(describeAcl({ path: "/state", access: "", default: NAMED }), "/state (default ACL: user:1001:r--)");
  assert.is(describeAcl({ path: "/state/x", access: NAMED, default: BASE }), "/state/x (ACL: user:1001:r--; default ACL, no named entry)");
  const acls = walkOf({ found: [{ path: "/state", access: "", default: NAMED }, { path: "/state/install/.npmrc", access: NAMED, default: "" }], tally: { wrong: [0, 0], acls: [1, 4], deep: [0, 0], umask: 0 } });
  const [layout, release] = stateZones(acls);
  assert.is(layout!.status, "fail");
  assert.is(layout!.summary, "1 entry carries an ACL, which the layout does not allow (its mode bits are all the access there may be): /state (default ACL: user:1001:r--)");
  assert.equal(layout!.found.acls, { count: 1, shown: ["/state (default ACL: user:1001:r--)"] });
  assert.is(release!.status, "fail");
  assert.match(release!.summary, /^4 entries of the release root carry ACLs, .*: \/state\/install\/\.npmrc \(ACL: user:1001:r--\); and 1 more$/);
  const both = stateZones(walkOf({ wrong: [wrongFile], found: [{ path: "/state/x", access: NAMED, default: "" }], tally: { wrong: [1, 0], acls: [1, 0], deep: [0, 0], umask: 1 } }))[0]!;
  assert.match(both.summary, /^1 entry breaks the layout contract: .*; 1 entry carries an ACL, .*\/state\/x \(ACL: user:1001:r--\)$/);
});

Judge("a directory DEPTH_LIMIT levels deep warns in its zone when nothing else is wrong, and is counted beside violations", () => {
  const deepPath = `/state/deep${"/d".repeat(100)}`;
  const deep = walkOf({ left: [{ path: deepPath, why: "deep" }], tally: { wrong: [0, 0], acls: [0, 0], deep: [1, 0], umask: 0 } });
  const [layout, release] = stateZones(deep);
  assert.is(layout!.status, "warn");
  assert.match(layout!.summary, /^1 directory 4096 levels deep was not read below .*: \/state\/deep\/d\/d.*\.\.\.$/);
  assert.equal(layout!.found.deep, { count: 1, examples: [`${deepPath.slice(0, 120)}...`] });
  assert.is(release!.status, "pass");
  const both = stateZones({ ...deep, wrong: [wrongFile], tally: { ...deep.tally, wrong: [1, 0] } })[0]!;
  assert.is(both.status, "fail");
  assert.is(both.found.deep.count, 1);
});

const Source = suite("the audit changes nothing (source rules)");
const dir = join(REPO, "src/self-check");
const WRITES = /\b(writeFileSync|appendFileSync|chmodSync|fchmodSync|lchmodSync|chownSync|fchownSync|lchownSync|renameSync|unlinkSync|rmSync|rmdirSync|mkdirSync|mkdtempSync|symlinkSync|linkSync|truncateSync|ftruncateSync|utimesSync|futimesSync|lutimesSync|copyFileSync|cpSync|writeSync|writev|createWriteStream)\b/;

Source("no module of src/self-check imports a call that writes a file", () => {
  for (const file of readdirSync(dir)) {
    const text = readFileSync(join(dir, file), "utf8");
    for (const match of text.matchAll(/import\s+\{([^}]*)\}\s+from\s+"node:fs"/g)) {
      assert.not.match(match[1]!, WRITES, `${file} imports ${match[1]}`);
    }
  }
});

Source("no module of src/self-check starts a program but through src/exec/capture.ts", () => {
  for (const file of readdirSync(dir)) {
    const text = readFileSync(join(dir, file), "utf8");
    assert.not.match(text, /from\s+"(node:)?child_process"|from\s+"execa"|process\.execve|process\.kill\(\s*-/, file);
  }
});

Walk.run();
Judge.run();
Source.run();
