/*
 * The read-only walk and the /state audit on a real temporary tree, as any
 * user: names that are not UTF-8, symlinks that are never followed, mounts
 * (other devices) never entered. And the audit's promise that it changes
 * nothing, checked on the source: no module of src/self-check imports a call
 * that writes, and none starts a program except through src/exec/capture.ts.
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Identities } from "../../../src/accounts.ts";
import { auditState } from "../../../src/self-check/state.ts";
import { walkReadOnly, type WalkProblem } from "../../../src/self-check/walk.ts";
import { DEPTH_LIMIT, SHOWN_PATH_BYTES } from "../../../src/layout/rules.ts";
import { REPO } from "../../helpers/paths.ts";

const Walk = suite("read-only walk");
const uid = process.getuid!();
const gid = process.getgid!();
// The service is whoever runs the test (root too), so that the tree can follow the contract without chown.
const ids: Identities = {
  service: { name: "node", uid, gid, home: "/home/node", shell: "/bin/sh" },
  serviceGroups: [gid, gid + 2],
  agent: { name: "clankie-agent", uid: uid + 1001, gid: gid + 1001, home: "/state/agent", shell: "/usr/sbin/nologin" },
  workspaceGroup: { name: "clankie-workspace", gid: gid + 1002, members: ["node"] },
  groups: [],
};

function tree(): string {
  const root = mkdtempSync(join(tmpdir(), "clankie-walk-"));
  chmodSync(root, 0o711);
  mkdirSync(join(root, "telemetry"), { mode: 0o700 });
  writeFileSync(join(root, "telemetry/spool"), "x", { mode: 0o600 });
  writeFileSync(join(root, "credentials.json"), "{}", { mode: 0o600 });
  mkdirSync(join(root, "install/current"), { recursive: true, mode: 0o755 });
  chmodSync(join(root, "install"), 0o755);
  chmodSync(join(root, "install/current"), 0o755);
  writeFileSync(join(root, "install/current/server.js"), "", { mode: 0o644 });
  mkdirSync(join(root, "agent"), { mode: 0o777 }); // the agent's: pruned, never judged here
  writeFileSync(join(root, "agent/anything"), "", { mode: 0o666 });
  symlinkSync("/etc", join(root, "etc-link"));
  return root;
}

Walk("a tree that follows the contract passes; the agent's home is not walked; symlinks are judged, not followed", () => {
  const root = tree();
  try {
    const audit = auditState(ids, root);
    assert.equal(audit.layout, []);
    assert.equal(audit.release, []);
    assert.equal(audit.problems, []);
    assert.ok(audit.releasePresent);
    assert.is(audit.checked, 9, "root, telemetry, spool, credentials, install, current, server.js, agent, etc-link");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("violations are reported with path, mode and what the rules want, in their zone", () => {
  const root = tree();
  try {
    writeFileSync(join(root, "telemetry/open"), "", { mode: 0o644 });
    chmodSync(join(root, "telemetry/open"), 0o644);
    chmodSync(join(root, "install/current/server.js"), 0o666);
    const audit = auditState(ids, root);
    assert.equal(audit.layout, [{ path: `${root}/telemetry/open`, kind: "file", mode: "0644", uid, gid, want: { uid, gid, mode: "0600" } }]);
    assert.equal(audit.release, [{ path: `${root}/install/current/server.js`, kind: "file", mode: "0666", uid, gid, want: { uid, gid, mode: "0644" } }]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("names that are not UTF-8 are reached and shown escaped", () => {
  const root = tree();
  try {
    const name = Buffer.concat([Buffer.from(`${root}/telemetry/bad-`), Buffer.from([0xff, 0xfe])]);
    writeFileSync(name, "", { mode: 0o644 });
    chmodSync(name, 0o644);
    const audit = auditState(ids, root);
    assert.is(audit.layout.length, 1);
    assert.is(audit.layout[0]!.path, `${root}/telemetry/bad-\\xff\\xfe`);
    assert.is(audit.layout[0]!.mode, "0644");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("the walk visits every entry once, depth-first without recursion, and reports what it cannot read", () => {
  const root = mkdtempSync(join(tmpdir(), "clankie-walk-"));
  try {
    let path = root;
    for (let i = 0; i < 200; i++) {
      path = join(path, "d");
      mkdirSync(path);
    }
    const problems: WalkProblem[] = [];
    const depths: number[] = [];
    const visited = walkReadOnly(root, 0, (entry) => (depths.push(entry.depth), 0), problems);
    assert.is(visited, 201);
    assert.is(Math.max(...depths), 200);
    assert.equal(problems, []);
    const missing: WalkProblem[] = [];
    assert.is(walkReadOnly(join(root, "nope"), 0, () => 0, missing), 0);
    assert.equal(missing, [{ path: join(root, "nope"), syscall: "lstat", code: "ENOENT" }]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

Walk("deeper than PATH_MAX: every entry read, by short paths below an anchor fd, a few fds at a time; shown whole", () => {
  const root = mkdtempSync(join(tmpdir(), "clankie-walk-"));
  try {
    // 3,000 levels of "d" (6,000 bytes of path; PATH_MAX is 4096), a file at the bottom: made by mkdir and chdir, as no path string can name it.
    const made = spawnSync("perl", ["-e", 'chdir $ARGV[0] or die; for (1..3000) { mkdir "d" or die; chdir "d" or die } open(my $f, ">", "leaf") or die', root]);
    assert.is(made.status, 0, String(made.stderr));
    const problems: WalkProblem[] = [];
    const fds = (): number => readdirSync("/proc/self/fd").length;
    const before = fds();
    let most = 0;
    let leaf = "";
    const visited = walkReadOnly(root, 0, (entry) => {
      most = Math.max(most, fds() - before);
      if (entry.kind === "file") leaf = entry.path;
      return 0;
    }, problems);
    assert.equal(problems, []);
    assert.is(visited, 3002);
    assert.is(leaf, `${root}${"/d".repeat(3000)}/leaf`);
    assert.ok(most <= 2, `at most two anchor fds at a time (the one a directory was reached through, and its own): ${most}`);
    assert.is(fds(), before, "every anchor closed");
  } finally {
    spawnSync("rm", ["-rf", root]);
  }
});

Walk("a chain deeper than DEPTH_LIMIT: the directory at the limit is visited, nothing below it; a path longer than SHOWN_PATH_BYTES is shown cut", () => {
  const root = mkdtempSync(join(tmpdir(), "clankie-walk-"));
  try {
    const made = spawnSync("perl", ["-e", 'chdir $ARGV[0] or die; for (1..$ARGV[1]) { mkdir "d" or die; chdir "d" or die } open(my $f, ">", "leaf") or die', root, String(DEPTH_LIMIT + 10)]);
    assert.is(made.status, 0, String(made.stderr));
    const problems: WalkProblem[] = [];
    let deepest = { depth: 0, path: "" };
    const visited = walkReadOnly(root, 0, (entry) => {
      if (entry.depth > deepest.depth) deepest = { depth: entry.depth, path: entry.path };
      return 0;
    }, problems);
    assert.equal(problems, []);
    assert.is(visited, DEPTH_LIMIT + 1);
    assert.is(deepest.depth, DEPTH_LIMIT);
    assert.is(deepest.path, `${`${root}${"/d".repeat(DEPTH_LIMIT)}`.slice(0, SHOWN_PATH_BYTES)}...`);
  } finally {
    spawnSync("rm", ["-rf", root]);
  }
});

Walk("nothing under the walked tree changes: modes, owners and times stay", () => {
  const root = tree();
  try {
    chmodSync(join(root, "credentials.json"), 0o666);
    const before = snapshot(root);
    auditState(ids, root);
    assert.equal(snapshot(root), before);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

function snapshot(root: string): string[] {
  const out: string[] = [];
  const visit = (path: string): void => {
    const st = lstatSync(path);
    out.push(`${path} ${st.mode} ${st.uid} ${st.gid} ${st.mtimeMs} ${st.ctimeMs}`);
    if (st.isDirectory()) for (const name of readdirSync(path).sort()) visit(join(path, name));
  };
  visit(root);
  return out;
}

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
Source.run();
