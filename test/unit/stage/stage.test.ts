/*
 * The verification stage (src/stage/) run for real: perl(1) reading this
 * kernel's /proc for the process it is, then exec'ing or refusing. Without
 * root it runs as the test's own uid under `setpriv --no-new-privs`; the
 * expectations are read from a control process started the same way, so each
 * test changes exactly one of them and expects exactly that difference.
 */
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { chmodSync, closeSync, existsSync, openSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { NO_EXTRA_CONFINEMENT, confinementKeys } from "../../../src/confinement.ts";
import { privateImageTree } from "../../../src/agent-exec/private-job.ts";
import { type AgentStageRequest, STAGE_ROLES, STAGE_SOURCE, stageEnvironment, stageProgram, type StageRequest, type StageRole } from "../../../src/stage/stage.ts";
import { stageArgv } from "../../../src/stage/stage-argv.ts";
import { stageText, withoutComments } from "../../../src/stage/stage-source.ts";
import { IS_ROOT, rootTest } from "../../helpers/privilege.ts";
import { landlockAbi, type Lie, lyingKernel, NR } from "../../helpers/seccomp-wrap.ts";
import { keysOf } from "../../helpers/stage-keys.ts";

const test = suite("stage");
const NNP = ["/usr/bin/setpriv", "--no-new-privs"];
const AGENT_FIX = "do not start agent work on this body; run clankie-separate --self-check --probe and report its output";
const SERVICE_FIX = "check that the launch has --cap-add SETPCAP, SETUID and SETGID and that the kernel supports ambient capabilities (Linux 4.3+)";

function field(status: string, name: string): string {
  const match = new RegExp(`^${name}:[ \\t]*([^\\n]*)$`, "m").exec(status);
  if (!match) throw new Error(`no ${name} in /proc/self/status`);
  return match[1]!.trim();
}

/** What a process started like the stage (same uid, NoNewPrivs) holds, asked of an agent command. */
function control(): AgentStageRequest & { bounding: bigint } {
  const status = spawnSync(NNP[0]!, [...NNP.slice(1), "/bin/cat", "/proc/self/status"], { encoding: "utf8" }).stdout;
  const hex = (name: string) => BigInt(`0x${field(status, name)}`);
  return {
    program: "clankie-agent-exec",
    role: "agent",
    uid: Number(field(status, "Uid").split(/\s+/)[0]),
    gid: Number(field(status, "Gid").split(/\s+/)[0]),
    groups: field(status, "Groups").split(/\s+/).filter(Boolean).map(Number),
    caps: { inh: hex("CapInh"), prm: hex("CapPrm"), eff: hex("CapEff"), amb: hex("CapAmb") },
    bounding: hex("CapBnd"),
    options: { nproc: "" },
    session: "new",
    keepFds: [],
    umask: 0o022,
    cwd: "/",
    confinement: CONFINED,
    action: { path: "/bin/echo", argv: ["echo", "ran"] },
  };
}

/** The agent's real confinement (every default path the stage finds here). */
const CONFINED = confinementKeys(NO_EXTRA_CONFINEMENT);

function stage(request: StageRequest, options: { nnp?: boolean; env?: NodeJS.ProcessEnv; wrap?: string[]; stdio?: ("pipe" | "ignore")[]; cwd?: string } = {}): SpawnSyncReturns<string> {
  const argv = [...(options.wrap ?? []), ...(options.nnp === false ? [] : NNP), ...stageArgv(request)];
  return spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", env: options.env ?? { PATH: "/usr/bin:/bin" }, stdio: options.stdio ?? ["ignore", "pipe", "pipe"], cwd: options.cwd });
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
/** The same process asked of the service role, and of the signal role. */
const asService = (request: typeof base): StageRequest => ({ ...request, program: "clankie-separate", role: "service" });
const asSignal = (request: typeof base, pgid: number, signal = "SIGTERM"): StageRequest => ({ ...request, role: "signal", action: { signal, pgid } });
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

test("each difference is named: every capability set; the bounding set of the service", () => {
  const wrong = base.caps.prm ^ 0x40n;
  refused(
    stage({ ...base, caps: { ...base.caps, prm: wrong, amb: base.caps.amb | 0x80n } }),
    70,
    differs(`CapPrm 0x${base.caps.prm.toString(16)} (want 0x${wrong.toString(16)}); CapAmb 0x${base.caps.amb.toString(16)} (want 0x${(base.caps.amb | 0x80n).toString(16)})`),
  );
  const service = stage(asService({ ...base, bounding: 0xc0n }));
  assert.is(service.status, 70);
  assert.match(service.stderr, `CapBnd 0x${base.bounding.toString(16)} (want 0xc0)`);
  assert.is(stage(asService(base)).status, 0);
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
  const result = stage(asService({ ...base, bounding: 0xc0n }));
  refused(result, 70, `clankie-separate: after the drop to node the kernel reports CapBnd 0x${base.bounding.toString(16)} (want 0xc0); ${SERVICE_FIX}`);
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

test("started=N: \"S\" right before the exec, closed in the command; \"SF\" when the exec failed; nothing on a refusal; without the key the same fd is a stray", () => {
  const withMarker = { stdio: ["ignore", "pipe", "pipe", "pipe"] as ("pipe" | "ignore")[] };
  const probe = { path: "/bin/sh", argv: ["sh", "-c", "if [ -e /proc/self/fd/3 ]; then echo held; else echo closed; fi; exit 75"] };
  const ran = stage({ ...base, startedFd: 3, action: probe }, withMarker);
  assert.is(ran.stderr, "");
  assert.is(ran.stdout, "closed\n", "the command never holds the marker");
  assert.is(ran.output[3], "S");
  assert.is(ran.status, 75, "the command's own 75");
  const missing = stage({ ...base, startedFd: 3, action: { path: "/nonexistent/cmd", argv: ["cmd"] } }, withMarker);
  assert.is(missing.status, 127);
  assert.is(missing.output[3], "SF");
  const refusedEarly = stage({ ...base, startedFd: 3, cwd: "/nonexistent", action: probe }, withMarker);
  assert.is(refusedEarly.status, 77, refusedEarly.stderr);
  assert.is(refusedEarly.output[3], "", "a refusal writes no marker");
  const stray = stage({ ...base, action: probe }, withMarker);
  assert.is(stray.status, 70, "without started=3 the open fd 3 is a stray the stage refuses");
  assert.match(stray.stderr, /inherited fds 3 \(want only 0-2\)/);
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

test("taint mode: PERL5OPT and PERL5LIB by name load nothing into the stage; carried, they reach the command", () => {
  const dir = mkdtempSync(join(tmpdir(), "verifier-"));
  try {
    writeFileSync(join(dir, "Planted.pm"), 'package Planted; print STDERR "PLANTED RAN\\n"; 1;\n');
    const env = { PATH: "/usr/bin:/bin", PERL5OPT: "-MPlanted", PERL5LIB: dir, PERLLIB: dir };
    // The control: the same environment loads the module into a perl without -T.
    const control = spawnSync("/usr/bin/perl", ["-e", "1"], { encoding: "utf8", env });
    assert.is(control.stderr, "PLANTED RAN\n");
    // By name (a stage started by hand): -T ignores them. Carried, as the shim passes them: only the command reads them.
    const result = stage({ ...base, action: { path: "/bin/sh", argv: ["sh", "-c", 'echo "$PERL5OPT $PERL5LIB"'] } }, { env: { ...env, ...stageEnvironment(env) } });
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

test("the command's environment crosses setpriv and perl carried (CLANKIE_ENV_NAME): perl reads none of it, the command gets exactly it", () => {
  const env = { LANG: "xx_YY.UTF-8", LANGUAGE: "../../../../tmp/planted", FOO: "bar=baz\nqux" };
  const show = { path: "/usr/bin/env", argv: ["env", "-0"] };
  // The control: perl run with that LANG by name reads it, and warns at start-up.
  const control = spawnSync("/usr/bin/perl", ["-e", "1"], { encoding: "utf8", env });
  assert.match(control.stderr, /^perl: warning: Setting locale failed/);
  const carried = stageEnvironment(env);
  assert.equal(Object.keys(carried).sort(), ["CLANKIE_ENV_FOO", "CLANKIE_ENV_LANG", "CLANKIE_ENV_LANGUAGE"]);
  // What setpriv and perl are started with, beside the carried names, never reaches the command.
  const result = stage({ ...base, action: show }, { env: { ...carried, PERL_BADLANG: "0" } });
  assert.is(result.stderr, "");
  assert.is(result.status, 0);
  assert.equal(result.stdout.split("\0").filter(Boolean).sort(), ["FOO=bar=baz\nqux", ...GIT_TRUST, "LANG=xx_YY.UTF-8", "LANGUAGE=../../../../tmp/planted"]);
  // The same environment by name: perl reads it (its warning), and the command gets none of it.
  const named = stage({ ...base, action: show }, { env });
  assert.match(named.stderr, /^perl: warning: Setting locale failed/);
  assert.equal(named.stdout.split("\0").filter(Boolean), GIT_TRUST);
});

/** stage.pl's trust_git: the agent's command gets one command-scope entry safe.directory=* (docs/security.md, "git between the two uids"). */
const GIT_TRUST = ["GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*"];
const commandEnv = (request: StageRequest, env: Record<string, string>): string[] => {
  const result = stage({ ...request, action: { path: "/usr/bin/env", argv: ["env", "-0"] } } as StageRequest, { env: { PATH: "/usr/bin:/bin", ...stageEnvironment(env) } });
  assert.is(result.stderr, "");
  return result.stdout.split("\0").filter(Boolean).sort();
};

test("git trust: the agent's command gets safe.directory=* in git's command scope; an empty count is git's 0", () => {
  assert.equal(commandEnv(base, {}), GIT_TRUST);
  assert.equal(commandEnv(base, { GIT_CONFIG_COUNT: "" }), GIT_TRUST);
  assert.equal(commandEnv(base, { GIT_CONFIG_COUNT: "00" }), GIT_TRUST);
});

test("git trust: appended after the service's entries, which it leaves as they are (a safe.directory= reset there cannot undo it)", () => {
  const service = { GIT_CONFIG_COUNT: "2", GIT_CONFIG_KEY_0: "user.name", GIT_CONFIG_VALUE_0: "agent", GIT_CONFIG_KEY_1: "safe.directory", GIT_CONFIG_VALUE_1: "" };
  assert.equal(commandEnv(base, service), ["GIT_CONFIG_COUNT=3", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_KEY_1=safe.directory", "GIT_CONFIG_KEY_2=safe.directory", "GIT_CONFIG_VALUE_0=agent", "GIT_CONFIG_VALUE_1=", "GIT_CONFIG_VALUE_2=*"]);
  assert.equal(commandEnv(base, { GIT_CONFIG_COUNT: "2147483646" })[0], "GIT_CONFIG_COUNT=2147483647", "the largest count git accepts");
});

test("git trust: a count git would call bogus is left for git to refuse, never guessed past", () => {
  for (const count of ["x", "-1", " 1", "1 ", "0x2", "2147483647", "99999999999999", "1\n"]) {
    const env = { GIT_CONFIG_COUNT: count, GIT_CONFIG_KEY_0: "core.pager", GIT_CONFIG_VALUE_0: "cat" };
    assert.equal(commandEnv(base, env), [`GIT_CONFIG_COUNT=${count}`, "GIT_CONFIG_KEY_0=core.pager", "GIT_CONFIG_VALUE_0=cat"], JSON.stringify(count));
  }
});

test("git trust is the agent command's alone: the service's command gets none", () => {
  assert.equal(commandEnv(asService(base), { FOO: "1" }), ["FOO=1"]);
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
  const result = stage(asSignal(base, sleeper.pid!));
  assert.is(result.stderr, "");
  assert.is(result.status, 0);
  assert.is(await exited, "SIGTERM");
  refused(stage(asSignal(base, sleeper.pid!)), 65, `clankie-agent-exec: no agent process group ${sleeper.pid}; it has already exited`);
});

rootTest(test, "the signal action: a process group of another uid is refused (exit 77) and lives on", async () => {
  const sleeper = spawn("/bin/sleep", ["30"], { detached: true, stdio: "ignore" });
  try {
    const asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"];
    const request = asSignal({ ...base, uid: 65534, gid: 65534, groups: [], caps: { inh: 0n, prm: 0n, eff: 0n, amb: 0n } }, sleeper.pid!, "SIGKILL");
    refused(stage(request, { wrap: asNobody }), 77, `clankie-agent-exec: process group ${sleeper.pid} is not the agent's; only agent work can be signalled through the shim`);
    assert.is(sleeper.exitCode, null);
    assert.is(sleeper.signalCode, null);
  } finally {
    sleeper.kill("SIGKILL");
  }
});

/* ---- The protocol is closed ---- */


function withKeys(request: StageRequest, change: (keys: string[]) => string[]): SpawnSyncReturns<string> {
  const argv = stageArgv(request);
  const { at, keys } = keysOf(argv, request.role);
  const changed = [...argv.slice(0, at), ...change(keys), ...argv.slice(at + keys.length)];
  return spawnSync(NNP[0]!, [...NNP.slice(1), ...changed], { encoding: "utf8", env: { PATH: "/usr/bin:/bin" }, stdio: ["ignore", "pipe", "pipe"] });
}

const usage = (program: string, what: string) => `${program}: verification stage: ${what}; this stage is started by clankie-separate itself`;

test("a malformed stage argument is a usage refusal (exit 64)", () => {
  refused(withKeys(base, (keys) => ["no-equals-sign", ...keys]), 64, usage("clankie-agent-exec", "unexpected argument no-equals-sign"));
  refused(withKeys(base, (keys) => keys.map((k) => (k.startsWith("uid=") ? "uid=-1" : k))), 64, usage("clankie-agent-exec", "malformed uid=-1"));
  refused(withKeys(base, (keys) => keys.map((k) => (k.startsWith("session=") ? "session=none" : k))), 64, usage("clankie-agent-exec", "malformed session=none"));
});

test("every key of every role is required: leaving one out is a usage refusal, never a skipped check", () => {
  const roles: StageRequest[] = [base, asService(base), asSignal(base, 4242)];
  for (const request of roles) {
    const { keys } = keysOf(stageArgv(request), request.role);
    const names = [...new Set(keys.map((k) => k.slice(0, k.indexOf("="))))].filter((name) => name !== "path" && name !== "port");
    assert.ok(names.length >= 10, `${request.role}: ${names.join(" ")}`);
    for (const name of names) {
      const result = withKeys(request, (all) => all.filter((k) => !k.startsWith(`${name}=`)));
      refused(result, 64, usage(request.program, `missing ${name}=`));
    }
  }
});

test("a key of another role, an unknown key or a key given twice is a usage refusal", () => {
  refused(withKeys(base, (keys) => [...keys, "bnd=0"]), 64, usage("clankie-agent-exec", "the agent role takes no bnd="));
  refused(withKeys(asService(base), (keys) => [...keys, "confine=best"]), 64, usage("clankie-separate", "the service role takes no confine="));
  refused(withKeys(asSignal(base, 4242), (keys) => [...keys, "cwd=/"]), 64, usage("clankie-agent-exec", "the signal role takes no cwd="));
  refused(withKeys(base, (keys) => [...keys, "landlock=off"]), 64, usage("clankie-agent-exec", "the agent role takes no landlock="));
  refused(withKeys(base, (keys) => [...keys, "uid=0"]), 64, usage("clankie-agent-exec", "uid= given twice"));
});

test("an unknown role, a command after a signal and a missing command are usage refusals", () => {
  const argv = stageArgv(base);
  const role = argv.indexOf("agent", argv.indexOf("-e") + 3);
  const unknown = spawnSync(argv[0]!, [...argv.slice(1, role), "root", ...argv.slice(role + 1)], { encoding: "utf8" });
  refused(unknown, 64, usage("clankie-agent-exec", "unknown role root"));
  const signal = stageArgv(asSignal(base, 4242));
  const extra = spawnSync(signal[0]!, [...signal.slice(1), "/bin/true", "true"], { encoding: "utf8" });
  refused(extra, 64, usage("clankie-agent-exec", "a command after the signal"));
  const none = spawnSync(argv[0]!, argv.slice(1, argv.lastIndexOf("--") + 1), { encoding: "utf8" });
  refused(none, 64, usage("clankie-agent-exec", "no command"));
});

/** The subs each role's program must hold, and those only its role's may. */
const OWN_STEPS: Record<StageRole, string[]> = {
  service: [],
  agent: ["limit_processes", "start_session", "confine", "apply_landlock"],
  signal: ["deliver_signal"],
  cleanup: ["end_lease"],
};
/** A private job's steps: in the agent's program for a private job only. */
const PRIVATE_STEPS = ["make_private", "guard_job", "watch_job"];
const SHARED_STEPS = ["read_request", "read_status", "check_ids", "check_capabilities", "check_session", "check_descriptors", "reset_signals", "enter_directory", "exec_command"];
const definesSub = (program: string, name: string) => program.includes(`\nsub ${name} {`);

test("each role's program holds the shared steps and its own, none of another role's, and names only its role", () => {
  const roles = Object.keys(OWN_STEPS) as StageRole[];
  for (const role of roles) {
    const program = stageProgram([role]);
    for (const name of [...SHARED_STEPS, ...OWN_STEPS[role]]) assert.ok(definesSub(program, name), `${role}: no sub ${name}`);
    for (const other of roles.filter((r) => r !== role)) {
      for (const name of OWN_STEPS[other]) assert.not.ok(definesSub(program, name), `${role}'s program holds ${other}'s ${name}`);
    }
    assert.not.ok(program.includes(STAGE_ROLES), `${role}'s program still lists every role`);
    assert.ok(program.includes(`/\\A(${role})\\z/`), `${role}'s program does not name its role`);
    const check = spawnSync("/usr/bin/perl", ["-T", "-C0", "-c", "-e", program], { encoding: "utf8" });
    assert.is(check.stderr, "-e syntax OK\n", role);
  }
  // The full program holds every step: the cut is what leaves them out.
  for (const name of Object.values(OWN_STEPS).flat()) assert.ok(definesSub(STAGE_SOURCE, name), `stage.pl has no sub ${name}`);
  // A private job's steps are compiled for a private job alone.
  const privateProgram = stageProgram(["agent"], STAGE_SOURCE, true);
  for (const name of [...SHARED_STEPS, ...OWN_STEPS.agent, ...PRIVATE_STEPS]) assert.ok(definesSub(privateProgram, name), `private job: no sub ${name}`);
  for (const name of PRIVATE_STEPS) assert.not.ok(definesSub(stageProgram(["agent"]), name), `the agent's program for an ordinary spawn holds ${name}`);
  assert.is(spawnSync("/usr/bin/perl", ["-T", "-C0", "-c", "-e", privateProgram], { encoding: "utf8" }).stderr, "-e syntax OK\n", "private job");
  for (const role of ["service", "signal", "cleanup"] as const) assert.is(stageProgram([role], STAGE_SOURCE, true), stageProgram([role]), `${role}: no private steps`);
  // The agent's, compiled for every piece of agent work, is the smaller by the signal and cleanup roles' steps.
  assert.ok(stageProgram(["agent"]).length < STAGE_SOURCE.length - 1500, `${stageProgram(["agent"]).length} of ${STAGE_SOURCE.length} bytes`);
});

/** What perl compiled, as B::Deparse prints it back (the hash seed fixed: it prints constant subs in hash order). */
function deparsed(program: string): string {
  const result = spawnSync("/usr/bin/perl", ["-T", "-C0", "-MO=Deparse", "-e", program], { encoding: "utf8", env: { PERL_HASH_SEED: "0", PERL_PERTURB_KEYS: "0" } });
  assert.is(result.stderr, "-e syntax OK\n");
  return result.stdout;
}

test("each role's program is the program of stage.pl as written, comments and all: B::Deparse prints both alike", () => {
  const commented = stageText();
  assert.is(stageProgram(["agent"]), stageProgram(["agent"], withoutComments(commented)), "STAGE_SOURCE is stage.pl without its comments");
  assert.ok(STAGE_SOURCE.length < commented.length * 0.75, `${STAGE_SOURCE.length} of ${commented.length} bytes`);
  for (const role of Object.keys(OWN_STEPS) as StageRole[]) {
    const full = stageProgram([role], commented);
    assert.ok(full.includes("\n# "), `${role}: the control keeps its comments`);
    assert.is(deparsed(stageProgram([role])), deparsed(full), role);
  }
  assert.is(deparsed(stageProgram(["agent"], STAGE_SOURCE, true)), deparsed(stageProgram(["agent"], commented, true)), "private job");
  // Control: a string over several lines, one of which starts with #, is not the same program without that line.
  const planted = stageProgram(["agent"], commented).replace("\nread_request();", "\nmy $planted = q{a\n# b\nc};\nread_request();");
  assert.is.not(deparsed(withoutComments(planted)), deparsed(planted));
});

test("a role's program refuses every other role (exit 64): the full program is the control, which takes the signal role", () => {
  const request = asSignal(base, 999999);
  const argv = stageArgv(request);
  const program = argv.indexOf("-e") + 1;
  assert.is(argv[program], stageProgram(["signal"]));
  const run = (text: string) => spawnSync(NNP[0]!, [...NNP.slice(1), ...argv.slice(0, program), text, ...argv.slice(program + 1)], { encoding: "utf8" });
  // Control: with every role's steps the signal role runs its step (here: no such group, exit 65).
  refused(run(STAGE_SOURCE), 65, "clankie-agent-exec: no agent process group 999999; it has already exited");
  refused(run(stageProgram(["agent"])), 64, usage("clankie-agent-exec", "unknown role signal"));
});

test("stage.pl lists the roles once, and a program without the list is refused", () => {
  assert.is(STAGE_SOURCE.split(STAGE_ROLES).length, 2);
  assert.throws(() => stageProgram(["agent"], STAGE_SOURCE.replace(STAGE_ROLES, "(agent)")), /does not list the roles/);
});

/*
 * Post-checks against a lying kernel: each check below is reached only when
 * a call the stage made did not do what it said, so the test makes it lie.
 * A seccomp filter can: SECCOMP_RET_ERRNO with errno 0 answers "done" to a
 * call it never ran, and the stage installs the filter it is handed.
 */
/** struct sock_filter as the stage's hex: code, jt, jf, k (little-endian). */
const bpf = (code: number, jt: number, jf: number, k: number) => {
  const b = Buffer.alloc(8);
  b.writeUInt16LE(code, 0);
  b.writeUInt8(jt, 2);
  b.writeUInt8(jf, 3);
  b.writeUInt32LE(k >>> 0, 4);
  return b.toString("hex");
};
const LOAD_NR = bpf(0x20, 0, 0, 0);
const ALLOW = bpf(0x06, 0, 0, 0x7fff0000);
/** RET_ERRNO with errno `errno` for system call `nr`, then on to `rest`. */
const answer = (nr: number, errno: number, rest: string) => LOAD_NR + bpf(0x15, 0, 1, nr) + bpf(0x06, 0, 0, 0x00050000 | errno) + rest;
const IOCTL = 16;
const LANDLOCK_RESTRICT_SELF = 446;
const withKey = (keys: readonly string[], key: string, value: string) => keys.map((k) => (k.startsWith(`${key}=`) ? `${key}=${value}` : k));

test("a filter that lets AF_INET through under network=none is refused (70): the socket must answer EAFNOSUPPORT", () => {
  // It answers TIOCSTI with EPERM, as the stage's own check of the filter wants, and allows everything else.
  const lying = answer(IOCTL, 1, ALLOW);
  let keys = withKey(CONFINED, "network", "none");
  keys = withKey(withKey(keys, "seccomp", lying), "seccomp-alone", lying);
  refused(stage({ ...base, confinement: keys }), 70, differs("socket(AF_INET) under network=none succeeded (want EAFNOSUPPORT)"));
  // The control: the real filter of network=none runs the command.
  const real = confinementKeys({ ...NO_EXTRA_CONFINEMENT, network: "none" });
  assert.is(stage({ ...base, confinement: real }).stdout, "ran\n");
});

const CONFINEMENT_FIX =
  "run agent work on a kernel with Landlock ABI 6 or later (Linux 6.12+, lsm= including landlock) under an engine whose seccomp profile allows landlock_create_ruleset, landlock_add_rule and landlock_restrict_self (Docker 20.10.18+), or spawn without --strict-confinement to run it under the uid boundary alone";

test("a kernel whose Landlock ABI is 5 (no scoping): confine=strict is refused (77); best effort runs under ABI 5's domain", () => {
  // A supervisor answers landlock_create_ruleset's version query with 5 (SECCOMP_RET_USER_NOTIF): no root needed.
  const abi5 = landlockAbi(5);
  const probe = spawnSync(abi5[0]!, [...abi5.slice(1), "/usr/bin/perl", "-e", "print syscall(444, 0, 0, 1)"], { encoding: "utf8" });
  assert.is(probe.stdout, "5", `the wrapped kernel answers ABI 5: ${probe.stderr}`);
  const strict = withKey(CONFINED, "confine", "strict");
  refused(stage({ ...base, confinement: strict }, { wrap: abi5 }), 77, `clankie-agent-exec: agent confinement: the kernel's Landlock ABI is 5; scoping needs 6; ${CONFINEMENT_FIX}`);
  // The controls: best effort under ABI 5 runs the command, and so does strict on this kernel's own ABI.
  const best = stage(base, { wrap: abi5 });
  assert.is(best.stdout, "ran\n", best.stderr);
  assert.is(stage({ ...base, confinement: strict }).stdout, "ran\n");
});

test("a controlling terminal in a session of its own is refused (70): TIOCSTI needs one", () => {
  // script(1) starts its shell as the leader of a new session whose controlling terminal is its pty (no
  // root needed, where setsid --ctty would steal the terminal with CAP_SYS_ADMIN); the shell execs the stage.
  const argv = [...NNP, ...stageArgv({ ...base, session: "own" })];
  const quoted = argv.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const run = spawnSync("/usr/bin/script", ["-qec", `exec ${quoted}`, "/dev/null"], { encoding: "utf8", env: { PATH: "/usr/bin:/bin" } });
  assert.match(run.stdout, /clankie-agent-exec: the agent process is not what was asked: controlling terminal \d+ \(want none\); do not start agent work/);
  assert.is(run.status, 70, run.stdout);
  // The control: the same without a terminal runs the command.
  assert.is(stage({ ...base, session: "own" }, { wrap: ["/usr/bin/setsid", "--fork", "--wait"] }).stdout, "ran\n");
});

test("a cleanup stage asked to end a group it does not hold is refused (64) before it looks at a process", () => {
  const cleanup: StageRequest = { ...base, role: "cleanup", lease: "/run/clankie-private/0", group: 4242, action: { path: "/bin/true", argv: ["true"] } };
  refused(stage(cleanup), 64, `clankie-agent-exec: verification stage: group=4242 is not among groups=${[...base.groups].sort((a, b) => a - b).join(",")}; this stage is started by clankie-separate itself`);
});

rootTest(test, "a private job whose nested domain the kernel only claims to apply is refused (70): it must not signal its guard", () => {
  const index = 40 + (process.pid % 50);
  const lease = `/run/clankie-private/${index}`;
  rmSync(lease, { recursive: true, force: true });
  spawnSync("/bin/mkdir", ["-p", lease]);
  try {
    const privateJob = (seccomp?: string): AgentStageRequest => {
      let keys = confinementKeys({ ...NO_EXTRA_CONFINEMENT, privateDir: lease }, { topLevel: privateImageTree() });
      if (seccomp !== undefined) keys = withKey(keys, "seccomp", seccomp);
      return { ...base, confinement: keys, privateDir: lease };
    };
    const real = privateJob().confinement.find((k) => k.startsWith("seccomp="))!.slice("seccomp=".length);
    // The stage's own filter, with landlock_restrict_self answered "done" (errno 0) without being run.
    const lying = stage(privateJob(answer(LANDLOCK_RESTRICT_SELF, 0, real)));
    assert.is(lying.status, 70, lying.stderr);
    assert.match(lying.stderr, /^clankie-agent-exec: the agent process is not what was asked: it can signal its guard \(process \d+: allowed, want EPERM\); do not start/);
    rmSync(lease, { recursive: true, force: true });
    spawnSync("/bin/mkdir", ["-p", lease]);
    // The control: the real filter runs the command.
    const control = stage(privateJob());
    assert.is(control.stdout, "ran\n", control.stderr);
  } finally {
    rmSync(lease, { recursive: true, force: true });
  }
});

/*
 * Refusals against a kernel that lies as each test tells it (lyingKernel,
 * test/helpers/seccomp-wrap.ts: a SECCOMP_RET_USER_NOTIF supervisor, no root
 * needed): a call that fails, a file that reads otherwise. Each refusal is
 * reached only when a call fails, so each test makes it fail, and a control
 * shows the same request running on the kernel as it is.
 */
const KERNEL_FIX = "report this with the kernel version (uname -r)";
const PRIVATE_FIX = "run private jobs on a kernel with Landlock ABI 6 or later (Linux 6.12+, lsm= including landlock) where seccomp filters can be installed: without both, a private job is refused";
const EACCES = 13;
const EINVAL = 22;
/** The stage under a kernel that tells `lies`; `wrap` runs inside, so that the supervisor is the test's uid and holds no group of the stage's. */
const lying = (request: StageRequest, lies: readonly Lie[], wrap: readonly string[] = [], cwd?: string, stdio?: ("pipe" | "ignore")[]) => stage(request, { wrap: [...lyingKernel(lies), ...wrap], cwd, stdio });
const agentLine = (what: string) => `clankie-agent-exec: ${what}`;

test("a program name that is not one is a usage refusal (exit 64)", () => {
  const argv = stageArgv(base);
  const at = argv.indexOf("agent", argv.indexOf("-e") + 3) - 1;
  assert.is(argv[at], "clankie-agent-exec");
  const run = spawnSync(NNP[0]!, [...NNP.slice(1), ...argv.slice(0, at), "Not-A-Name", ...argv.slice(at + 1)], { encoding: "utf8" });
  refused(run, 64, usage("clankie-separate", "program name Not-A-Name"));
});

test("/proc/self/status, /proc/self/stat or /proc/self/fd that cannot be read is refused (71), never taken for empty", () => {
  for (const path of ["/proc/self/status", "/proc/self/stat", "/proc/self/fd"]) {
    refused(lying(base, [{ nr: NR.openat, path, errno: EACCES }]), 71, agentLine(`open ${path} failed: EACCES; mount /proc in the container`));
  }
  // The control: the same supervisor, lying about another path, lets the stage run.
  assert.is(lying(base, [{ nr: NR.openat, path: "/nonexistent", errno: EACCES }]).stdout, "ran\n");
});

test("a /proc/self/status without a capability line is a difference (70), not a capability set of 0", () => {
  const dir = mkdtempSync(join(tmpdir(), "verifier-"));
  try {
    chmodSync(dir, 0o755);
    const status = spawnSync(NNP[0]!, [...NNP.slice(1), "/bin/cat", "/proc/self/status"], { encoding: "utf8" }).stdout;
    const without = join(dir, "status");
    writeFileSync(without, status.replace(/^CapInh:.*\n/m, ""), { mode: 0o644 });
    refused(lying(base, [{ nr: NR.openat, path: "/proc/self/status", file: without }]), 70, differs("CapInh missing from /proc/self/status"));
    // The control: the whole status, served the same way, passes.
    writeFileSync(without, status);
    assert.is(lying(base, [{ nr: NR.openat, path: "/proc/self/status", file: without }]).stdout, "ran\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("RLIMIT_NPROC that the kernel will not set is refused (71), before the fork probe and after it", () => {
  const request = { ...base, options: { nproc: "100" } };
  const line = agentLine("prlimit64 RLIMIT_NPROC 100 failed: EPERM; pass an --nproc no higher than the service's own hard limit (ulimit -Hu)");
  // prlimit64(0, RLIMIT_NPROC, ...): the limit + 2 (then the limit itself, only when that failed) before the probe, the limit after it.
  refused(lying(request, [{ nr: NR.prlimit64, arg: [1, 6], calls: [1, 2], errno: 1 }]), 71, line);
  refused(lying(request, [{ nr: NR.prlimit64, arg: [1, 6], calls: [2], errno: 1 }]), 71, line);
  assert.is(lying(request, [{ nr: NR.prlimit64, arg: [1, 6], calls: [1], errno: 1 }]).stdout, "ran\n", "the control: the limit itself is set after the limit + 2 fails");
});

test("the fork probe: EAGAIN is the agent uid over --nproc (75), another errno a failed fork (71)", () => {
  const request = { ...base, options: { nproc: "100" } };
  refused(lying(request, [{ nr: NR.clone, errno: 11 }]), 75, agentLine("the agent uid already runs more than 100 tasks (--nproc 100); try again when agent work has ended, or spawn with a higher --nproc"));
  refused(lying(request, [{ nr: NR.clone, errno: 12 }]), 71, agentLine(`fork failed: ENOMEM; ${KERNEL_FIX}`));
});

test("the signal action: a kill(2) that fails otherwise than ESRCH or EPERM is refused (71)", () => {
  refused(lying(asSignal(base, 999999), [{ nr: NR.kill, errno: EINVAL }]), 71, agentLine("kill -TERM -999999 failed: EINVAL; report this with the command line used"));
});

test("the started marker: an fcntl(F_SETFD) that fails or a marker it cannot write is refused (71) before the exec, never a command holding the marker or an unreported start", () => {
  const withMarker = ["ignore", "pipe", "pipe", "pipe"] as ("pipe" | "ignore")[];
  const request = { ...base, startedFd: 3 };
  const atMarker = (nr: number, errno: number) => lying(request, [{ nr, arg: [0, 3], errno }], [], undefined, withMarker);
  refused(atMarker(72, EINVAL), 71, agentLine(`fcntl F_SETFD of the started marker (fd 3) failed: EINVAL; ${KERNEL_FIX}`));
  // A marker the stage cannot write: fd 3 open for reading only (a lie about write(2) would stop the supervisor's own start).
  const readOnly = openSync("/dev/null", "r");
  try {
    refused(stage(request, { stdio: ["ignore", "pipe", "pipe", readOnly as unknown as "pipe"] }), 71, agentLine("write to the started marker (fd 3) failed: EBADF; keep the marker pipe's read end open until the spawn has settled (spawnAgent does)"));
  } finally {
    closeSync(readOnly);
  }
  // The control: the same supervisor, lying about another fd, lets the command run and the marker say "S".
  const control = lying(request, [{ nr: 72, arg: [0, 9], errno: EINVAL }], [], undefined, withMarker);
  assert.is(control.stdout, "ran\n", control.stderr);
  assert.is(control.output[3], "S");
});

test("rt_sigprocmask that fails is refused (71): the command never starts with signals blocked", () => {
  refused(lying(base, [{ nr: NR.rtSigprocmask, arg: [0, 2], errno: EINVAL }]), 71, agentLine(`rt_sigprocmask failed: EINVAL; ${KERNEL_FIX}`));
});

/** The stage's request for a private job on the lease directory `lease`. */
const privateRequest = (lease: string) => ({ ...base, confinement: confinementKeys({ ...NO_EXTRA_CONFINEMENT, privateDir: lease }, { topLevel: privateImageTree() }), privateDir: lease });

/** A lease directory of this test process's (salted, so two tests never share one), and how to make it empty again. */
function testLease(salt: number): { lease: string; fresh: () => void } {
  const lease = `/run/clankie-private/${40 + ((process.pid + salt) % 50)}`;
  const fresh = (): void => {
    rmSync(lease, { recursive: true, force: true });
    mkdirSync(lease, { recursive: true });
  };
  return { lease, fresh };
}

test("a private job whose HOME or TMPDIR cannot be made fresh is refused (77)", () => {
  const lease = "/run/clankie-private/98";
  if (existsSync(lease)) rmSync(lease, { recursive: true, force: true });
  const request = privateRequest(lease);
  refused(stage(request), 77, agentLine(`the private job cannot make ${lease}/home (ENOENT); spawn it again: each private job gets a fresh lease`));
});

test("a kernel without Landlock or seccomp filters: confine=strict and network=none are refused (77), best effort runs", () => {
  const strict = withKey(CONFINED, "confine", "strict");
  const offline = confinementKeys({ ...NO_EXTRA_CONFINEMENT, network: "none" });
  const noLandlock = [{ nr: NR.landlockCreateRuleset, errno: 38 }];
  const noSeccomp = [{ nr: NR.prctl, arg: [0, 22] as const, errno: EINVAL }];
  refused(lying({ ...base, confinement: strict }, noLandlock), 77, agentLine(`agent confinement: the kernel offers no Landlock (ENOSYS); ${CONFINEMENT_FIX}`));
  refused(lying({ ...base, confinement: strict }, noSeccomp), 77, agentLine(`agent confinement: the kernel refused the seccomp filter (EINVAL); ${CONFINEMENT_FIX}`));
  refused(
    lying({ ...base, confinement: offline }, noSeccomp),
    77,
    agentLine("agent confinement: the kernel refused the seccomp filter (EINVAL) that keeps agent work off the network; run it where seccomp filters can be installed (CONFIG_SECCOMP_FILTER, an engine that allows prctl PR_SET_SECCOMP), or spawn without --no-network"),
  );
  // The controls: best effort runs under what remains.
  assert.is(lying(base, noLandlock).stdout, "ran\n");
  assert.is(lying(base, noSeccomp).stdout, "ran\n");
});

test("a kernel whose seccomp install answers 0 and installs nothing is refused (70): TIOCSTI must answer EPERM", () => {
  refused(lying(base, [{ nr: NR.prctl, arg: [0, 22], value: 0 }]), 70, differs("its seccomp filter is not in force (ioctl TIOCSTI: EBADF)"));
});

test("a kernel whose landlock_restrict_self answers 0 and enforces nothing is refused (70): /proc/self/oom_score_adj must not open for writing", () => {
  refused(lying(base, [{ nr: NR.landlockRestrictSelf, value: 0 }]), 70, differs("its Landlock domain lets it open /proc/self/oom_score_adj for writing"));
});

test("landlock_create_ruleset, landlock_add_rule (a path, a port) and landlock_restrict_self that fail are refused (71)", () => {
  refused(lying(base, [{ nr: NR.landlockCreateRuleset, arg: [2, 0], errno: EINVAL }]), 71, agentLine(`landlock_create_ruleset failed: EINVAL; ${KERNEL_FIX}`));
  const path = lying(base, [{ nr: NR.landlockAddRule, arg: [1, 1], errno: EINVAL }]);
  assert.match(path.stderr, new RegExp(`^clankie-agent-exec: landlock_add_rule /\\S* failed: EINVAL; ${KERNEL_FIX.replace(/[()]/g, "\\$&")}\\n$`));
  assert.is(path.status, 71);
  const ports = { ...base, confinement: confinementKeys({ ...NO_EXTRA_CONFINEMENT, denyConnect: [8081] }) };
  assert.is(stage(ports).stdout, "ran\n", "the control: the port rules apply");
  const port = lying(ports, [{ nr: NR.landlockAddRule, arg: [1, 2], errno: EINVAL }]);
  assert.match(port.stderr, new RegExp(`^clankie-agent-exec: landlock_add_rule port \\d+ failed: EINVAL; ${KERNEL_FIX.replace(/[()]/g, "\\$&")}\\n$`));
  assert.is(port.status, 71);
  refused(lying(base, [{ nr: NR.landlockRestrictSelf, errno: 1 }]), 71, agentLine(`landlock_restrict_self failed: EPERM; ${KERNEL_FIX}`));
});

test("a path the service named that is missing is refused (77), one reached through a symbolic link (65)", () => {
  const dir = mkdtempSync(join(tmpdir(), "verifier-"));
  try {
    chmodSync(dir, 0o755);
    const missing = join(dir, "missing");
    refused(stage({ ...base, confinement: confinementKeys({ ...NO_EXTRA_CONFINEMENT, allowRead: [missing] }) }), 77, agentLine(`agent confinement: cannot open ${missing} as the agent (ENOENT); name a path that exists and the agent can reach`));
    mkdirSync(join(dir, "real"));
    symlinkSync(join(dir, "real"), join(dir, "link"));
    refused(stage({ ...base, confinement: confinementKeys({ ...NO_EXTRA_CONFINEMENT, allowWrite: [join(dir, "link")] }) }), 65, agentLine(`agent confinement: ${join(dir, "link")} leads to ${join(dir, "real")}; name the path itself, without symbolic links`));
    // The control: the directory itself is taken.
    assert.is(stage({ ...base, confinement: confinementKeys({ ...NO_EXTRA_CONFINEMENT, allowWrite: [join(dir, "real")] }) }).stdout, "ran\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

rootTest(test, "a private job whose guard cannot be set up is refused: pidfd_open, pipe, either fork, the nested domain", () => {
  const { lease, fresh } = testLease(7);
  const request = privateRequest(lease);
  const fix = "try again when agent work has ended, or spawn with a higher --nproc";
  const cases: [Lie[], number, string][] = [
    [[{ nr: NR.pidfdOpen, errno: 1 }], 71, `pidfd_open of the private job failed: EPERM; ${PRIVATE_FIX}`],
    [[{ nr: NR.pipe2, errno: 24 }, { nr: NR.pipe, errno: 24 }], 71, `pipe failed: EMFILE; ${KERNEL_FIX}`],
    [[{ nr: NR.clone, calls: [1], errno: 11 }], 75, `fork of the private job's guard failed: EAGAIN; ${fix}`],
    [[{ nr: NR.clone, calls: [2], errno: 11 }], 75, `fork of the private job's guard failed; ${fix}`],
    [[{ nr: NR.landlockRestrictSelf, calls: [2], errno: 1 }], 71, `landlock_restrict_self of the private job's nested domain failed: EPERM; ${KERNEL_FIX}`],
  ];
  try {
    for (const [lies, status, line] of cases) {
      fresh();
      refused(lying(request, lies), status, agentLine(line));
    }
    fresh();
    assert.is(stage(request).stdout, "ran\n", "the control");
  } finally {
    rmSync(lease, { recursive: true, force: true });
  }
});

rootTest(test, "a private job whose oom_score_adj cannot be opened or read, whose guard's value reads wrong, or whose lease mark cannot be made, is refused", () => {
  const { lease, fresh } = testLease(13);
  const request = privateRequest(lease);
  const own = "/proc/self/oom_score_adj";
  const seven = join(mkdtempSync(join(tmpdir(), "verifier-")), "seven");
  writeFileSync(seven, "7\n");
  chmodSync(dirname(seven), 0o755);
  const cases: [Lie[], number, RegExp][] = [
    // The first open is the guard's handle on its own value, before the domain; the second the domain's own check
    // (which wants it refused); the third reads the value the job holds, the fourth reads it again after the fork.
    [[{ nr: NR.openat, path: own, calls: [1], errno: 13 }], 71, /^clankie-agent-exec: open \/proc\/self\/oom_score_adj failed: EACCES; mount \/proc in the container\n$/],
    [[{ nr: NR.openat, path: own, calls: [3], errno: 13 }], 71, /^clankie-agent-exec: open \/proc\/self\/oom_score_adj failed: EACCES; mount \/proc in the container \(it read ""\)\n$/],
    [[{ nr: NR.openat, path: own, calls: [4], file: seven }], 70, /^clankie-agent-exec: the agent process is not what was asked: its guard's oom_score_adj is -?\d+ and its own 7 \(want -?\d+ and -?\d+\); do not start/],
    [[{ nr: NR.openat, path: `${lease}/guard`, calls: [1], errno: 13 }], 71, new RegExp(`^clankie-agent-exec: open ${lease}/guard failed: EACCES; ${KERNEL_FIX.replace(/[()+.]/g, "\\$&")}\n$`)],
  ];
  try {
    for (const [lies, status, line] of cases) {
      fresh();
      const run = lying(request, lies);
      assert.ok(line.test(run.stderr), run.stderr);
      assert.is(run.status, status, run.stderr);
    }
    fresh();
    assert.is(stage(request).stdout, "ran\n", "the control");
  } finally {
    rmSync(lease, { recursive: true, force: true });
    rmSync(dirname(seven), { recursive: true, force: true });
  }
});

/*
 * The cleanup stage as uid 65533 with group G (root starts it), over a lease
 * of its own in /run/clankie-private, from an empty directory (without its
 * chdir into the lease it would walk where it was started): a process
 * holding G is one it must end, and one of uid 65534 one it cannot.
 */
function cleanupFixture(index: number) {
  const uid = 65533;
  const group = 4_000_000 + (process.pid % 1000) + index;
  const lease = `/run/clankie-private/${index}`;
  const empty = mkdtempSync(join(tmpdir(), "verifier-"));
  chmodSync(empty, 0o755);
  rmSync(lease, { recursive: true, force: true });
  mkdirSync(join(lease, "sub"), { recursive: true });
  spawnSync("/bin/chown", ["-R", `${uid}:${group}`, lease]);
  const request: StageRequest = { ...base, uid, gid: uid, groups: [group], caps: { inh: 0n, prm: 0n, eff: 0n, amb: 0n }, role: "cleanup", keepFds: [], lease, group, action: { path: "/bin/true", argv: ["true"] } };
  const as = ["/usr/bin/setpriv", `--reuid=${uid}`, `--regid=${uid}`, `--groups=${group}`, "--inh-caps=-all"];
  const holder = (holderUid: number) => spawn("/usr/bin/setpriv", [`--reuid=${holderUid}`, `--regid=${holderUid}`, `--groups=${group}`, "/bin/sleep", "30"], { stdio: "ignore" });
  const cleanup = () => {
    rmSync(lease, { recursive: true, force: true });
    rmSync(empty, { recursive: true, force: true });
  };
  return { request, as, lease, group, holder, cleanup, empty };
}

rootTest(test, "the cleanup stage: a holder of the group it cannot end is refused (71) after 4 s, never left holding it", async () => {
  const f = cleanupFixture(96);
  const foreign = f.holder(65534);
  try {
    await new Promise((resolve) => setTimeout(resolve, 200));
    refused(stage(f.request, { wrap: f.as, cwd: f.empty }), 71, agentLine(`processes holding group ${f.group} keep appearing; stop the private job from the service (signalAgent(PGID, 'SIGKILL')) and try again`));
    assert.is(foreign.exitCode, null, "it lives on");
  } finally {
    foreign.kill("SIGKILL");
    f.cleanup();
  }
});

rootTest(test, "the cleanup stage: /proc that cannot be listed, a pidfd it cannot open or signal through, a lease it cannot walk: each refused (71)", async () => {
  const f = cleanupFixture(97);
  try {
    refused(lying(f.request, [{ nr: NR.openat, path: "/proc", errno: EACCES }], f.as, f.empty), 71, agentLine("open /proc failed: EACCES; mount /proc in the container"));
    refused(lying(f.request, [{ nr: NR.chdir, calls: [1], errno: EACCES }], f.as, f.empty), 71, agentLine(`chdir ${f.lease} failed: EACCES; ${KERNEL_FIX}`));
    refused(lying(f.request, [{ nr: NR.chdir, calls: [3], errno: EACCES }], f.as, f.empty), 71, agentLine(`chdir .. in ${f.lease} failed: EACCES; ${KERNEL_FIX}`));
    for (const [lie, line] of [
      [(pid: number): Lie => ({ nr: NR.pidfdOpen, arg: [0, pid], errno: 1 }), "pidfd_open of process PID failed: EPERM; run private jobs on Linux 5.3 or later under a seccomp profile that allows pidfd_open and pidfd_send_signal (Docker's default does)"],
      [(): Lie => ({ nr: NR.pidfdSendSignal, errno: EINVAL }), `pidfd_send_signal to process PID failed: EINVAL; ${KERNEL_FIX}`],
    ] as const) {
      // A holder of the stage's own uid, which it would end: it waits 2 s before it kills.
      const own = f.holder(65533);
      try {
        await new Promise((resolve) => setTimeout(resolve, 200));
        refused(lying(f.request, [lie(own.pid!)], f.as, f.empty), 71, agentLine(line.replace("PID", String(own.pid))));
      } finally {
        own.kill("SIGKILL");
      }
    }
    // The control: no lie, no holder: the lease is walked and the command runs.
    const control = stage(f.request, { wrap: f.as, cwd: f.empty });
    assert.is(control.stderr, "");
    assert.is(control.status, 0);
  } finally {
    f.cleanup();
  }
});

test.run();
