/*
 * The verification stage (src/verifier.ts) run for real: perl(1) reading this
 * kernel's /proc for the process it is, then exec'ing or refusing. Without
 * root it runs as the test's own uid under `setpriv --no-new-privs`; the
 * expectations are read from a control process started the same way, so each
 * test changes exactly one of them and expects exactly that difference.
 */
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { chmodSync, closeSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { stageEnvironment, verifierArgv, type VerifierRequest } from "../../src/verifier.ts";
import { rootTest } from "../helpers/privilege.ts";

const test = suite("verifier");
const NNP = ["/usr/bin/setpriv", "--no-new-privs"];
const AGENT_FIX = "do not start agent work on this body; run clankie-separate --self-check --probe and report its output";
const SERVICE_FIX = "check that the launch has --cap-add SETPCAP, SETUID and SETGID and that the kernel supports ambient capabilities (Linux 4.3+)";

function field(status: string, name: string): string {
  const match = new RegExp(`^${name}:[ \\t]*([^\\n]*)$`, "m").exec(status);
  if (!match) throw new Error(`no ${name} in /proc/self/status`);
  return match[1]!.trim();
}

/** What a process started like the stage (same uid, NoNewPrivs) holds. */
function control(): VerifierRequest {
  const status = spawnSync(NNP[0]!, [...NNP.slice(1), "/bin/cat", "/proc/self/status"], { encoding: "utf8" }).stdout;
  const hex = (name: string) => BigInt(`0x${field(status, name)}`);
  return {
    program: "clankie-agent-exec",
    role: "agent",
    uid: Number(field(status, "Uid").split(/\s+/)[0]),
    gid: Number(field(status, "Gid").split(/\s+/)[0]),
    groups: field(status, "Groups").split(/\s+/).filter(Boolean).map(Number),
    caps: { inh: hex("CapInh"), prm: hex("CapPrm"), eff: hex("CapEff"), amb: hex("CapAmb"), bnd: hex("CapBnd") },
    action: { path: "/bin/echo", argv: ["echo", "ran"] },
  };
}

function stage(request: VerifierRequest, options: { nnp?: boolean; env?: NodeJS.ProcessEnv; wrap?: string[]; stdio?: ("pipe" | "ignore")[] } = {}): SpawnSyncReturns<string> {
  const argv = [...(options.wrap ?? []), ...(options.nnp === false ? [] : NNP), ...verifierArgv(request)];
  return spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", env: options.env ?? { PATH: "/usr/bin:/bin" }, stdio: options.stdio ?? ["ignore", "pipe", "pipe"] });
}

function refused(result: SpawnSyncReturns<string>, status: number, line: string): void {
  assert.is(result.stdout, "", "nothing ran");
  assert.is(result.stderr, `${line}\n`);
  assert.is(result.status, status);
}

/*
 * Whatever ran this test may have leaked an fd without close-on-exec (a shell's
 * fd 251, say); the stage would rightly name it. Close those in this process.
 */
for (const name of readdirSync("/proc/self/fd")) {
  const fd = Number(name);
  if (fd <= 2) continue;
  try {
    const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"));
    if (flags && (parseInt(flags[1]!, 8) & 0o2000000) === 0) closeSync(fd);
  } catch {
    // gone already (the directory listing's own fd)
  }
}

const base = control();
const differs = (what: string) => `clankie-agent-exec: the agent process is not what was asked: ${what}; ${AGENT_FIX}`;

test("the control passes: the command runs with its argv untouched, even arguments that look like stage keys", () => {
  const result = stage({ ...base, action: { path: "/bin/echo", argv: ["echo", "--", "uid=0", "-T", "a\nb"] } });
  assert.is(result.stderr, "");
  assert.is(result.stdout, "-- uid=0 -T a\nb\n");
  assert.is(result.status, 0);
});

test("argv[0] is the one asked for, not the path", () => {
  const result = stage({ ...base, action: { path: "/bin/sh", argv: ["agent-sh", "-c", 'echo "$0"'] } });
  assert.is(result.stdout, "agent-sh\n");
});

test("each difference is named: uid", () => {
  const uids = Array(4).fill(base.uid).join(",");
  refused(stage({ ...base, uid: base.uid + 4242 }), 70, differs(`uids ${uids} (want ${base.uid + 4242} in all four)`));
});

test("each difference is named: gid", () => {
  const gids = Array(4).fill(base.gid).join(",");
  refused(stage({ ...base, gid: base.gid + 7 }), 70, differs(`gids ${gids} (want ${base.gid + 7} in all four)`));
});

test("each difference is named: supplementary groups, compared as sets", () => {
  const have = [...new Set(base.groups)].sort((a, b) => a - b);
  const shown = have.join(",") || "none";
  refused(stage({ ...base, groups: [...have, 4_000_000] }), 70, differs(`groups ${shown} (want ${[...have, 4_000_000].join(",")})`));
  // order and repetition do not matter
  assert.is(stage({ ...base, groups: [...have].reverse().concat(have) }).status, 0);
});

test("each difference is named: every capability set, the bounding set only when asked", () => {
  const wrong = base.caps.prm ^ 0x40n;
  refused(
    stage({ ...base, caps: { ...base.caps, prm: wrong, amb: base.caps.amb | 0x80n } }),
    70,
    differs(`CapPrm 0x${base.caps.prm.toString(16)} (want 0x${wrong.toString(16)}); CapAmb 0x${base.caps.amb.toString(16)} (want 0x${(base.caps.amb | 0x80n).toString(16)})`),
  );
  refused(stage({ ...base, caps: { ...base.caps, bnd: 0xc0n } }), 70, differs(`CapBnd 0x${base.caps.bnd!.toString(16)} (want 0xc0)`));
  const { bnd: _unused, ...noBounding } = base.caps;
  assert.is(stage({ ...base, caps: noBounding }).status, 0);
});

test("each difference is named: NoNewPrivs", () => {
  refused(stage(base, { nnp: false }), 70, differs("NoNewPrivs 0 (want 1)"));
});

test("each difference is named: a session of its own and no controlling terminal", () => {
  const inherited = stage({ ...base, session: "own" });
  assert.is(inherited.status, 70);
  assert.match(inherited.stderr, /^clankie-agent-exec: the agent process is not what was asked: session \d+ \(want its own, \d+\); do not start/);
  assert.is(stage({ ...base, session: "own" }, { wrap: ["/usr/bin/setsid", "--fork", "--wait"] }).status, 0);
});

test("session=new: setsid(2) by its system call number, then the process leads its session, without a terminal", () => {
  const result = stage({ ...base, session: "new", action: { path: "/bin/sh", argv: ["sh", "-c", 'echo "$$ $(cut -d" " -f6,7 /proc/$$/stat)"'] } });
  assert.is(result.stderr, "");
  const [pid, sid, tty] = result.stdout.trim().split(" ");
  assert.is(sid, pid, "a session of its own");
  assert.is(tty, "0", "no controlling terminal");
});

test("session=new from a process-group leader: setsid(2) fails, one line, exit 77", () => {
  // The stage starts as the leader of its own process group but not of its session.
  const leader = ["/usr/bin/perl", "-e", "setpgrp(0, 0); exec @ARGV or die", "--"];
  refused(stage({ ...base, session: "new" }, { wrap: leader }), 77, "clankie-agent-exec: setsid failed (EPERM); spawn the shim in a new session (spawnAgent does) or inside its parent's process group");
});

test("each difference is named: an fd open across exec that was not kept", () => {
  const stdio: ("pipe" | "ignore")[] = ["ignore", "pipe", "pipe", "pipe"];
  refused(stage({ ...base, keepFds: [] }, { stdio }), 70, differs("inherited fds 3 (want only 0-2)"));
  refused(stage({ ...base, keepFds: [9] }, { stdio }), 70, differs("inherited fds 3 (want only 0-2 and 9)"));
  assert.is(stage({ ...base, keepFds: [3] }, { stdio }).status, 0);
  assert.is(stage({ ...base, keepFds: [] }).status, 0);
});

test("several differences are named in one line", () => {
  const result = stage({ ...base, uid: base.uid + 1, caps: { ...base.caps, eff: base.caps.eff ^ 1n } }, { nnp: false });
  assert.is(result.status, 70);
  assert.is(result.stderr.split("\n").length, 2, "one line");
  assert.match(result.stderr, /uids .*; CapEff .*; NoNewPrivs 0 \(want 1\); do not start agent work/);
});

test("the service's wording and fix", () => {
  const result = stage({ ...base, program: "clankie-separate", role: "service", caps: { ...base.caps, bnd: 0xc0n } });
  refused(result, 70, `clankie-separate: after the drop to the service the kernel reports CapBnd 0x${base.caps.bnd!.toString(16)} (want 0xc0); ${SERVICE_FIX}`);
});

test("umask and working directory are set before the exec; a directory it cannot enter refuses (exit 77)", () => {
  const dir = mkdtempSync(join(tmpdir(), "verifier-"));
  try {
    const result = stage({ ...base, umask: 0o002, cwd: dir, action: { path: "/bin/sh", argv: ["sh", "-c", "umask; pwd"] } });
    assert.is(result.stdout, `0002\n${dir}\n`);
    refused(stage({ ...base, cwd: join(dir, "missing") }), 77, `clankie-agent-exec: the agent cannot enter ${join(dir, "missing")} (ENOENT); pass a --cwd under /workspace that group clankie-workspace can search`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a command that cannot be executed: 127 when missing, 126 otherwise, one line each", () => {
  const dir = mkdtempSync(join(tmpdir(), "verifier-"));
  try {
    const plain = join(dir, "not-executable");
    writeFileSync(plain, "#!/bin/sh\necho no\n");
    chmodSync(plain, 0o644);
    refused(stage({ ...base, action: { path: join(dir, "missing"), argv: ["missing"] } }), 127, `clankie-agent-exec: cannot execute ${join(dir, "missing")}: ENOENT; check the command's path and permissions`);
    refused(stage({ ...base, action: { path: plain, argv: ["x"] } }), 126, `clankie-agent-exec: cannot execute ${plain}: EACCES; check the command's path and permissions`);
    // Neither ELF nor #!: execve(2) says ENOEXEC. execvp(3), perl's exec, would have run it with /bin/sh.
    const text = join(dir, "shell-text");
    writeFileSync(text, "echo run by sh\n", { mode: 0o755 });
    refused(stage({ ...base, action: { path: text, argv: ["x"] } }), 126, `clankie-agent-exec: cannot execute ${text}: ENOEXEC; check the command's path and permissions`);
    const control = spawnSync("/usr/bin/perl", ["-e", "exec { $ARGV[0] } @ARGV", text], { encoding: "utf8" });
    assert.is(control.stdout, "run by sh\n", "the control: perl's own exec falls back to /bin/sh");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("taint mode: PERL5OPT and PERL5LIB load nothing into the stage, and still reach the command", () => {
  const dir = mkdtempSync(join(tmpdir(), "verifier-"));
  try {
    writeFileSync(join(dir, "Planted.pm"), 'package Planted; print STDERR "PLANTED RAN\\n"; 1;\n');
    const env = { PATH: "/usr/bin:/bin", PERL5OPT: "-MPlanted", PERL5LIB: dir, PERLLIB: dir };
    // The control: the same environment loads the module into a perl without -T.
    const control = spawnSync("/usr/bin/perl", ["-e", "1"], { encoding: "utf8", env });
    assert.is(control.stderr, "PLANTED RAN\n");
    const result = stage({ ...base, action: { path: "/bin/sh", argv: ["sh", "-c", 'echo "$PERL5OPT $PERL5LIB"'] } }, { env });
    assert.is(result.stderr, "");
    assert.is(result.stdout, `-MPlanted ${dir}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("PERL_UNICODE cannot turn a refusal into perl's own error (-C0)", () => {
  const env = { PATH: "/usr/bin:/bin", PERL_UNICODE: "SDA" };
  refused(stage({ ...base, uid: base.uid + 1 }, { env }), 70, differs(`uids ${Array(4).fill(base.uid).join(",")} (want ${base.uid + 1} in all four)`));
});

test("a LANG without its locale adds no perl warning, and PERL_BADLANG reaches the command only when the caller set it", () => {
  const env = { PATH: "/usr/bin:/bin", LANG: "xx_YY.UTF-8" };
  const show = { path: "/bin/sh", argv: ["sh", "-c", 'echo "${PERL_BADLANG-unset}"'] };
  // The control: perl warns about that LANG at start-up.
  const control = spawnSync("/usr/bin/perl", ["-e", "1"], { encoding: "utf8", env });
  assert.match(control.stderr, /^perl: warning: Setting locale failed/);
  const staged = stageEnvironment(env);
  assert.is(staged.unset, "PERL_BADLANG");
  const result = stage({ ...base, unset: staged.unset, action: show }, { env: staged.env });
  assert.is(result.stderr, "");
  assert.is(result.stdout, "unset\n");
  const own = stageEnvironment({ ...env, PERL_BADLANG: "0" });
  assert.is(own.unset, undefined);
  assert.is(stage({ ...base, action: show }, { env: own.env }).stdout, "0\n");
});

test("an fd the stage cannot inspect is refused, not let through (EMFILE)", () => {
  // fds 3-6 stray, and at most 8 open: the stage's own /proc/self/fd listing takes fd 7.
  const result = stage({ ...base, keepFds: [] }, { wrap: ["/bin/sh", "-c", 'ulimit -n 8; exec "$@"', "sh"], stdio: ["ignore", "pipe", "pipe", "pipe", "pipe", "pipe", "pipe"] });
  refused(result, 71, "clankie-agent-exec: open /proc/self/fdinfo/3 failed: EMFILE; mount /proc in the container; an fd that cannot be inspected is not let through");
});

test("signals the chain left ignored are reset to their defaults before the exec", () => {
  const ignoring = ["/bin/sh", "-c", 'trap "" PIPE XFSZ; exec "$@"', "sh"];
  // The control: without the stage, the command inherits both (SIGPIPE is bit 12, SIGXFSZ bit 24).
  const control = spawnSync(ignoring[0]!, [...ignoring.slice(1), "/bin/grep", "SigIgn", "/proc/self/status"], { encoding: "utf8" });
  assert.is(control.stdout, "SigIgn:\t0000000001001000\n");
  const result = stage({ ...base, action: { path: "/bin/grep", argv: ["grep", "SigIgn", "/proc/self/status"] } }, { wrap: ignoring });
  assert.is(result.stdout, "SigIgn:\t0000000000000000\n");
});

test("the signal action: delivers the signal to the process group; a group that is gone is exit 65", async () => {
  const sleeper = spawn("/bin/sleep", ["30"], { detached: true, stdio: "ignore" });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => sleeper.once("exit", (_code, signal) => resolve(signal)));
  const result = stage({ ...base, action: { signal: "SIGTERM", pgid: sleeper.pid! } });
  assert.is(result.stderr, "");
  assert.is(result.status, 0);
  assert.is(await exited, "SIGTERM");
  refused(stage({ ...base, action: { signal: "SIGTERM", pgid: sleeper.pid! } }), 65, `clankie-agent-exec: no agent process group ${sleeper.pid}; it has already exited`);
});

rootTest(test, "the signal action: a process group of another uid is refused (exit 77) and lives on", async () => {
  const sleeper = spawn("/bin/sleep", ["30"], { detached: true, stdio: "ignore" });
  try {
    const asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"];
    const request = { ...base, uid: 65534, gid: 65534, groups: [], caps: { inh: 0n, prm: 0n, eff: 0n, amb: 0n }, action: { signal: "SIGKILL", pgid: sleeper.pid! } };
    refused(stage(request, { wrap: asNobody }), 77, `clankie-agent-exec: process group ${sleeper.pid} is not the agent's; only agent work can be signalled through the shim`);
    assert.is(sleeper.exitCode, null);
    assert.is(sleeper.signalCode, null);
  } finally {
    sleeper.kill("SIGKILL");
  }
});

test("a malformed stage argument is a usage refusal (exit 64)", () => {
  const argv = verifierArgv(base);
  const at = argv.indexOf("clankie-agent-exec") + 2;
  const broken = [...argv.slice(0, at), "no-equals-sign", ...argv.slice(at)];
  const result = spawnSync(NNP[0]!, [...NNP.slice(1), ...broken], { encoding: "utf8", env: {} });
  refused(result, 64, "clankie-agent-exec: verification stage: unexpected argument no-equals-sign; this stage is started by clankie-separate itself");
});

test.run();
