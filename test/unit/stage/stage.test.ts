/*
 * The verification stage (src/stage/) run for real: perl(1) reading this
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
import { NO_EXTRA_CONFINEMENT, confinementKeys } from "../../../src/confinement.ts";
import { type AgentStageRequest, STAGE_ROLES, STAGE_SOURCE, stageArgv, stageEnvironment, stageProgram, type StageRequest, type StageRole, stageText, withoutComments } from "../../../src/stage/stage.ts";
import { rootTest } from "../../helpers/privilege.ts";

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
    nproc: undefined,
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

function stage(request: StageRequest, options: { nnp?: boolean; env?: NodeJS.ProcessEnv; wrap?: string[]; stdio?: ("pipe" | "ignore")[] } = {}): SpawnSyncReturns<string> {
  const argv = [...(options.wrap ?? []), ...(options.nnp === false ? [] : NNP), ...stageArgv(request)];
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
  refused(result, 70, `clankie-separate: after the drop to the service the kernel reports CapBnd 0x${base.bounding.toString(16)} (want 0xc0); ${SERVICE_FIX}`);
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
  assert.equal(result.stdout.split("\0").filter(Boolean).sort(), ["FOO=bar=baz\nqux", "LANG=xx_YY.UTF-8", "LANGUAGE=../../../../tmp/planted"]);
  // The same environment by name: perl reads it (its warning), and the command gets none of it.
  const named = stage({ ...base, action: show }, { env });
  assert.match(named.stderr, /^perl: warning: Setting locale failed/);
  assert.is(named.stdout, "");
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

/** The stage's keys in `argv` (between the role and the "--" before the command). */
function keysOf(argv: readonly string[], role: string): { at: number; keys: string[] } {
  const at = argv.indexOf(role, argv.indexOf("-e") + 3) + 1;
  return { at, keys: argv.slice(at, argv.indexOf("--", at)) };
}

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
    const program = stageProgram(role);
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
  const privateProgram = stageProgram("agent", STAGE_SOURCE, true);
  for (const name of [...SHARED_STEPS, ...OWN_STEPS.agent, ...PRIVATE_STEPS]) assert.ok(definesSub(privateProgram, name), `private job: no sub ${name}`);
  for (const name of PRIVATE_STEPS) assert.not.ok(definesSub(stageProgram("agent"), name), `the agent's program for an ordinary spawn holds ${name}`);
  assert.is(spawnSync("/usr/bin/perl", ["-T", "-C0", "-c", "-e", privateProgram], { encoding: "utf8" }).stderr, "-e syntax OK\n", "private job");
  for (const role of ["service", "signal", "cleanup"] as const) assert.is(stageProgram(role, STAGE_SOURCE, true), stageProgram(role), `${role}: no private steps`);
  // The agent's, compiled for every piece of agent work, is the smaller by the signal and cleanup roles' steps.
  assert.ok(stageProgram("agent").length < STAGE_SOURCE.length - 1500, `${stageProgram("agent").length} of ${STAGE_SOURCE.length} bytes`);
});

/** What perl compiled, as B::Deparse prints it back (the hash seed fixed: it prints constant subs in hash order). */
function deparsed(program: string): string {
  const result = spawnSync("/usr/bin/perl", ["-T", "-C0", "-MO=Deparse", "-e", program], { encoding: "utf8", env: { PERL_HASH_SEED: "0", PERL_PERTURB_KEYS: "0" } });
  assert.is(result.stderr, "-e syntax OK\n");
  return result.stdout;
}

test("each role's program is the program of stage.pl as written, comments and all: B::Deparse prints both alike", () => {
  const commented = stageText();
  assert.is(stageProgram("agent"), stageProgram("agent", withoutComments(commented)), "STAGE_SOURCE is stage.pl without its comments");
  assert.ok(STAGE_SOURCE.length < commented.length * 0.75, `${STAGE_SOURCE.length} of ${commented.length} bytes`);
  for (const role of Object.keys(OWN_STEPS) as StageRole[]) {
    const full = stageProgram(role, commented);
    assert.ok(full.includes("\n# "), `${role}: the control keeps its comments`);
    assert.is(deparsed(stageProgram(role)), deparsed(full), role);
  }
  assert.is(deparsed(stageProgram("agent", STAGE_SOURCE, true)), deparsed(stageProgram("agent", commented, true)), "private job");
  // Control: a string over several lines, one of which starts with #, is not the same program without that line.
  const planted = stageProgram("agent", commented).replace("\nread_request();", "\nmy $planted = q{a\n# b\nc};\nread_request();");
  assert.is.not(deparsed(withoutComments(planted)), deparsed(planted));
});

test("a role's program refuses every other role (exit 64): the full program is the control, which takes the signal role", () => {
  const request = asSignal(base, 999999);
  const argv = stageArgv(request);
  const program = argv.indexOf("-e") + 1;
  assert.is(argv[program], stageProgram("signal"));
  const run = (text: string) => spawnSync(NNP[0]!, [...NNP.slice(1), ...argv.slice(0, program), text, ...argv.slice(program + 1)], { encoding: "utf8" });
  // Control: with every role's steps the signal role runs its step (here: no such group, exit 65).
  refused(run(STAGE_SOURCE), 65, "clankie-agent-exec: no agent process group 999999; it has already exited");
  refused(run(stageProgram("agent")), 64, usage("clankie-agent-exec", "unknown role signal"));
});

test("stage.pl lists the roles once, and a program without the list is refused", () => {
  assert.is(STAGE_SOURCE.split(STAGE_ROLES).length, 2);
  assert.throws(() => stageProgram("agent", STAGE_SOURCE.replace(STAGE_ROLES, "(agent)")), /does not list the roles/);
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

test("a controlling terminal in a session of its own is refused (70): TIOCSTI needs one", () => {
  // script(1) gives the stage a pty; setsid --ctty makes it the controlling terminal of a new session.
  const argv = [...NNP, ...stageArgv({ ...base, session: "own" })];
  const quoted = argv.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const run = spawnSync("/usr/bin/script", ["-qec", `/usr/bin/setsid --ctty --wait ${quoted}`, "/dev/null"], { encoding: "utf8", env: { PATH: "/usr/bin:/bin" } });
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
      let keys = confinementKeys({ ...NO_EXTRA_CONFINEMENT, privateDir: lease });
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

test.run();
