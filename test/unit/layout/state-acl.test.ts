/*
 * The ACL walk of /state (src/layout/state-acl.ts, src/perl/state-acl.pl):
 * the attribute format decoded, the output parsed, and the real perl program
 * on a planted tree, with ACLs set by the host's setfacl(1) (the acl
 * package: scripts/setup-debian.sh) on the system's temporary directory.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, linkSync, lstatSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { syscallNumbers } from "../../../src/os/syscalls.ts";
import { parseAclWalk, STATE_ACL_SCRIPT, stateAclArgs } from "../../../src/layout/state-acl.ts";
import { decodeAcl, namedEntries, parseStateWalk, READ_ONLY_WALK } from "../../../src/self-check/state.ts";
import { DEPTH_LIMIT, SHOWN_PATH_BYTES } from "../../../src/layout/rules.ts";

const test = suite("state-acl");

// getfacl: user::rw- user:1001:rwx group::--- mask::rwx other::---
const NAMED = "0200000001000600ffffffff02000700e903000004000000ffffffff10000700ffffffff20000000ffffffff";

test("decodeAcl: posix_acl_xattr entries, named ones with their id; namedEntries as getfacl writes them", () => {
  assert.equal(decodeAcl(NAMED), [
    { tag: "user::", perm: "rw-" },
    { tag: "user", id: 1001, perm: "rwx" },
    { tag: "group::", perm: "---" },
    { tag: "mask", perm: "rwx" },
    { tag: "other", perm: "---" },
  ]);
  assert.equal(namedEntries(NAMED), ["user:1001:rwx"]);
  assert.equal(namedEntries("0200000001000700ffffffff04000500ffffffff20000500ffffffff"), []);
});

test("stateAclArgs: the mode, the root, the pruned name, the release root's name, the service's uid and gid, then x86-64's numbers and flags", () => {
  assert.equal(stateAclArgs("fix", "/state", { uid: 1000, gid: 1000 }, syscallNumbers("x64")), ["fix", "/state", "agent", "install", "1000", "1000", "192", "191", "188", "197", "198656", String(0o400000 | 0o4000 | 0o400), String(0o10000000 | 0o400000), "61", "95", "4096", "8192"]);
  assert.equal(stateAclArgs("audit", "/state", { uid: 1000, gid: 1000 }, syscallNumbers("arm64")).slice(6, 10), ["9", "8", "5", "14"]);
});

test("parseAclWalk: records in order, bytes shown printable; a record after the last, an unknown one or bad hex throws", () => {
  const fields = (...items: (string | Buffer)[]) => Buffer.concat(items.map((item) => Buffer.concat([Buffer.from(item as string), Buffer.from([0])])));
  const out = fields("A", "/state", "", NAMED, "P", "/state/x", "lgetxattr", "13", "A", Buffer.from([0x2f, 0x73, 0x74, 0x61, 0x74, 0x65, 0x2f, 0xff]), NAMED, "", "Q", "one", "two", "V", "12", "2", "11", "3", "0");
  const more: string[][] = [];
  const walk = parseAclWalk(out, { Q: { fields: 2, read: (fields) => more.push(fields) } });
  assert.equal(more, [["one", "two"]], "another part's record, read by its reader");
  assert.equal(walk, {
    visited: 12,
    stripped: 2,
    checked: 11,
    fixed: 3,
    skipped: 0,
    left: [],
    found: [
      { path: "/state", access: "", default: NAMED },
      { path: "/state/\\xff", access: NAMED, default: "" },
    ],
    problems: [{ path: "/state/x", syscall: "lgetxattr", code: "EACCES" }],
    complete: true,
  });
  assert.equal(parseAclWalk(Buffer.from("X\0/state/d\0")).changed, "/state/d");
  assert.equal(parseAclWalk(Buffer.from("D\0/state/null\0")).refused, { path: "/state/null", device: true });
  assert.equal(parseAclWalk(Buffer.from("H\0/state/h\x002\x000\0")).refused, { path: "/state/h", links: 2, uid: 0 });
  assert.equal(parseAclWalk(Buffer.from("S\0/state/m\0mount\0S\0/state/d\0deep\0")).left, [{ path: "/state/m", why: "mount" }, { path: "/state/d", why: "deep" }]);
  assert.throws(() => parseAclWalk(Buffer.from("S\0/state/m\0why\0")), /unknown reason/);
  assert.is(parseAclWalk(Buffer.from("")).complete, false);
  assert.throws(() => parseAclWalk(Buffer.from("V\x001\x000\x001\x000\x000\0V\x001\x000\x001\x000\x000\0")), /after its last/);
  assert.throws(() => parseAclWalk(Buffer.from("Q\0")), /unknown record/);
  assert.throws(() => parseAclWalk(Buffer.from("A\0/x\0zz\0\0")), /malformed/);
  assert.throws(() => parseAclWalk(Buffer.from("A\0/x")), /complete field/);
});

function setfacl(...args: string[]): void {
  const run = spawnSync("setfacl", args, { encoding: "utf8" });
  assert.is(run.status, 0, `setfacl ${args.join(" ")}: ${run.stderr}`);
}

function hasAcl(path: string): boolean {
  return spawnSync("getfacl", ["-s", "-p", path], { encoding: "utf8" }).stdout !== "";
}

const OWNER = { uid: process.getuid!(), gid: process.getgid!() };

/** The program and arguments of `mode`: fix is the start's program; audit is the audit's, state-audit.pl appended, with its record limit. */
const programOf = (mode: "fix" | "audit", root: string): string[] =>
  mode === "fix" ? ["-e", STATE_ACL_SCRIPT, ...stateAclArgs(mode, root, OWNER)] : ["-e", `${STATE_ACL_SCRIPT}\n${READ_ONLY_WALK.part.trim()}`, ...stateAclArgs(mode, root, OWNER), String(READ_ONLY_WALK.keep)];

function walk(mode: "fix" | "audit", root: string, skip: string[] = []): ReturnType<typeof parseAclWalk> & { status: number | null } {
  const run = spawnSync("/usr/bin/perl", programOf(mode, root), { env: {}, input: skip.map((p) => `${p}\0`).join("") });
  assert.is(String(run.stderr), "");
  return { ...(mode === "fix" ? parseAclWalk : parseStateWalk)(run.stdout), status: run.status };
}

test("the perl walk: audit reads every ACL; fix keeps each base entry (the owning group's cut by the mask), removes the rest, never through a symlink, the agent's home or a mount point", () => {
  const root = mkdtempSync(join(tmpdir(), "clankie-acl-"));
  const outside = mkdtempSync(join(tmpdir(), "clankie-acl-outside-"));
  try {
    const p = (name: string) => join(root, name);
    mkdirSync(p("install"));
    mkdirSync(p("agent"));
    mkdirSync(p("mounted"));
    mkdirSync(p("install/deep/er"), { recursive: true });
    writeFileSync(p("install/.npmrc"), "token\n", { mode: 0o600 });
    chmodSync(p("install/.npmrc"), 0o600);
    setfacl("-m", "u:1001:rwx", p("install/.npmrc")); // mode 0670: the mask shows as the group's bits
    setfacl("-m", "u:1001:rwx", p("agent"));
    setfacl("-m", "u:1001:rwx", p("mounted"));
    setfacl("-d", "-m", "u:1001:r,g::rx,m::r", p("install/deep/er"));
    writeFileSync(p("install/deep/er/late"), "x\n", { mode: 0o666 }); // user::rw- user:1001:r-- group::r-x mask::r-- other::r-x
    writeFileSync(join(outside, "target"), "x\n", { mode: 0o600 });
    setfacl("-m", "u:1001:rwx", join(outside, "target"));
    symlinkSync(join(outside, "target"), p("link"));
    setfacl("-d", "-m", "u:1001:r", root);
    // A hard link to another uid's file (the walk refuses it): changing its ACL would change that file everywhere.
    const asRoot = process.getuid!() === 0;
    if (asRoot) {
      writeFileSync(join(outside, "foreign"), "x\n", { mode: 0o600 });
      chownSync(join(outside, "foreign"), 4242, 4242);
      setfacl("-m", "u:1001:r", join(outside, "foreign"));
      linkSync(join(outside, "foreign"), p("install/foreign"));
    }

    const listed = walk("audit", root, [p("mounted")]);
    assert.is(listed.status, 0);
    assert.equal(listed.found.map((f) => [f.path.slice(root.length), f.access !== "", f.default !== ""]).sort(), [
      ["", false, true],
      ["/install/.npmrc", true, false],
      ["/install/deep/er", false, true],
      ["/install/deep/er/late", true, false],
      ...(asRoot ? [["/install/foreign", true, false]] : []),
    ]);
    assert.equal(listed.problems, []);
    assert.is(listed.stripped, 0);
    assert.ok(hasAcl(root), "audit changes nothing");

    let before = 0;
    if (asRoot) {
      // fix refuses the hard link (65) and leaves the file as it is; what it fixed before it stays fixed (the next run finishes).
      const refused = walk("fix", root, [p("mounted")]);
      before = refused.found.length;
      assert.is(refused.status, 65);
      assert.equal(refused.refused, { path: p("install/foreign"), links: 2, uid: 4242 });
      assert.ok(hasAcl(join(outside, "foreign")), "another uid's hard-linked file is left alone");
      rmSync(p("install/foreign"));
    }
    const stripped = walk("fix", root, [p("mounted")]);
    assert.is(stripped.status, 0);
    assert.is(before + stripped.stripped, 4);
    const mode = (name: string) => (lstatSync(p(name)).mode & 0o7777).toString(8);
    assert.is(mode("install/.npmrc"), "600", "the owning group's entry (---), not the mask (rwx)");
    assert.is(mode("install/deep/er/late"), "644", "the owning group's r-x, cut by the mask r--");
    for (const name of ["", "install/.npmrc", "install/deep/er", "install/deep/er/late"]) assert.not.ok(hasAcl(p(name)), `${name} keeps an ACL`);
    assert.ok(hasAcl(p("agent")), "the agent's home is not entered");
    assert.ok(hasAcl(p("mounted")), "a mount point is left alone");
    assert.ok(hasAcl(join(outside, "target")), "a symlink is not followed");
    assert.equal(walk("audit", root, [p("mounted")]).found.map((f) => f.path), [], "fix left nothing for audit to find");
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }
});

/** A chain of `levels` directories of 255-byte names below `root`, made by mkdir and chdir (no path string names it), with a named-entry ACL on the directories at the depths in `withAcl`. */
function plantLongChain(root: string, levels: number, withAcl: number[]): void {
  const script = 'my ($root, $n, @acl) = @ARGV; my %acl = map { $_ => 1 } @acl; my $name = "a" x 255; chdir $root or die; for my $i (1..$n) { mkdir $name or die; system("setfacl", "-m", "u:1001:r", $name) == 0 or die if $acl{$i}; chdir $name or die }';
  const made = spawnSync("perl", ["-e", script, root, String(levels), ...withAcl.map(String)]);
  assert.is(made.status, 0, String(made.stderr));
}

/** An address-space limit (RLIMIT_AS) for perl: a few times what the walk needs of a tree with short paths, a small fraction of what keeping each level's path costs. */
const PERL_AS = String(256 << 20);

test("the perl walk below DEPTH_LIMIT of 255-byte names: the directory at the limit is read and stripped, nothing below it; memory stays bounded (the control: each level's path kept dies under the same limit)", () => {
  const root = mkdtempSync(join(tmpdir(), "clankie-acl-deep-"));
  try {
    plantLongChain(root, DEPTH_LIMIT + 10, [DEPTH_LIMIT, DEPTH_LIMIT + 1]);
    const run = (mode: "fix" | "audit") => {
      const result = spawnSync("prlimit", [`--as=${PERL_AS}`, "/usr/bin/perl", ...programOf(mode, root)], { env: {}, input: "", maxBuffer: 64 << 20 });
      assert.is(String(result.stderr), "");
      assert.is(result.status, 0);
      return (mode === "fix" ? parseAclWalk : parseStateWalk)(result.stdout);
    };
    const atLimit = `${`${root}${`/${"a".repeat(255)}`.repeat(DEPTH_LIMIT)}`.slice(0, SHOWN_PATH_BYTES)}...`;
    const listed = run("audit");
    assert.is(listed.visited, DEPTH_LIMIT + 1);
    assert.equal(listed.found.map((f) => f.path), [atLimit]);
    const stripped = run("fix");
    assert.is(stripped.stripped, 1);
    assert.equal(run("audit").found, [], "the ACL at the limit is gone; the one below it was never read");
    // The control: a perl that keeps each level's path, as the walk did, dies under the same limit.
    const control = spawnSync("prlimit", [`--as=${PERL_AS}`, "/usr/bin/perl", "-e", 'my ($p, @paths) = (""); for (1..$ARGV[0]) { $p .= "/" . ("a" x 255); push @paths, $p }', String(DEPTH_LIMIT + 10)], { encoding: "utf8" });
    assert.not.equal(control.status, 0);
    assert.match(control.stderr, /Out of memory/);
  } finally {
    spawnSync("rm", ["-rf", root]);
  }
});

/**
 * A racing writer, made deterministic: strace(1) holds the walk's openat(2)
 * of the name `victim` (the walk opens an entry only when it needs a change)
 * for DELAY_US, or fails it with an errno, while the test changes the tree.
 * The walk must stop with X (65) and change nothing it did not look at.
 */
const DELAY_US = 1_500_000;
function racedWalk(root: string, inject: string, during: () => void): Promise<{ status: number | null; walk: ReturnType<typeof parseAclWalk> }> {
  const child = spawn("strace", ["-qq", "-f", "-o", "/dev/null", "-e", "trace=openat", "-e", `inject=openat:${inject}`, "-P", "victim", "/usr/bin/perl", "-e", STATE_ACL_SCRIPT, ...stateAclArgs("fix", root, OWNER)], { stdio: ["ignore", "pipe", "pipe"] });
  const out: Buffer[] = [];
  child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
  const timer = setTimeout(during, DELAY_US / 3000);
  return new Promise((resolve) => {
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, walk: parseAclWalk(Buffer.concat(out)) });
    });
  });
}

test("a file swapped after lstat, a name gone or made a symlink before the open, a directory moved out from under the walk: each stops the walk (65), and nothing it did not look at is changed; control: no race, the same tree is fixed", async () => {
  const plant = (): string => {
    const root = mkdtempSync(join(tmpdir(), "clankie-acl-race-"));
    mkdirSync(join(root, "a", "b"), { recursive: true });
    writeFileSync(join(root, "a", "b", "victim"), "v\n", { mode: 0o644 });
    chmodSync(join(root, "a", "b", "victim"), 0o644);
    return root;
  };
  const mode = (path: string): string => (lstatSync(path).mode & 0o7777).toString(8);
  const cases: Array<[string, string, (root: string) => void, (root: string) => void]> = [
    ["control", `delay_enter=${DELAY_US}`, () => undefined, (root) => assert.is(mode(join(root, "a", "b", "victim")), "600")],
    ["swapped", `delay_enter=${DELAY_US}`, (root) => {
      renameSync(join(root, "a", "b", "victim"), join(root, "a", "b", "looked-at"));
      writeFileSync(join(root, "a", "b", "victim"), "planted\n", { mode: 0o644 });
      chmodSync(join(root, "a", "b", "victim"), 0o644);
    }, (root) => assert.is(mode(join(root, "a", "b", "victim")), "644", "the file swapped in is untouched")],
    ["a symlink now", "error=ELOOP", () => undefined, (root) => assert.is(mode(join(root, "a", "b", "victim")), "644")],
    ["moved out", `delay_enter=${DELAY_US}`, (root) => renameSync(join(root, "a", "b"), join(root, "b-moved")), (root) => assert.is(mode(join(root, "b-moved", "victim")), "600", "the open it held went on; the walk stopped at ..")],
  ];
  for (const [what, inject, during, after] of cases) {
    const root = plant();
    try {
      const { status, walk } = await racedWalk(root, inject, () => during(root));
      after(root);
      if (what === "control") {
        assert.is(status, 0, what);
        assert.ok(walk.complete, what);
      } else {
        assert.is(status, 65, what);
        assert.ok(walk.changed !== undefined, `${what}: ${JSON.stringify(walk)}`);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
});

test.run();
