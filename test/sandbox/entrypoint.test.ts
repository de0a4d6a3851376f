/*
 * The root entrypoint in the launch sandbox. Judged by what the
 * kernel reports: /proc/<pid>/status read inside the body, and lstat of the
 * volumes from the host. Never by the program's own summary.
 */
import { chownSync, chmodSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { Body, IDS, SANDBOX_FIXTURES, SANDBOX_NODE, statusFields, DEFAULT_GROUP, DEFAULT_PASSWD, inBody } from "../helpers/sandbox.ts";
import { listTree, octal, treeDigest } from "../helpers/tree.ts";
import { verifyStageArgs } from "../../src/entrypoint/drop.ts";
import { SERVICE_OWN_ENV } from "../helpers/environments.ts";
import { imageIdentities } from "../helpers/identities.ts";
import { seededBody } from "../helpers/stand-in.ts";

const test = suite("entrypoint");
const SERVICE = [SANDBOX_NODE, `${SANDBOX_FIXTURES}/stand-in-service.mjs`];
const SUMMARY = /^clankie-separate: separated: service node \(1000\), agent clankie-agent \(1001\); \/state walked, \d+ checked, \d+ fixed; \/workspace (migrated|top only \(layout marker current\)), \d+ checked, \d+ fixed; \d+ ms$/;

/** A body as today's single-uid image leaves it: everything node's, seeded by the service itself. */
const legacyBody = seededBody;

function lines(text: string): string[] {
  return text.split("\n").filter((line) => line !== "");
}

function status(body: Body, options: Parameters<Body["run"]>[0]): { run: ReturnType<Body["run"]>; report: { pid: number; status: string; env: Record<string, string>; processes: { pid: number; uid: number; name: string }[] } } {
  const run = body.run(options);
  assert.is(run.status, 0, `exit ${run.status}: ${run.stderr}`);
  return { run, report: JSON.parse(run.stdout) };
}

rootTest(test, "today's launch (node, no capabilities): execs the service unchanged, touches nothing", () => {
  inBody(legacyBody(), (body) => {
    const before = treeDigest(body.dir);
    const { run, report } = status(body, { as: "node", command: [...SERVICE, "status"], env: { KEEP_ME: "1", NODE_OPTIONS: "--no-warnings" } });
    const st = statusFields(report.status);
    assert.equal(st.uids, [1000, 1000, 1000, 1000]);
    assert.is(st.capEff, "0000000000000000");
    assert.is(st.capAmb, "0000000000000000");
    assert.equal(Object.keys(report.env).filter((k) => k.startsWith("CLANKIE_")), []);
    assert.is(report.env.KEEP_ME, "1");
    assert.is(report.env.NODE_OPTIONS, "--no-warnings", "environment untouched in legacy mode");
    assert.is(run.stderr, "");
    assert.is(treeDigest(body.dir), before, "nothing on disk changed");
  });
});

rootTest(test, "root without NoNewPrivs: one line, exit 77, /state untouched", () => {
  inBody(legacyBody(), (body) => {
    const before = treeDigest(body.dir);
    const run = body.run({ as: "root", noNewPrivs: false, command: [...SERVICE, "status"] });
    assert.is(run.status, 77);
    assert.is(run.stdout, "");
    assert.is(run.stderr, "clankie-separate: started as root without NoNewPrivs; add --security-opt no-new-privileges to docker run (Kubernetes: allowPrivilegeEscalation: false)\n");
    assert.is(treeDigest(body.dir), before);
  });
});

rootTest(test, "root without FOWNER and SETPCAP: names each missing --cap-add, exit 77, untouched", () => {
  inBody(legacyBody(), (body) => {
    const before = treeDigest(body.dir);
    const run = body.run({ as: "root", caps: ["chown", "dac_override", "setuid", "setgid"], command: [...SERVICE, "status"] });
    assert.is(run.status, 77);
    assert.is(run.stderr, "clankie-separate: started as root without capabilities FOWNER, SETPCAP; add --cap-add FOWNER --cap-add SETPCAP to docker run\n");
    assert.is(treeDigest(body.dir), before);
  });
});

const identityCases: [string, string, string, string][] = [
  ["no clankie-agent", DEFAULT_PASSWD.replace(/^clankie-agent.*\n/m, ""), DEFAULT_GROUP, "clankie-separate: user clankie-agent is missing from /etc/passwd; rebuild the image from this project's Dockerfile, which creates it"],
  ["agent uid equals node's", DEFAULT_PASSWD.replace("clankie-agent:x:1001:1001", "clankie-agent:x:1000:1001"), DEFAULT_GROUP, "clankie-separate: user clankie-agent has the same uid as node (1000); give clankie-agent a uid of its own (the image uses 1001)"],
  ["agent uid 0", DEFAULT_PASSWD.replace("clankie-agent:x:1001:1001", "clankie-agent:x:0:1001"), DEFAULT_GROUP, "clankie-separate: user clankie-agent has uid 0 gid 1001; give clankie-agent a non-zero uid and gid of its own"],
  ["node not in clankie-workspace", DEFAULT_PASSWD, DEFAULT_GROUP.replace("node,clankie-agent", "clankie-agent"), "clankie-separate: user node is not a member of clankie-workspace; run: usermod -aG clankie-workspace node in the image"],
  ["no clankie-workspace", DEFAULT_PASSWD, DEFAULT_GROUP.replace(/^clankie-workspace.*\n/m, ""), "clankie-separate: group clankie-workspace is missing from /etc/group; rebuild the image from this project's Dockerfile, which creates it"],
  ["a private-job group with a member", DEFAULT_PASSWD, DEFAULT_GROUP.replace(/^(clankie-private-0:x:\d+:)$/m, "$1node"), "clankie-separate: group clankie-private-0 has members (node); leave clankie-private-0 without members in /etc/group: only a private job's lease grants it"],
];
for (const [name, passwd, group, message] of identityCases) {
  rootTest(test, `identities: ${name} is refused with exit 67 before any change`, () => {
    const body = legacyBody({ passwd, group });
    try {
      const before = treeDigest(body.dir);
      const run = body.run({ as: "root", command: [...SERVICE, "status"] });
      assert.is(run.status, 67);
      assert.is(run.stderr, `${message}\n`);
      assert.is(treeDigest(body.dir), before);
    } finally {
      body.cleanup();
    }
  });
}

rootTest(test, "the ADR launch: service is node with no capability in any set (the bounding set too), NoNewPrivs, no uid 0 left, under tini", () => {
  inBody(legacyBody(), (body) => {
    const { run, report } = status(body, { as: "root", command: [...SERVICE, "status"] });
    const st = statusFields(report.status);
    assert.equal(st.uids, [1000, 1000, 1000, 1000]);
    assert.equal(st.gids, [1000, 1000, 1000, 1000]);
    assert.equal(st.groups, [1000, 1002]);
    // Beyond ADR 0272: the spawner holds SETUID+SETGID (test/sandbox/spawner.test.ts), the service nothing.
    for (const set of [st.capInh, st.capPrm, st.capEff, st.capAmb, st.capBnd]) assert.is(set, "0000000000000000");
    assert.is(st.noNewPrivs, "1");
    assert.equal(report.processes.filter((p) => p.uid === 0), [], "no process of uid 0 remains");
    const pid1 = report.processes.find((p) => p.pid === 1);
    assert.equal(pid1, { pid: 1, uid: 1000, name: "tini" }, "tini is pid 1, as node");
    assert.equal(lines(run.stderr).length, 1);
    assert.match(lines(run.stderr)[0]!, SUMMARY);
  });
});

rootTest(test, "the service environment: fixed PATH, node's HOME/USER/LOGNAME, CLANKIE_*, code loaders dropped with one warning", () => {
  inBody(legacyBody(), (body) => {
    const { run, report } = status(body, {
      as: "root",
      command: [...SERVICE, "status"],
      env: { KEEP_ME: "1", NODE_OPTIONS: "--no-warnings", GCONV_PATH: "/tmp", PATH: "/workspace/bin:/usr/bin", CLANKIE_AGENT_UID: "0" },
    });
    assert.equal(report.env, { KEEP_ME: "1", ...SERVICE_OWN_ENV, CLANKIE_SPAWNER_FD: "3" });
    const errors = lines(run.stderr);
    assert.is(errors[0], "clankie-separate: warning: variables that load code or are ours to set were removed from the service's environment: CLANKIE_AGENT_UID, GCONV_PATH, NODE_OPTIONS");
    assert.match(errors[1]!, SUMMARY);
  });
});

rootTest(test, "extra capabilities are dropped with one warning line", () => {
  inBody(legacyBody(), (body) => {
    const { run, report } = status(body, { as: "root", caps: ["chown", "dac_override", "fowner", "setpcap", "setuid", "setgid", "kill", "net_raw"], command: [...SERVICE, "status"] });
    assert.is(lines(run.stderr)[0], "clankie-separate: warning: capabilities beyond the six of ADR 0272 are dropped: KILL, NET_RAW");
    assert.is(statusFields(report.status).capBnd, "0000000000000000");
  });
});

rootTest(test, "/state becomes service-only: 0711 top, node-owned, no group/other bits, release readable, agent home 0700", () => {
  inBody(legacyBody(), (body) => {
    writeFileSync(join(body.state, "loose.json"), "{}", { mode: 0o666 });
    chmodSync(join(body.state, "loose.json"), 0o6777);
    mkdirSync(join(body.state, "sub"), { mode: 0o777 });
    chmodSync(join(body.state, "sub"), 0o1777);
    chownSync(join(body.state, "sub"), 1001, 1001);
    const run = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(run.status, 0, run.stderr);
    const agentHome = join(body.state, "agent");
    for (const entry of listTree(body.state, { skip: (p) => p.startsWith(`${agentHome}/`) })) {
      const where = `${entry.path} ${entry.uid}:${entry.gid} ${octal(entry.mode)}`;
      if (entry.path === body.state) {
        assert.is(`${entry.uid}:${entry.gid} ${octal(entry.mode)}`, "1000:1000 0711", where);
      } else if (entry.path === agentHome) {
        assert.is(`${entry.uid}:${entry.gid} ${octal(entry.mode)}`, "1001:1001 0700", where);
      } else if (entry.path.startsWith(join(body.state, "install"))) {
        assert.is(entry.uid, 1000, where);
        assert.is(entry.mode & 0o7022, 0, `release writable by others or set-id: ${where}`);
        assert.is(entry.mode & 0o044, 0o044, `release not readable by all: ${where}`);
        if (entry.kind === "dir") assert.is(entry.mode, 0o755, where);
      } else {
        assert.is(entry.uid, 1000, where);
        assert.is(entry.gid, 1000, where);
        assert.is(entry.mode & 0o7077, 0, `group/other or set-id bits left: ${where}`);
      }
    }
    assert.is(octal(listTree(join(body.state, "install/current/bin/tool"))[0]!.mode), "0755");
  });
});

interface UmaskRun {
  umask: { started: string | null; now: string | null };
  modes: { secret: string; shared: string; sharedDir: string };
  readSecret: { exitCode: number | null; stdout: string; stderr: string };
  readSecretConfined: { exitCode: number | null; stdout: string; stderr: string };
  readShared: { exitCode: number | null; stdout: string; stderr: string };
  writeShared: { exitCode: number | null; stdout: string; stderr: string };
  writeInSharedDir: { exitCode: number | null; stdout: string; stderr: string };
}

function umaskRun(body: Body, control?: string): UmaskRun {
  const run = body.run({ as: "root", command: [...SERVICE, "umask", ...(control === undefined ? [] : [control])] });
  assert.is(run.status, 0, `exit ${run.status}: ${run.stderr}`);
  const result = JSON.parse(run.stdout) as Omit<UmaskRun, "readSecret">;
  // The umask's own share: the agent's uid and groups alone (no Landlock domain, which keeps /state closed whatever the mode), as root's setpriv starts it in the same body: the service holds no capability to start it (beyond ADR 0272).
  const alone = body.run({ as: "root", direct: true, command: ["/usr/bin/setpriv", `--reuid=${IDS.agent}`, `--regid=${IDS.agent}`, `--groups=${IDS.agent},${IDS.workspace}`, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--", "/bin/cat", "/state/x.json"] });
  return { ...result, readSecret: { exitCode: alone.status, stdout: alone.stdout, stderr: alone.stderr } };
}

rootTest(test, "the service's umask 0007: what it writes to /state after the start is closed to the agent, what it writes to /workspace is shared", () => {
  inBody(legacyBody(), (body) => {
    const after = umaskRun(body);
    assert.equal(after.umask, { started: "0007", now: "0007" }, "Umask: in the service's /proc/self/status");
    assert.equal(after.modes, { secret: "0660", shared: "0660", sharedDir: "2770" });
    assert.is(listTree(join(body.state, "x.json"))[0]!.gid, IDS.service, "a new /state entry has node's group, which the agent is not in");
    assert.is(after.readSecret.exitCode, 1, "the agent's uid cannot read /state/x.json");
    assert.match(after.readSecret.stderr, /Permission denied/);
    assert.is(after.readSecretConfined.exitCode, 1, "nor can agent work through the shim");
    assert.is(after.readShared.exitCode, 0, after.readShared.stderr);
    assert.is(after.readShared.stdout, "the service's"); // execa strips the final newline
    assert.is(after.writeShared.exitCode, 0, after.writeShared.stderr);
    assert.is(after.writeShared.stdout, "the service's\nthe agent's");
    assert.is(after.writeInSharedDir.exitCode, 0, after.writeInSharedDir.stderr);
    const shared = listTree(join(body.workspace, "project/from-service.txt"))[0]!;
    assert.is(`${shared.uid}:${shared.gid}`, `${IDS.service}:${IDS.workspace}`);

    // Control: the same writes under umask 0022 (what the service had before) are readable by the agent.
    rmSync(join(body.state, "x.json"));
    rmSync(join(body.workspace, "project/from-service.txt"));
    rmSync(join(body.workspace, "project/from-service"), { recursive: true });
    const control = umaskRun(body, "022");
    assert.equal(control.umask, { started: "0007", now: "0022" });
    assert.is(control.modes.secret, "0644");
    assert.is(control.readSecret.exitCode, 0, "under 0022 the agent reads the service's new file by name");
    assert.match(control.readSecret.stdout, /written-after-start/);
    assert.is(control.readSecretConfined.exitCode, 1, "agent work through the shim cannot, even then: its Landlock domain keeps /state closed");
    assert.is(control.modes.shared, "0644");
    assert.match(control.writeShared.stderr, /Permission denied/, "and under 0022 it cannot write what the service shares");
  });
});

rootTest(test, "the release root: what the release keeps private stays private to the agent, its tools stay runnable", () => {
  inBody(legacyBody(), (body) => {
    const install = join(body.state, "install");
    // A secret of the release (npm writes its .npmrc 0600), a private directory, and a
    // release the service unpacked under its umask 0007 (directories 0770, files 0660/0770).
    writeFileSync(join(install, ".npmrc"), "//registry.example/:_authToken=npm_secret\n", { mode: 0o600 });
    mkdirSync(join(install, "private"), { mode: 0o700 });
    writeFileSync(join(install, "private/notes"), "kept\n", { mode: 0o644 });
    mkdirSync(join(install, "next/bin"), { recursive: true });
    chmodSync(join(install, "next"), 0o770);
    chmodSync(join(install, "next/bin"), 0o770);
    writeFileSync(join(install, "next/bin/tool"), "#!/bin/sh\necho next tool\n", { mode: 0o770 });
    writeFileSync(join(install, "next/server.js"), "// v2\n", { mode: 0o660 });
    for (const path of ["install/.npmrc", "install/private", "install/private/notes", "install/next", "install/next/bin", "install/next/bin/tool", "install/next/server.js"]) {
      chownSync(join(body.state, path), IDS.service, IDS.service);
    }
    const script = [
      "for f in /state/install/.npmrc /state/install/private/notes /state/install/current/server.js /state/install/next/server.js; do",
      '  if cat "$f" >/dev/null 2>&1; then echo "read $f"; else echo "denied $f"; fi',
      "done",
      "/state/install/current/bin/tool",
      "/state/install/next/bin/tool",
    ].join("\n");
    const run = body.run({ as: "root", command: [...SERVICE, "agent", "{}", "/bin/sh", "-c", script] });
    assert.is(run.status, 0, run.stderr);
    const agent = JSON.parse(run.stdout) as { exitCode: number; stdout: string; stderr: string };
    assert.is(agent.exitCode, 0, agent.stderr);
    assert.equal(lines(agent.stdout), [
      "denied /state/install/.npmrc",
      "denied /state/install/private/notes",
      "read /state/install/current/server.js",
      "read /state/install/next/server.js",
      "release tool",
      "next tool",
    ]);
    const mode = (path: string): string => octal(listTree(join(install, path))[0]!.mode);
    assert.equal(
      [".npmrc", "private", "private/notes", "next", "next/bin", "next/bin/tool", "next/server.js", "current/bin/tool", "current/server.js"].map((p) => `${p} ${mode(p)}`),
      [".npmrc 0600", "private 0700", "private/notes 0644", "next 0755", "next/bin 0755", "next/bin/tool 0755", "next/server.js 0644", "current/bin/tool 0755", "current/server.js 0644"],
    );
  });
});

/** setfacl(1) on the host (the acl package, scripts/setup-debian.sh): the image has none and needs none. */
function setfacl(...args: string[]): void {
  const run = spawnSync("setfacl", args, { encoding: "utf8" });
  assert.is(run.status, 0, `setfacl ${args.join(" ")}: ${run.stderr}`);
}

/** The entries of `path` that carry an ACL (getfacl -s skips those with only the base entries), as getfacl names them. */
function withAcls(...paths: string[]): string[] {
  const run = spawnSync("getfacl", ["-s", "-p", ...paths], { encoding: "utf8" });
  return [...run.stdout.matchAll(/^# file: (.*)$/gm)].map((m) => m[1]!);
}

/** Runs `script` with a uid and its own group only (setpriv), as root on the host. */
function asUid(uid: number, script: string): ReturnType<typeof spawnSync> {
  return spawnSync("/usr/bin/setpriv", [`--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "--", "/bin/sh", "-c", script], { encoding: "utf8" });
}

rootTest(test, "a default ACL on /state giving the agent read is removed at the start: what the service writes later with no mode stays closed to the agent's uid", () => {
  // Control, no start: in a directory of node's with that default ACL, a file node writes under
  // its umask 0007 with no mode gets the agent's named entry, and the agent's uid reads it.
  inBody(new Body(), (control) => {
    const dir = join(control.dir, "state-like");
    mkdirSync(dir, { mode: 0o711 });
    chmodSync(control.dir, 0o711);
    chownSync(dir, IDS.service, IDS.service);
    setfacl("-d", "-m", `u:${IDS.agent}:r`, dir);
    const wrote = asUid(IDS.service, `umask 0007 && echo written-after-start > ${dir}/x.json`);
    assert.is(wrote.status, 0, String(wrote.stderr));
    const read = asUid(IDS.agent, `cat ${dir}/x.json`);
    assert.is(read.status, 0, `the ACL lets the agent read without the start: ${read.stderr}`);
    assert.is(read.stdout, "written-after-start\n");
  });
  inBody(legacyBody(), (body) => {
    setfacl("-d", "-m", `u:${IDS.agent}:r`, body.state);
    setfacl("-d", "-m", `u:${IDS.agent}:r`, join(body.state, "telemetry"));
    const after = umaskRun(body);
    assert.is(after.readSecret.exitCode, 1, "the agent's uid cannot read /state/x.json");
    assert.match(after.readSecret.stderr, /Permission denied/);
    assert.is(after.modes.secret, "0660", "the umask, not the default ACL, made the mode");
    assert.equal(withAcls(body.state, join(body.state, "telemetry"), join(body.state, "x.json")), [], "no ACL is left on /state, below it, or on what the service wrote");
  });
});

rootTest(test, "an ACL on a private release file does not open it: after the start it stays 0600, the ACL gone, and the agent cannot read it", () => {
  inBody(legacyBody(), (body) => {
    const install = join(body.state, "install");
    writeFileSync(join(install, ".npmrc"), "//registry.example/:_authToken=npm_secret\n", { mode: 0o600 });
    writeFileSync(join(install, "shared.js"), "// shared\n", { mode: 0o644 });
    for (const name of [".npmrc", "shared.js"]) {
      chownSync(join(install, name), IDS.service, IDS.service);
      setfacl("-m", `u:${IDS.agent}:rwx`, join(install, name));
    }
    assert.is(octal(statSync(join(install, ".npmrc")).mode & 0o7777), "0670", "the mode's group bits show the ACL's mask");
    const script = "for f in /state/install/.npmrc /state/install/shared.js; do if cat \"$f\" >/dev/null 2>&1; then echo \"read $f\"; else echo \"denied $f\"; fi; done";
    const run = body.run({ as: "root", command: [...SERVICE, "agent", "{}", "/bin/sh", "-c", script] });
    assert.is(run.status, 0, run.stderr);
    const agent = JSON.parse(run.stdout) as { exitCode: number; stdout: string; stderr: string };
    assert.equal(lines(agent.stdout), ["denied /state/install/.npmrc", "read /state/install/shared.js"]);
    assert.match(run.stderr, /^clankie-separate: warning: ACLs were removed from 2 entries of \/state \(its layout is its mode bits\), for example: /m);
    assert.equal([".npmrc", "shared.js"].map((name) => octal(statSync(join(install, name)).mode & 0o7777)), ["0600", "0644"]);
    assert.equal(withAcls(join(install, ".npmrc"), join(install, "shared.js")), []);
  });
});

rootTest(test, "/workspace gets the shared group: setgid dirs g+rwx, files g+rw, owners kept; later starts do not walk", () => {
  inBody(legacyBody(), (body) => {
    writeFileSync(join(body.workspace, "agents-file"), "x", { mode: 0o600 });
    chownSync(join(body.workspace, "agents-file"), 1001, 1001);
    writeFileSync(join(body.workspace, "setuid-tool"), "#!/bin/sh\n", { mode: 0o755 });
    chmodSync(join(body.workspace, "setuid-tool"), 0o4755);
    const first = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(first.status, 0, first.stderr);
    assert.match(first.stderr, /\/workspace migrated/);
    for (const entry of listTree(body.workspace)) {
      const where = `${entry.path} ${entry.uid}:${entry.gid} ${octal(entry.mode)}`;
      assert.is(entry.gid, 1002, where);
      if (entry.kind === "dir") assert.is(entry.mode & 0o2070, 0o2070, where);
      if (entry.kind === "file") {
        assert.is(entry.mode & 0o060, 0o060, where);
        assert.is(entry.mode & 0o6000, 0, where);
      }
    }
    assert.is(listTree(body.workspace)[0]!.uid, 1000, "top owned by node");
    assert.is(listTree(join(body.workspace, "agents-file"))[0]!.uid, 1001, "the agent's file stays the agent's");
    // A later start reads the marker and checks the top only: a planted wrong group stays.
    writeFileSync(join(body.workspace, "later"), "x", { mode: 0o600 });
    chownSync(join(body.workspace, "later"), 0, 0); // the setgid top would have given it the group
    const second = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(second.status, 0, second.stderr);
    assert.match(second.stderr, /\/workspace top only \(layout marker current\), 1 checked, 0 fixed/);
    assert.is(listTree(join(body.workspace, "later"))[0]!.gid, 0, "not walked again");
    // Without the marker it walks again.
    rmSync(join(body.state, ".clankie-separate/workspace-layout"));
    const third = body.run({ as: "root", command: ["/bin/true"] });
    assert.match(third.stderr, /\/workspace migrated/);
    assert.is(listTree(join(body.workspace, "later"))[0]!.gid, 1002);
  });
});

rootTest(test, "the walk moves its working directory and puts it back: the service starts where the launcher started it", () => {
  inBody(legacyBody(), (body) => {
    const run = body.run({ as: "root", direct: true, command: ["/bin/sh", "-c", "cd /workspace/project && exec /usr/local/sbin/clankie-separate /bin/pwd"] });
    assert.is(run.status, 0, run.stderr);
    assert.is(run.stdout, "/workspace/project\n");
  });
});

rootTest(test, "a symlink planted in /state is not followed: its target keeps owner and mode", () => {
  inBody(legacyBody(), (body) => {
    const victimDir = join(body.dir, "victim");
    mkdirSync(victimDir);
    writeFileSync(join(victimDir, "file"), "root's", { mode: 0o644 });
    symlinkSync("/victim/file", join(body.state, "evil-link"));
    symlinkSync("/victim", join(body.state, "evil-dir-link"));
    symlinkSync("/victim/file", join(body.workspace, "ws-link"));
    const run = body.run({ as: "root", command: ["/bin/true"], binds: [[victimDir, "/victim", "rw"]] });
    assert.is(run.status, 0, run.stderr);
    const victim = listTree(join(victimDir, "file"))[0]!;
    assert.is(`${victim.uid}:${victim.gid} ${octal(victim.mode)}`, "0:0 0644");
    assert.is(listTree(victimDir)[0]!.uid, 0);
    assert.is(listTree(join(body.state, "evil-link"))[0]!.uid, 1000, "the link itself is node's");
  });
});

rootTest(test, "a symlink planted as /state/agent, the agent's home, is refused (exit 65): its target is never given to the agent", () => {
  inBody(legacyBody(), (body) => {
    const victimDir = join(body.dir, "victim");
    mkdirSync(victimDir, { mode: 0o755 });
    chmodSync(victimDir, 0o755);
    rmSync(join(body.state, "agent"), { recursive: true, force: true });
    symlinkSync("/victim", join(body.state, "agent"));
    const run = body.run({ as: "root", command: ["/bin/true"], binds: [[victimDir, "/victim", "rw"]] });
    assert.is(run.status, 65);
    assert.is(run.stderr, "clankie-separate: /state/agent is a symlink, not a directory; remove it (rm -rf /state/agent) and start again: it is recreated empty\n");
    const st = listTree(victimDir)[0]!;
    assert.is(`${st.uid}:${st.gid} ${octal(st.mode)}`, "0:0 0755");
    // The control: a directory there is the agent's after the start.
    rmSync(join(body.state, "agent"));
    mkdirSync(join(body.state, "agent"));
    const again = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(again.status, 0, again.stderr);
    const home = listTree(join(body.state, "agent"))[0]!;
    assert.is(`${home.uid}:${home.gid} ${octal(home.mode)}`, "1001:1001 0700");
  });
});

rootTest(test, "a hard link in /state to a file another uid owns is refused (exit 65), the file untouched", () => {
  inBody(legacyBody(), (body) => {
    const victim = join(body.dir, "victim-file");
    writeFileSync(victim, "root's", { mode: 0o644 });
    linkSync(victim, join(body.state, "hardlink"));
    const run = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(run.status, 65);
    assert.is(run.stderr, `clankie-separate: /state/hardlink is a hard link (2 names) to a file owned by uid 0; taking it over would change that file everywhere; remove it (rm "/state/hardlink") and start again\n`);
    const st = listTree(victim)[0]!;
    assert.is(`${st.uid}:${st.gid} ${octal(st.mode)}`, "0:0 0644");
  });
});

rootTest(test, "a hard link in /workspace to a foreign file is left alone with a warning", () => {
  inBody(legacyBody(), (body) => {
    const victim = join(body.dir, "victim-file");
    writeFileSync(victim, "root's", { mode: 0o600 });
    linkSync(victim, join(body.workspace, "hardlink"));
    const run = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(run.status, 0, run.stderr);
    assert.match(run.stderr, /clankie-separate: warning: 1 entry left alone, for example: \/workspace\/hardlink \(hard link \(2 names\) that may lead outside \/workspace: left alone\)/);
    const st = listTree(victim)[0]!;
    assert.is(`${st.uid}:${st.gid} ${octal(st.mode)}`, "0:0 0600");
  });
});

rootTest(test, "FIFOs do not block the walk and are taken over; device nodes in /state are refused", () => {
  inBody(legacyBody(), (body) => {
    assert.is(spawnSync("mkfifo", ["-m", "666", join(body.state, "fifo")]).status, 0);
    assert.is(spawnSync("mkfifo", ["-m", "600", join(body.workspace, "fifo")]).status, 0);
    const run = body.run({ as: "root", command: ["/bin/true"], timeoutMs: 20_000 });
    assert.is(run.status, 0, run.stderr);
    const fifo = listTree(join(body.state, "fifo"))[0]!;
    assert.is(`${fifo.uid} ${octal(fifo.mode)}`, "1000 0600");
    assert.is(listTree(join(body.workspace, "fifo"))[0]!.gid, 1002);
    assert.is(spawnSync("mknod", [join(body.state, "null"), "c", "1", "3"]).status, 0);
    const refused = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(refused.status, 65);
    assert.is(refused.stderr, `clankie-separate: /state/null is a device node; remove it (rm "/state/null") and start again\n`);
  });
});

rootTest(test, "names that are not UTF-8 and a tree deeper than PATH_MAX are taken over", () => {
  inBody(legacyBody(), (body) => {
    const odd = Buffer.concat([Buffer.from(`${body.state}/`), Buffer.from([0x66, 0xff, 0xfe, 0x0a, 0x01])]);
    writeFileSync(odd, "x", { mode: 0o666 });
    // 1,200 levels of 5-byte names: 7,200 bytes of path, beyond PATH_MAX (4096).
    const made = spawnSync("perl", ["-e", 'chdir $ARGV[0] or die; for (1..1200) { mkdir "deep_" or die; chmod 0777, "deep_"; chdir "deep_" or die } open(my $f, ">", "leaf") or die; print $f "x"; close $f; chmod 0666, "leaf"', body.state]);
    assert.is(made.status, 0, String(made.stderr));
    const run = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(run.status, 0, run.stderr);
    const oddSt = spawnSync("find", [body.state, "-maxdepth", "1", "-type", "f", "-name", "f*", "-printf", "%U %m\\n"], { encoding: "utf8" });
    assert.is(oddSt.stdout.trim(), "1000 600");
    const deep = spawnSync("find", [join(body.state, "deep_"), "-printf", "%U:%G %m\\n"], { encoding: "utf8", maxBuffer: 1 << 24 });
    const counts = new Map<string, number>();
    for (const line of lines(deep.stdout)) counts.set(line, (counts.get(line) ?? 0) + 1);
    assert.equal([...counts.entries()].sort(), [["1000:1000 600", 1], ["1000:1000 700", 1200]]);
  });
});

/** The name of every level of a planted chain: 255 bytes (NAME_MAX), the most path per level an attacker gets. */
const LEVEL = "d".repeat(255);

/** Plants a chain of `levels` directories named LEVEL (mode 0777, node's) below `top`, with a file `leaf` (0666) at its bottom: mkdir and chdir in one process, since no path string can name it. */
function plantChain(top: string, levels: number): void {
  const made = spawnSync("perl", ["-e", 'my ($top, $n, $d) = @ARGV; mkdir $top; chdir $top or die; for (1..$n) { mkdir $d or die; chmod 0777, $d; chown 1000, 1000, $d; chdir $d or die } open(my $f, ">", "leaf") or die; print $f "SEKRIT"; close $f; chmod 0666, "leaf"; chown 1000, 1000, "leaf"', top, String(levels), LEVEL]);
  assert.is(made.status, 0, String(made.stderr));
  chmodSync(top, 0o777);
  chownSync(top, IDS.service, IDS.service);
}

/** As the agent's uid and groups alone (setpriv, no Landlock domain), in the body: how far down each chain it gets, and whether it reads its leaf. */
function agentReach(body: Body, tops: readonly string[]): string[] {
  const probe = `my $d = "d" x 255; for my $top (@ARGV) { chdir "/" or die; my ($n, $f) = (-1); if (chdir $top) { $n = 0; $n++ while chdir $d } my $leaf = $n >= 0 && open($f, "<", "leaf") ? <$f> : "denied"; print "$top $n $leaf\n" }`;
  const run = body.run({ as: "root", direct: true, command: ["/usr/bin/setpriv", `--reuid=${IDS.agent}`, `--regid=${IDS.agent}`, "--clear-groups", "--", "/usr/bin/perl", "-e", probe, ...tops] });
  assert.is(run.status, 0, run.stderr);
  return lines(run.stdout);
}

/** The launch's address space (RLIMIT_AS, each process's): what the built executable needs to start, with room for a walk; as docker run --memory 2g bounds it. */
const LAUNCH_AS = String(2 * 1024 ** 3);

/** Each level's path kept, as the ACL walk kept it: depth^2 x 255 / 2 bytes, gigabytes at a few thousand levels. */
const KEEP_EVERY_PATH = 'my ($p, @paths) = (""); for (1..$ARGV[0]) { $p .= "/" . ("d" x 255); push @paths, $p } print scalar(@paths), "\n"';

rootTest(test, "chains 20,000 levels deep of 255-byte names in /workspace and /state: the start succeeds with one warning, in few fds and 2 GiB of address space, and the agent reaches nothing below the limit in /state", () => {
  inBody(legacyBody(), (body) => {
    const chains = ["/workspace/deep", "/state/deep", "/state/install/deep"];
    mkdirSync(join(body.state, "install"), { recursive: true });
    try {
      for (const chain of chains) plantChain(join(body.dir, chain), 20_000);
      // The control: in the single-uid layout the agent's uid reaches the bottom of every chain.
      assert.equal(agentReach(body, chains), chains.map((chain) => `${chain} 20000 SEKRIT`));
      // A launch whose RLIMIT_NOFILE is 1024 (a common container default): one fd per level ran out at about 1,000 levels.
      // Its address space is bounded too: the ACL walk that kept each level's path was killed by the memory limit at every start.
      const launch = { as: "root", command: ["/bin/true"], wrap: ["prlimit", "--nofile=1024:1024", `--as=${LAUNCH_AS}`, "--"] } as const;
      // The control of the limit: keeping each level's path of the chain, as the ACL walk did, does not fit in it.
      const kept = body.run({ ...launch, direct: true, command: ["/usr/bin/perl", "-e", KEEP_EVERY_PATH, "20000"] });
      assert.not.equal(kept.status, 0, kept.stdout);
      assert.match(kept.stderr, /Out of memory/);
      const run = body.run({ ...launch, timeoutMs: 180_000 });
      assert.is(run.status, 0, run.stderr.slice(0, 600));
      const [warning, summary, ...rest] = lines(run.stderr);
      assert.equal(rest, [], run.stderr.slice(0, 600));
      assert.match(summary!, SUMMARY);
      // Each example names the directory at the limit (4096 levels below /state or /workspace), its path cut to 120 characters.
      const atLimit = (chain: string): string => `${`${chain}${`/${LEVEL}`.repeat(4096 - (chain.split("/").length - 2))}`.slice(0, 120)}... (4096 levels deep: nothing below it was walked)`;
      const prefix = "clankie-separate: warning: 3 entries left alone, for example: ";
      assert.ok(warning!.startsWith(prefix), warning);
      assert.equal(warning!.slice(prefix.length).split("; ").sort(), chains.map(atLimit).sort());
      // /state: the directory at the limit is the service's and closed (the release's too), so nothing below it is reachable; /workspace's chain is the agent's to reach.
      assert.equal(agentReach(body, chains), ["/workspace/deep 20000 SEKRIT", "/state/deep -1 denied", "/state/install/deep 4093 denied"]);
      // A restart: /state is walked, and the untaken entries below the limit warned about, again.
      const again = body.run({ ...launch, timeoutMs: 180_000 });
      assert.is(again.status, 0, again.stderr.slice(0, 600));
      assert.match(again.stderr, /^clankie-separate: warning: 2 entries left alone, for example: \/state\/(install\/)?deep\/d{100,}\.\.\. \(4096 levels deep/);
      assert.match(lines(again.stderr)[1]!, SUMMARY);
    } finally {
      // rm(1) removes a tree of any depth; a recursive rmSync is not asked to.
      for (const chain of chains) spawnSync("rm", ["-rf", join(body.dir, chain)]);
    }
  });
});

rootTest(test, "another filesystem mounted inside /state is not entered", () => {
  inBody(legacyBody(), (body) => {
    const other = join(body.dir, "other");
    mkdirSync(other);
    writeFileSync(join(other, "secret"), "x", { mode: 0o644 });
    mkdirSync(join(body.state, "mnt"));
    const run = body.run({ as: "root", command: ["/bin/true"], binds: [[other, "/state/mnt", "rw"]] });
    assert.is(run.status, 0, run.stderr);
    assert.match(run.stderr, /left alone, for example: \/state\/mnt \(another filesystem is mounted here; it was not entered\)/);
    assert.is(listTree(join(other, "secret"))[0]!.uid, 0);
  });
});

rootTest(test, "a bind mount of the same filesystem deeper inside /state is not entered either", () => {
  inBody(legacyBody(), (body) => {
    const other = join(body.dir, "other");
    mkdirSync(other);
    writeFileSync(join(other, "secret"), "x", { mode: 0o644 });
    mkdirSync(join(body.state, "a", "b"), { recursive: true });
    writeFileSync(join(body.state, "a", "mnt-sibling"), "x", { mode: 0o644 });
    mkdirSync(join(body.state, "a", "mnt"));
    // The same filesystem as /state (st_dev equal): only mountinfo tells it is a mount point.
    assert.is(statSync(other).dev, statSync(body.state).dev);
    const run = body.run({ as: "root", command: ["/bin/true"], binds: [[other, "/state/a/mnt", "rw"]] });
    assert.is(run.status, 0, run.stderr);
    assert.match(run.stderr, /\/state\/a\/mnt \(another filesystem is mounted here; it was not entered\)/);
    assert.is(listTree(join(other, "secret"))[0]!.uid, 0);
    assert.is(statSync(join(body.state, "a", "mnt-sibling")).uid, 1000);
    // The next start finds the rest fitting, walks, and warns again.
    const again = body.run({ as: "root", command: ["/bin/true"], binds: [[other, "/state/a/mnt", "rw"]] });
    assert.is(again.status, 0, again.stderr);
    assert.match(again.stderr, /\/state walked, \d+ checked, 0 fixed/);
    assert.match(again.stderr, /\/state\/a\/mnt \(another filesystem is mounted here; it was not entered\)/);
    // Control: without the mount the walk enters the directory that was under the mount
    // (root's, never taken over) and fixes it, and the start after that fixes nothing.
    const control = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(control.status, 0, control.stderr);
    assert.match(control.stderr, /\/state walked, \d+ checked, 1 fixed/);
    const fits = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(fits.status, 0, fits.stderr);
    assert.match(fits.stderr, /\/state walked, \d+ checked, 0 fixed/);
  });
});

/** A tmpfs of its own on the host (the sandbox binds it where the test says); unmounted by the caller. */
function hostTmpfs(path: string, size: string): void {
  mkdirSync(path, { recursive: true });
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0755`, "tmpfs", path], { encoding: "utf8" });
  assert.is(mounted.status, 0, mounted.stderr);
}

function unmount(path: string): void {
  spawnSync("umount", ["-l", path]);
}

rootTest(test, "/state/agent as a mount of its own (a tmpfs): the start takes it over without a warning, never walks inside, and the agent uses it", () => {
  const body = legacyBody();
  const home = join(body.dir, "agent-home");
  hostTmpfs(home, "4m");
  try {
    writeFileSync(join(home, "from-before"), "x", { mode: 0o644 }); // root's, inside: the walk must not touch it
    const run = body.run({ as: "root", command: [...SERVICE, "agent", "{}", "/bin/sh", "-c", 'echo kept > "$HOME/file" && cat "$HOME/file" && stat -c "%u:%g %a" "$HOME"'], binds: [[home, "/state/agent", "rw"]] });
    assert.is(run.status, 0, run.stderr);
    assert.equal(lines(run.stderr).length, 1, `only the summary line, no "left alone" warning: ${run.stderr}`);
    assert.match(lines(run.stderr)[0]!, SUMMARY);
    const agent = JSON.parse(run.stdout) as { exitCode: number; stdout: string; stderr: string };
    assert.is(agent.exitCode, 0, agent.stderr);
    assert.is(agent.stdout, "kept\n1001:1001 700");
    const top = listTree(home)[0]!;
    assert.is(`${top.uid}:${top.gid} ${octal(top.mode)}`, "1001:1001 0700", "the mount's root is the agent's");
    const before = listTree(join(home, "from-before"))[0]!;
    assert.is(`${before.uid}:${before.gid} ${octal(before.mode)}`, "0:0 0644", "nothing inside was walked");
    assert.is(statSync(join(home, "file")).uid, IDS.agent);
  } finally {
    unmount(home);
    body.cleanup();
  }
});

/** The agent fills its home; then the service rewrites its credentials as a service does (a new file, then rename). */
const FILL_THEN_WRITE = [
  // Through the spawner (the stand-in's agent mode): the service holds no capability to start the shim itself.
  `${SANDBOX_NODE} ${SANDBOX_FIXTURES}/stand-in-service.mjs agent '{}' /bin/sh -c 'dd if=/dev/zero of="$HOME/fill" bs=64k 2>/dev/null; exit 0' >/dev/null`,
  'if cat /state/credentials.json > /state/credentials.json.new 2>/dev/null && mv /state/credentials.json.new /state/credentials.json; then echo "service wrote"; else echo "service ENOSPC"; fi',
].join("\n");

rootTest(test, "an agent that fills /state/agent: on /state's filesystem the service's next write fails, on a tmpfs of its own it does not", () => {
  const body = new Body();
  const smallState = body.state;
  hostTmpfs(smallState, "2m");
  const home = join(body.dir, "agent-home");
  hostTmpfs(home, "1m");
  try {
    chownSync(smallState, IDS.service, IDS.service);
    chownSync(body.workspace, IDS.service, IDS.service);
    const seeded = body.run({ as: "node", command: [...SERVICE, "seed"] });
    assert.is(seeded.status, 0, seeded.stderr);
    const shared = body.run({ as: "root", command: ["/bin/sh", "-c", FILL_THEN_WRITE] });
    assert.is(shared.stdout, "service ENOSPC\n", `control: one filesystem (${shared.stderr})`);
    rmSync(join(smallState, "agent"), { recursive: true });
    const own = body.run({ as: "root", command: ["/bin/sh", "-c", FILL_THEN_WRITE], binds: [[home, "/state/agent", "rw"]] });
    assert.is(own.stdout, "service wrote\n", own.stderr);
    assert.ok(statSync(join(home, "fill")).size > 512 * 1024, "the agent did fill its own tmpfs");
  } finally {
    unmount(home);
    unmount(smallState);
    body.cleanup();
  }
});

rootTest(test, "a service command the agent could have written is refused before anything changes (exit 126)", () => {
  inBody(legacyBody(), (body) => {
    writeFileSync(join(body.workspace, "service.sh"), "#!/bin/sh\necho pwned\n", { mode: 0o755 });
    chmodSync(body.workspace, 0o777);
    const before = treeDigest(body.dir);
    const run = body.run({ as: "root", command: ["/workspace/service.sh"] });
    assert.is(run.status, 126);
    assert.is(run.stderr, "clankie-separate: refusing to execute /workspace/service.sh: /workspace is writable by group or other (mode 777); install programs that root or the service run in a root-owned directory that only root can write (for example /usr/local/bin)\n");
    assert.is(treeDigest(body.dir), before);
  });
});

rootTest(test, "a setpriv or perl that others could write is refused before anything changes (exit 126); the service command's rules run in the same phase", () => {
  inBody(legacyBody(), (body) => {
    // A copy of setpriv, root's, bound over /usr/bin/setpriv: 0757 (the launch's own setpriv runs it before the entrypoint), 0755 for the control.
    // setpriv runs last (the drop): without this phase's check the walk would have changed /state before the drop's exec refused it.
    const setpriv = join(body.dir, "setpriv");
    writeFileSync(setpriv, readFileSync("/usr/bin/setpriv"));
    const before = treeDigest(body.state);
    chmodSync(setpriv, 0o757);
    const run = body.run({ as: "root", command: ["/bin/true"], binds: [[setpriv, "/usr/bin/setpriv", "ro"]] });
    assert.is(run.stderr, "clankie-separate: refusing to execute /usr/bin/setpriv: /usr/bin/setpriv is writable by group or other (mode 757); install programs that root or the service run in a root-owned directory that only root can write (for example /usr/local/bin)\n");
    assert.is(run.status, 126);
    assert.is(treeDigest(body.state), before, "/state untouched");
    chmodSync(setpriv, 0o755);
    const control = body.run({ as: "root", command: ["/bin/true"], binds: [[setpriv, "/usr/bin/setpriv", "ro"]] });
    assert.is(control.status, 0, control.stderr);
  });
});

rootTest(test, "/workspace or /state that is not a directory is refused (65, one line), nothing changed", () => {
  for (const [name, what] of [["state", "/state is a file, not a directory"], ["workspace", "/workspace is not a directory"]] as const) {
    inBody(legacyBody(), (body) => {
      const path = name === "state" ? body.state : body.workspace;
      rmSync(path, { recursive: true, force: true });
      writeFileSync(path, "a file, not a volume\n", { mode: 0o644 });
      const run = body.run({ as: "root", command: ["/bin/true"] });
      assert.is(run.stderr, `clankie-separate: ${what}; mount a volume (a directory) at /${name}\n`);
      assert.is(run.status, 65);
      const st = listTree(path)[0]!;
      assert.is(`${st.uid}:${st.gid} ${octal(st.mode)}`, "0:0 0644", "the file untouched");
    });
  }
});

rootTest(test, "today's launch (node, no capabilities): a service command that others could write is refused (126, one line) by the exec that would replace the entrypoint", () => {
  inBody(legacyBody(), (body) => {
    writeFileSync(join(body.workspace, "service.sh"), "#!/bin/sh\necho ran\n", { mode: 0o755 });
    chmodSync(body.workspace, 0o777);
    const run = body.run({ as: "node", command: ["/workspace/service.sh"] });
    assert.is(run.stderr, "clankie-separate: refusing to execute /workspace/service.sh: /workspace is writable by group or other (mode 777); install programs that root or the service run in a root-owned directory that only root can write (for example /usr/local/bin)\n");
    assert.is(run.status, 126);
    assert.is(run.stdout, "");
    // The control: closed again, the same command runs as it is.
    chmodSync(body.workspace, 0o755);
    const control = body.run({ as: "node", command: ["/workspace/service.sh"] });
    assert.is(control.stdout, "ran\n", control.stderr);
    assert.is(control.status, 0);
  });
});

rootTest(test, "systemExec refuses a setpriv that others could write (126) before anything starts; control: closed, it runs the program", () => {
  inBody(legacyBody(), (body) => {
    // Today's launch execs the service without looking at setpriv: systemExec's own gate is all that stands before it.
    const setpriv = join(body.dir, "setpriv");
    writeFileSync(setpriv, readFileSync("/usr/bin/setpriv"));
    const run = (mode: number) => {
      chmodSync(setpriv, mode);
      return body.run({ as: "node", command: [...SERVICE, "gate"], binds: [[setpriv, "/usr/bin/setpriv", "ro"]] });
    };
    const writable = run(0o757);
    assert.is(writable.stdout, "refused 126: refusing to execute /usr/bin/setpriv: /usr/bin/setpriv is writable by group or other (mode 757)\n", writable.stderr);
    const control = run(0o755);
    assert.is(control.stdout, "ran 0\n", control.stderr);
  });
});

rootTest(test, "the verification stage refuses a process that is not what the drop asked for (exit 70)", () => {
  inBody(legacyBody(), (body) => {
    // The stage exactly as the entrypoint execs it after setpriv, but started as node without the drop.
    const stage = verifyStageArgs(imageIdentities(), { path: "/bin/true", argv: ["true"] });
    const run = body.run({ as: "node", command: stage, direct: true });
    assert.is(run.status, 70);
    assert.is(run.stderr, "clankie-separate: after the drop to node the kernel reports groups none (want 1000,1002); CapInh 0x0 (want 0xc0); CapPrm 0x0 (want 0xc0); CapEff 0x0 (want 0xc0); CapAmb 0x0 (want 0xc0); CapBnd 0x0 (want 0xc0); NoNewPrivs 0 (want 1); check that the launch has --cap-add SETPCAP, SETUID and SETGID and that the kernel supports ambient capabilities (Linux 4.3+)\n");
  });
});

rootTest(test, "a root phase killed mid-walk is completed by the next start", async () => {
  await inBody(legacyBody(), async (body) => {
    const made = spawnSync("/bin/sh", ["-c", 'cd "$1" && for d in $(seq 1 200); do mkdir -p big/d$d && (cd big/d$d && touch $(seq 1 250)); done; chmod -R 0777 big', "sh", body.state]);
    assert.is(made.status, 0, String(made.stderr));
    const child = body.start({ as: "root", command: ["/bin/true"] });
    // Kill as soon as the walk has visibly started, long before it can end.
    const probe = join(body.state, "big/d1/1");
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (listTree(probe)[0]!.uid === 1000) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const partial = listTree(join(body.state, "big"));
    const fixed = partial.filter((e) => e.uid === 1000 && (e.mode & 0o077) === 0).length;
    assert.ok(fixed < partial.length, `the kill came after the walk ended (${fixed}/${partial.length}): grow the tree`);
    assert.not.ok(readFileSync(join(body.state, "events.log"), "utf8").length === 0);
    const again = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(again.status, 0, again.stderr);
    const after = listTree(join(body.state, "big"));
    assert.equal(after.filter((e) => e.uid !== 1000 || (e.mode & 0o077) !== 0).map((e) => e.path), []);
  });
});

test.run();
