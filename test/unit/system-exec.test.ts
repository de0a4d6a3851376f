import { NO_EXTRA_CONFINEMENT } from "../../src/confinement.ts";
import { accessSync, chmodSync, chownSync, constants, existsSync, lstatSync, mkdirSync, mkdtempSync, rmdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parseAgentExecArgs } from "../../src/cli.ts";
import { EXIT, isAllowlisted, SYSTEM_PATH } from "../../src/constants.ts";
import { agentExecArguments, buildEnvironment, runSelfCheck, spawnAgent, systemExec } from "../../src/system-exec.ts";
import { DROP_CAPABILITIES, withoutCapabilities } from "../../src/service/drop-capabilities.ts";
import { AgentStopError, STOP_RETRY_DELAYS_MS } from "../../src/service/agent-stop.ts";
import { checkTrustedExecutable, MAX_SCRIPT_DEPTH, resolveCommand } from "../../src/exec/rules.ts";
import { prepareExec } from "../../src/exec/replace.ts";
import { runCapture, startCapture } from "../../src/exec/capture.ts";
import { REPO } from "../helpers/paths.ts";
import { rootTest } from "../helpers/privilege.ts";
import { assertRefusal, catchRefusal } from "./helpers/refusal.ts";

const FIX = "install programs that root or the service run in a root-owned directory that only root can write (for example /usr/local/bin)";
const INTERPRETER_FIX = "name a #! interpreter installed in a root-owned directory that only root can write (for example /usr/bin)";
const EUID = process.geteuid!();
const TRUSTED = [...new Set([0, EUID])];
const octal = (path: string): string => (lstatSync(path).mode & 0o7777).toString(8);

/** Runs fn with these process.env values (undefined deletes), then restores them. */
function withProcessEnv(values: Record<string, string | undefined>, fn: () => void): void {
  const saved = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
  const apply = (v: Record<string, string | undefined>): void => {
    for (const [name, value] of Object.entries(v)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(values);
  try {
    fn();
  } finally {
    apply(saved);
  }
}

function writeProgram(path: string, mode = 0o755): string {
  writeFileSync(path, "#!/bin/sh\nexit 0\n");
  chmodSync(path, mode);
  return path;
}

/* ------------------------------------------------------- buildEnvironment -- */

const env = suite("buildEnvironment");

env("nothing asked: only the fixed PATH", () => {
  assert.equal(buildEnvironment(), { PATH: SYSTEM_PATH });
  assert.equal(buildEnvironment({}), { PATH: SYSTEM_PATH });
});

env("from: the allowlist only (exact names, and the LC_ prefix)", () => {
  const from = {
    TERM: "xterm",
    COLORTERM: "truecolor",
    LANG: "C.UTF-8",
    LANGUAGE: "en",
    LC_ALL: "C",
    LC_: "x",
    TZ: "UTC",
    NO_COLOR: "1",
    TERMINAL: "no",
    LCX: "no",
    lang: "no",
    HOME: "/root",
    LD_PRELOAD: "/x.so",
    SECRET: "s",
    GONE: undefined,
  };
  assert.equal(buildEnvironment({ from }), {
    TERM: "xterm",
    COLORTERM: "truecolor",
    LANG: "C.UTF-8",
    LANGUAGE: "en",
    LC_ALL: "C",
    LC_: "x",
    TZ: "UTC",
    NO_COLOR: "1",
    PATH: SYSTEM_PATH,
  });
});

env("pass copies named variables; set overrides both; PATH is always the fixed one", () => {
  const from = { TERM: "xterm", TOKEN: "from-env", OTHER: "o", PATH: "/tmp", EMPTY: "" };
  assert.equal(buildEnvironment({ from, pass: ["TOKEN", "EMPTY", "MISSING", "PATH"], set: { TERM: "dumb", NEW: "n", PATH: "/workspace/bin" } }), {
    TERM: "dumb",
    TOKEN: "from-env",
    EMPTY: "",
    NEW: "n",
    PATH: SYSTEM_PATH,
  });
});

env("the caller's objects are not changed", () => {
  const from = { TERM: "xterm" };
  const set = { A: "1" };
  const result = buildEnvironment({ from, set });
  result.B = "2";
  assert.equal(from, { TERM: "xterm" });
  assert.equal(set, { A: "1" });
});

env.run();

/* ----------------------------------------------------- agentExecArguments -- */

const shim = suite("agentExecArguments");

shim("no options: only the command after --", () => {
  withProcessEnv({ TERM: undefined, SECRET_FOR_TEST: "s" }, () => {
    const { argv, env } = agentExecArguments("ls", ["-la", "--", "x"]);
    assert.equal(argv, ["--", "ls", "-la", "--", "x"]);
    assert.equal(env, buildEnvironment({ from: process.env }));
    assert.is(env.SECRET_FOR_TEST, undefined);
  });
});

shim("every option, in a fixed order; variables by name in argv, by value in the environment", () => {
  const allowlisted = Object.fromEntries(Object.keys(process.env).filter(isAllowlisted).map((name) => [name, undefined]));
  withProcessEnv({ ...allowlisted, TERM: "xterm-test", LC_ALL: "C", SECRET_FOR_TEST: "service-only", TOKEN: undefined }, () => {
    const { argv, env } = agentExecArguments("git", ["push"], {
      cwd: "/workspace/repo",
      env: { ZED: "z", TOKEN: "agent-token" },
      keepFds: [17, 18],
      nproc: 64,
      oomScoreAdj: 900,
    });
    assert.equal(argv, ["--cwd", "/workspace/repo", "--env", "TOKEN", "--env", "ZED", "--keep-fd", "17", "--keep-fd", "18", "--nproc", "64", "--oom-score-adj", "900", "--", "git", "push"]);
    assert.equal(env, { TERM: "xterm-test", LC_ALL: "C", TOKEN: "agent-token", ZED: "z", PATH: SYSTEM_PATH });
    assert.not.ok(argv.some((arg) => arg.includes("agent-token")), "a value never appears in argv");
  });
});

shim("what the service sends is what the shim parses", () => {
  const { argv } = agentExecArguments("node", ["--cwd=/", "--"], { cwd: "/workspace/p", env: { B: "1", A: "2" }, keepFds: [17], nproc: 5, oomScoreAdj: -1000 });
  assert.equal(parseAgentExecArgs(argv), { kind: "run", cwd: "/workspace/p", env: ["A", "B"], keepFds: [17], nproc: 5, oomScoreAdj: -1000, confinement: NO_EXTRA_CONFINEMENT, privateJob: false, command: ["node", "--cwd=/", "--"] });
  assert.equal(parseAgentExecArgs(agentExecArguments("true", []).argv), { kind: "run", cwd: "/workspace", env: [], keepFds: [], nproc: 512, oomScoreAdj: 500, confinement: NO_EXTRA_CONFINEMENT, privateJob: false, command: ["true"] });
  const confinement = { strict: true, allowWrite: ["/state/run/w1"], allowRead: ["/opt/r"], denyConnect: [8081], denyBind: [8080, 8081], network: "none" as const };
  const confined = agentExecArguments("true", [], { allowWrite: confinement.allowWrite, allowRead: confinement.allowRead, denyConnect: confinement.denyConnect, denyBind: confinement.denyBind, strictConfinement: true, network: "none" });
  assert.equal(parseAgentExecArgs(confined.argv), { kind: "run", cwd: "/workspace", env: [], keepFds: [], nproc: 512, oomScoreAdj: 500, confinement, privateJob: false, command: ["true"] });
  assert.equal(agentExecArguments("true", [], { privateJob: true }).argv, ["--private-job", "--", "true"]);
  assert.is((parseAgentExecArgs(agentExecArguments("true", [], { privateJob: true }).argv) as { privateJob: boolean }).privateJob, true);
});

shim("network: \"none\" is --no-network; a value other than \"all\" or \"none\" is refused (64), never read as the network", () => {
  assert.equal(agentExecArguments("true", [], { network: "none" }).argv, ["--no-network", "--", "true"]);
  assert.equal(agentExecArguments("true", [], { network: "all" }).argv, ["--", "true"]);
  for (const network of ["None", "off", ""]) {
    assertRefusal(() => agentExecArguments("true", [], { network: network as "none" }), {
      exitCode: EXIT.usage,
      what: `network ${JSON.stringify(network)} is not "all" or "none"`,
      fix: 'give network: "none" to keep agent work off the network, or leave it out',
    });
  }
});

shim("a PATH for the agent is named but never given: the fixed PATH wins", () => {
  const { argv, env } = agentExecArguments("x", [], { env: { PATH: "/workspace/bin" } });
  assert.equal(argv, ["--env", "PATH", "--", "x"]);
  assert.is(env.PATH, SYSTEM_PATH);
});

const SIGNALS_FIX = "use one of these";
const SIGNALS_LIST = "SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGUSR1, SIGUSR2, SIGTERM, SIGCONT, SIGSTOP, SIGTSTP, SIGWINCH";

shim("spawnAgent refuses a killSignal the shim cannot deliver (64), before anything starts", () => {
  // /usr/bin/env stands in for the shim's path: it passes the trust rule, and nothing may start.
  for (const [killSignal, shown] of [["SIGABRT", '"SIGABRT"'], [6, "6"], ["TERM", '"TERM"'], [999, "999"]] as const) {
    assertRefusal(() => spawnAgent("/bin/true", [], { shim: "/usr/bin/env", killSignal: killSignal as NodeJS.Signals }), {
      exitCode: EXIT.usage,
      what: `killSignal ${shown}: the shim delivers only ${SIGNALS_LIST} to agent work`,
      fix: SIGNALS_FIX,
    });
  }
});

shim("kill() refuses a signal the shim cannot deliver; kill(0) sends nothing and says whether the command runs", async () => {
  // /usr/bin/env as the shim runs the command as this uid, so that it can be cleaned up here.
  const child = spawnAgent("/bin/sleep", ["5"], { shim: "/usr/bin/env", reject: false });
  try {
    assertRefusal(() => child.kill("SIGABRT"), { exitCode: EXIT.usage, what: `kill() "SIGABRT": the shim delivers only ${SIGNALS_LIST} to agent work`, fix: SIGNALS_FIX });
    assert.is(child.kill(0), true);
  } finally {
    process.kill(-child.pid!, "SIGKILL");
  }
  const result = await child;
  assert.is(result.signal, "SIGKILL");
  assert.is(child.kill(0), false);
  assert.is(child.kill(), false, "nothing is sent once the command has exited: its pid may be someone else's");
});

shim.run();

/* ------------------------------------------------ capabilities and stops -- */

const powers = suite("systemExec's children and undelivered stops");

powers("a systemExec child starts through setpriv that empties the inheritable and ambient sets, then execs it in place", () => {
  assert.equal([...DROP_CAPABILITIES], ["/usr/bin/setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--"]);
  assert.equal(withoutCapabilities("/usr/bin/git", ["-C", "/state/install", "--", "x"]), {
    file: "/usr/bin/setpriv",
    args: ["--inh-caps=-all", "--ambient-caps=-all", "--", "/usr/bin/git", "-C", "/state/install", "--", "x"],
  });
});

powers("systemExec, runSelfCheck and spawnAgent refuse execa's uid and gid options (64) before anything starts", () => {
  const fix = (name: string) => `remove ${name}; agent work runs as the agent through spawnAgent`;
  const what = (where: string, name: string) => `${where}: the ${name} option is not accepted: it would start the child as another ${name === "uid" ? "user" : "group"} with the service's CAP_SETUID/CAP_SETGID`;
  const asAny = (o: object) => o as never;
  assertRefusal(() => systemExec("/bin/true", [], asAny({ uid: 0 })), { exitCode: EXIT.usage, what: what("systemExec", "uid"), fix: fix("uid") });
  assertRefusal(() => systemExec("/bin/true", [], asAny({ gid: 0 })), { exitCode: EXIT.usage, what: what("systemExec", "gid"), fix: fix("gid") });
  assertRefusal(() => runSelfCheck([], asAny({ uid: 0 })), { exitCode: EXIT.usage, what: what("runSelfCheck", "uid"), fix: fix("uid") });
  assertRefusal(() => spawnAgent("/bin/true", [], asAny({ shim: "/usr/bin/env", gid: 0 })), { exitCode: EXIT.usage, what: what("spawnAgent", "gid"), fix: fix("gid") });
});

powers("an undelivered stop: 12 tries over about 6.3 s, and an error that says the job may still run", () => {
  assert.is(STOP_RETRY_DELAYS_MS.length + 1, 12);
  assert.is(STOP_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0), 6260);
  const error = new AgentStopError(42, "SIGKILL", 12, "the signal stage exited 127: perl: error while loading shared libraries");
  assert.instance(error, Error);
  assert.is(error.name, "AgentStopError");
  assert.is(error.failed, true);
  assert.is(error.message, "cannot stop agent process group 42: SIGKILL was not delivered after 12 tries (last: the signal stage exited 127: perl: error while loading shared libraries); the job may still be running");
});

powers.run();

/* --------------------------------------------------------- resolveCommand -- */

const resolve = suite("resolveCommand");

resolve("one gate for every audience: an argument with a NUL byte is refused before anything starts (exec, capture, the service's systemExec)", () => {
  const nul = { exitCode: EXIT.usage, what: "an argument contains a NUL byte", fix: "pass arguments without NUL bytes" };
  assertRefusal(() => prepareExec({ command: "/bin/true", args: ["a\0b"], env: {}, trustedUids: [0] }), nul);
  assertRefusal(() => runCapture({ command: "/bin/true", args: ["a\0b"] }), nul);
  assertRefusal(() => systemExec("/bin/true", ["a\0b"]), nul);
});

resolve("refuses an empty command and a NUL byte (exit 64)", () => {
  assertRefusal(() => resolveCommand(""), { exitCode: EXIT.usage, what: "the command is empty", fix: "name a program to run" });
  assertRefusal(() => resolveCommand("env\0x"), { exitCode: EXIT.usage, what: "the command contains a NUL byte", fix: "name a program to run" });
  assertRefusal(() => resolveCommand("/usr/bin/env\0"), { exitCode: EXIT.usage, what: "the command contains a NUL byte", fix: "name a program to run" });
});

resolve("a path is taken as given, made absolute against cwd, without looking at the disk", () => {
  const cases: ReadonlyArray<readonly [string, string, string]> = [
    ["/no/such/program", "/opt", "/no/such/program"],
    ["./run.sh", "/opt/app", "/opt/app/run.sh"],
    ["bin/tool", "/opt/app", "/opt/app/bin/tool"],
    ["../tool", "/opt/app", "/opt/tool"],
    ["a/./b/../c", "/w", "/w/a/c"],
  ];
  for (const [command, cwd, want] of cases) assert.is(resolveCommand(command, cwd), want, command);
});

resolve("a bare name is found in the fixed system PATH", () => {
  assert.is(resolveCommand("env"), "/usr/bin/env");
  assert.is(resolveCommand("setpriv"), "/usr/bin/setpriv");
});

resolve("the caller's PATH is ignored", () => {
  const dir = mkdtempSync("/tmp/clankie-unit-path-");
  try {
    writeProgram(join(dir, "clankie-unit-planted"));
    withProcessEnv({ PATH: `${dir}:${process.env.PATH ?? ""}` }, () => {
      assertRefusal(() => resolveCommand("clankie-unit-planted"), {
        exitCode: EXIT.notFound,
        what: `clankie-unit-planted: not found in ${SYSTEM_PATH}`,
        fix: "install it in a system directory or give its absolute path",
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

resolve("not found: exit 127", () => {
  assert.is(EXIT.notFound, 127);
  assertRefusal(() => resolveCommand("clankie-no-such-command"), {
    exitCode: 127,
    what: `clankie-no-such-command: not found in ${SYSTEM_PATH}`,
    fix: "install it in a system directory or give its absolute path",
  });
});

resolve.run();

/* ------------------------------------------------- checkTrustedExecutable -- */

const trust = suite("checkTrustedExecutable");

trust("a system program owned by root passes", () => {
  checkTrustedExecutable("/usr/bin/env", [0]);
  checkTrustedExecutable("/usr/bin/setpriv", [0, 1000]);
});

trust("a symlinked directory on the way counts by where it is, not by its own 0777 mode", () => {
  if (!lstatSync("/bin").isSymbolicLink()) return; // not a merged-/usr system
  checkTrustedExecutable("/bin/env", [0]);
});

trust("a missing file is not found (127)", () => {
  assertRefusal(() => checkTrustedExecutable("/usr/bin/clankie-no-such-program", [0]), {
    exitCode: EXIT.notFound,
    what: "/usr/bin/clankie-no-such-program: no such file",
    fix: "check the command's path",
  });
});

trust("an owner outside the trusted set is refused (126), naming the uid", () => {
  assert.is(EXIT.notExecutable, 126);
  assertRefusal(() => checkTrustedExecutable("/usr/bin/env", [1000]), {
    exitCode: 126,
    what: "refusing to execute /usr/bin/env: /usr/bin/env is owned by uid 0, not 1000",
    fix: FIX,
  });
  assertRefusal(() => checkTrustedExecutable("/usr/bin/env", [1000, 1001]), {
    exitCode: 126,
    what: "refusing to execute /usr/bin/env: /usr/bin/env is owned by uid 0, not 1000 or 1001",
    fix: FIX,
  });
  assertRefusal(() => checkTrustedExecutable("/usr/bin/env", []), { exitCode: 126, what: "refusing to execute /usr/bin/env: /usr/bin/env is owned by uid 0, not ", fix: FIX });
});

/** A scratch directory under /tmp (itself world-writable: nothing below it can pass). */
function scratch(): string {
  const dir = mkdtempSync("/tmp/clankie-unit-trust-");
  chmodSync(dir, 0o700);
  return dir;
}

trust("a file in a 0777 directory is refused, naming that directory", () => {
  const dir = scratch();
  try {
    const open = join(dir, "open");
    mkdirSync(open);
    chmodSync(open, 0o777);
    const program = writeProgram(join(open, "prog"));
    assertRefusal(() => checkTrustedExecutable(program, TRUSTED), {
      exitCode: 126,
      what: `refusing to execute ${program}: ${open} is writable by group or other (mode 777)`,
      fix: FIX,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

trust("group- or other-writable files and directories are refused, whatever else is set", () => {
  const dir = scratch();
  try {
    const cases: ReadonlyArray<readonly [number, string]> = [
      [0o775, "775"],
      [0o757, "757"],
      [0o4777, "4777"],
      [0o2775, "2775"],
    ];
    for (const [mode, shown] of cases) {
      const program = writeProgram(join(dir, `prog-${shown}`), mode);
      assertRefusal(() => checkTrustedExecutable(program, TRUSTED), {
        exitCode: 126,
        what: `refusing to execute ${program}: ${program} is writable by group or other (mode ${shown})`,
        fix: FIX,
      });
    }
    const sticky = join(dir, "sticky");
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    const program = writeProgram(join(sticky, "prog"));
    assertRefusal(() => checkTrustedExecutable(program, TRUSTED), {
      exitCode: 126,
      what: `refusing to execute ${program}: ${sticky} is writable by group or other (mode 1777)`,
      fix: FIX,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

trust("every directory up to / is checked: /tmp itself refuses what is below it", () => {
  const dir = scratch();
  try {
    const program = writeProgram(join(dir, "prog"));
    const top = dirname(dir);
    assert.ok((lstatSync(top).mode & 0o022) !== 0, `${top} is expected to be world-writable`);
    assertRefusal(() => checkTrustedExecutable(program, TRUSTED), {
      exitCode: 126,
      what: `refusing to execute ${program}: ${top} is writable by group or other (mode ${octal(top)})`,
      fix: FIX,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

trust("a symlink in a 0777 directory is refused even when its target is trusted (the path as given counts)", () => {
  const dir = scratch();
  try {
    const open = join(dir, "open");
    mkdirSync(open);
    chmodSync(open, 0o777);
    const link = join(open, "env");
    symlinkSync("/usr/bin/env", link);
    assertRefusal(() => checkTrustedExecutable(link, [0, EUID]), {
      exitCode: 126,
      what: `refusing to execute ${link}: ${open} is writable by group or other (mode 777)`,
      fix: FIX,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

rootTest(trust, "a file owned by another uid is refused (chown)", () => {
  const dir = scratch();
  try {
    const program = writeProgram(join(dir, "prog"));
    chownSync(program, 4242, 4242);
    assertRefusal(() => checkTrustedExecutable(program, [0]), {
      exitCode: 126,
      what: `refusing to execute ${program}: ${program} is owned by uid 4242, not 0`,
      fix: FIX,
    });
    // trusting that uid moves the refusal up to the first untrusted directory
    assertRefusal(() => checkTrustedExecutable(program, [4242]), {
      exitCode: 126,
      what: `refusing to execute ${program}: ${dir} is owned by uid 0, not 4242`,
      fix: FIX,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

rootTest(trust, "a root-owned file in a directory owned by another uid is refused (chown)", () => {
  const dir = scratch();
  try {
    const sub = join(dir, "theirs");
    mkdirSync(sub, 0o755);
    chmodSync(sub, 0o755);
    chownSync(sub, 4242, 4242);
    const program = writeProgram(join(sub, "prog"));
    assertRefusal(() => checkTrustedExecutable(program, [0]), {
      exitCode: 126,
      what: `refusing to execute ${program}: ${sub} is owned by uid 4242, not 0`,
      fix: FIX,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/*
 * Cases that must pass need a directory chain nobody else can write. /tmp is
 * not one: use the repository's ignored tmp/ when the checkout's own chain is
 * clean (checked here independently of src/), otherwise skip loudly.
 */
function cleanChain(path: string): boolean {
  for (let p = path; ; p = dirname(p)) {
    const st = lstatSync(p);
    if (!TRUSTED.includes(st.uid) || (!st.isSymbolicLink() && (st.mode & 0o022) !== 0)) return false;
    if (p === "/") return true;
  }
}

/**
 * Where scratch directories that pass the rules can be made, decided once:
 * the repository's ignored tmp/, or, for root in a checkout under /tmp (as a
 * CI clone may be), a directory under /run.
 */
const SCRATCH_BASE = ((): string | undefined => {
  try {
    accessSync(REPO, constants.W_OK);
    if (cleanChain(REPO)) return join(REPO, "tmp");
  } catch {
    // not writable: try /run
  }
  if (process.geteuid?.() === 0 && cleanChain("/run")) return `/run/clankie-unit-scratch-${process.pid}`;
  return undefined;
})();

function withTrustedScratch(name: string, fn: (dir: string) => void, needsRoot = false): void {
  if (SCRATCH_BASE === undefined) {
    process.stderr.write(`SKIPPED (no scratch directory under ${REPO} that only a trusted uid can write): ${name}\n`);
    trust.skip(name);
    return;
  }
  const base = SCRATCH_BASE;
  const body = (): void => {
    if (!existsSync(base)) mkdirSync(base);
    chmodSync(base, 0o755);
    const dir = mkdtempSync(join(base, "unit-trust-"));
    chmodSync(dir, 0o755);
    try {
      fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      try {
        rmdirSync(base); // when no other run uses it
      } catch {
        // not empty: another run's scratch is there
      }
    }
  };
  if (needsRoot) rootTest(trust, name, body);
  else trust(name, body);
}

withTrustedScratch("a file in a clean chain passes; making one directory group-writable refuses it", (dir) => {
  const program = writeProgram(join(dir, "prog"));
  checkTrustedExecutable(program, TRUSTED);
  chmodSync(dir, 0o775);
  assertRefusal(() => checkTrustedExecutable(program, TRUSTED), {
    exitCode: 126,
    what: `refusing to execute ${program}: ${dir} is writable by group or other (mode 775)`,
    fix: FIX,
  });
});

withTrustedScratch("a symlink in a clean directory to a file in a 0777 directory is refused (the path as resolved counts)", (dir) => {
  const open = join(dir, "open");
  mkdirSync(open);
  chmodSync(open, 0o777);
  const target = writeProgram(join(open, "prog"));
  const link = join(dir, "link");
  symlinkSync(target, link);
  assertRefusal(() => checkTrustedExecutable(link, TRUSTED), {
    exitCode: 126,
    what: `refusing to execute ${link}: ${open} is writable by group or other (mode 777)`,
    fix: FIX,
  });
});

withTrustedScratch("a symlinked directory into a 0777 directory is refused", (dir) => {
  const open = join(dir, "open");
  mkdirSync(open);
  chmodSync(open, 0o777);
  writeProgram(join(open, "prog"));
  symlinkSync(open, join(dir, "bin"));
  const program = join(dir, "bin", "prog");
  assertRefusal(() => checkTrustedExecutable(program, TRUSTED), {
    exitCode: 126,
    what: `refusing to execute ${program}: ${open} is writable by group or other (mode 777)`,
    fix: FIX,
  });
});

withTrustedScratch("a clean symlink to a clean file passes", (dir) => {
  const target = writeProgram(join(dir, "prog"));
  const link = join(dir, "link");
  symlinkSync("prog", link);
  checkTrustedExecutable(link, TRUSTED);
  checkTrustedExecutable(target, TRUSTED);
});

withTrustedScratch(
  "a symlink in a clean directory to a file owned by another uid is refused (chown)",
  (dir) => {
    const target = writeProgram(join(dir, "prog"));
    chownSync(target, 4242, 4242);
    const link = join(dir, "link");
    symlinkSync(target, link);
    assertRefusal(() => checkTrustedExecutable(link, [0]), {
      exitCode: 126,
      what: `refusing to execute ${link}: ${target} is owned by uid 4242, not 0`,
      fix: FIX,
    });
  },
  true,
);

/* A script's #! interpreter runs with the caller's privileges: it is held to the same rule as the script. */

function writeScript(path: string, interpreter: string, mode = 0o755): string {
  writeFileSync(path, `#!${interpreter} -e\necho hello\n`);
  chmodSync(path, mode);
  return path;
}

/** The three ways in which every rule-following caller (exec, capture, service exec) refuses, each with one line. */
function assertEveryExecRefuses(program: string, want: { exitCode: number; what: string; fix?: string }): void {
  assertRefusal(() => prepareExec({ command: program, args: [], env: {}, trustedUids: TRUSTED }), want);
  assertRefusal(() => runCapture({ command: program, args: [], trustedUids: TRUSTED }), want);
  assertRefusal(() => systemExec(program, [], { trustedUids: TRUSTED }), want);
  const refusal = catchRefusal(() => prepareExec({ command: program, args: [], env: {}, trustedUids: TRUSTED }));
  assert.not.match(`${refusal.message}; ${refusal.fix}`, /[\r\n]/, "one line on stderr");
}

withTrustedScratch("a trusted script whose #! interpreter lies in a 0777 directory is refused (126); with /bin/sh it passes", (dir) => {
  const open = join(dir, "open");
  mkdirSync(open);
  chmodSync(open, 0o777);
  const tool = writeProgram(join(open, "tool"));
  const script = writeScript(join(dir, "run.sh"), tool);
  assert.is(octal(script), "755");
  assertEveryExecRefuses(script, {
    exitCode: 126,
    what: `refusing to execute ${script} (#! ${tool}): ${open} is writable by group or other (mode 777)`,
    fix: INTERPRETER_FIX,
  });
  // The control: the same script with a trusted interpreter.
  writeScript(script, "/bin/sh");
  assert.is(prepareExec({ command: script, args: [], env: {}, trustedUids: TRUSTED }).path, script);
  assert.is(runCapture({ command: script, args: [], trustedUids: TRUSTED }).stdout.toString(), "hello\n");
});

withTrustedScratch("a #! interpreter writable by group or by other is refused, whatever else is set", (dir) => {
  for (const mode of [0o775, 0o757, 0o777]) {
    const tool = writeProgram(join(dir, `tool-${mode.toString(8)}`), mode);
    const script = writeScript(join(dir, `run-${mode.toString(8)}.sh`), tool);
    assertEveryExecRefuses(script, {
      exitCode: 126,
      what: `refusing to execute ${script} (#! ${tool}): ${tool} is writable by group or other (mode ${mode.toString(8)})`,
      fix: INTERPRETER_FIX,
    });
  }
});

withTrustedScratch(
  "a #! interpreter owned by another uid is refused (chown)",
  (dir) => {
    const tool = writeProgram(join(dir, "tool"));
    chownSync(tool, 4242, 4242);
    const script = writeScript(join(dir, "run.sh"), tool);
    assertEveryExecRefuses(script, {
      exitCode: 126,
      what: `refusing to execute ${script} (#! ${tool}): ${tool} is owned by uid 4242, not ${TRUSTED.join(" or ")}`,
      fix: INTERPRETER_FIX,
    });
  },
  true,
);

withTrustedScratch("the interpreter's interpreter is held to the rule too, and the refusal names the chain", (dir) => {
  const open = join(dir, "open");
  mkdirSync(open);
  chmodSync(open, 0o777);
  const tool = writeProgram(join(open, "tool"));
  const middle = writeScript(join(dir, "middle"), tool);
  const script = writeScript(join(dir, "run.sh"), middle);
  assertEveryExecRefuses(script, {
    exitCode: 126,
    what: `refusing to execute ${script} (#! ${middle}, #! ${tool}): ${open} is writable by group or other (mode 777)`,
    fix: INTERPRETER_FIX,
  });
});

withTrustedScratch("a symlink to a script does not hide the script's #! line", (dir) => {
  const open = join(dir, "open");
  mkdirSync(open);
  chmodSync(open, 0o777);
  const tool = writeProgram(join(open, "tool"));
  const script = writeScript(join(dir, "run.sh"), tool);
  const link = join(dir, "link");
  symlinkSync("run.sh", link);
  assertEveryExecRefuses(link, {
    exitCode: 126,
    what: `refusing to execute ${link} (#! ${tool}): ${open} is writable by group or other (mode 777)`,
    fix: INTERPRETER_FIX,
  });
});

withTrustedScratch("a missing #! interpreter is not found (127), named with its script", (dir) => {
  const script = writeScript(join(dir, "run.sh"), join(dir, "no-such-tool"));
  assertEveryExecRefuses(script, { exitCode: 127, what: `${join(dir, "no-such-tool")}: no such file (the #! interpreter of ${script})`, fix: "check the command's path" });
});

withTrustedScratch(`#! chains: ${MAX_SCRIPT_DEPTH} scripts in a row run, as the kernel allows; one more is refused (ELOOP)`, (dir) => {
  let interpreter = "/bin/sh";
  const scripts: string[] = [];
  for (let i = 0; i <= MAX_SCRIPT_DEPTH; i++) {
    interpreter = writeScript(join(dir, `s${i}`), interpreter);
    scripts.push(interpreter);
  }
  const longest = scripts[MAX_SCRIPT_DEPTH - 1]!;
  assert.is(runCapture({ command: longest, args: [], trustedUids: TRUSTED }).status, 0, "the kernel runs the longest chain it allows");
  const tooLong = scripts[MAX_SCRIPT_DEPTH]!;
  const kernel = runCapture({ command: "/bin/sh", args: ["-c", 'exec "$0"', tooLong] });
  assert.match(kernel.stderr.toString(), /Too many levels of symbolic links/, "the kernel refuses one more");
  assertEveryExecRefuses(tooLong, {
    exitCode: 126,
    what: `${tooLong}: more than ${MAX_SCRIPT_DEPTH} #! scripts in a row (execve would fail with ELOOP)`,
    fix: "make a shorter chain of #! interpreters",
  });
});

withTrustedScratch(
  "a script that cannot be read is refused for root and the service: its #! interpreter cannot be checked",
  (dir) => {
    const script = writeScript(join(dir, "run.sh"), "/bin/sh", 0o711);
    // As root (DAC_OVERRIDE) it can be read; a service uid could not.
    assert.is(prepareExec({ command: script, args: [], env: {}, trustedUids: TRUSTED }).path, script);
    const asService = runCapture({
      command: "/usr/bin/setpriv",
      args: ["--reuid=65534", "--regid=65534", "--clear-groups", "--", process.execPath, "--input-type=module", "-e", `import("${join(REPO, "src/exec/replace.ts")}").then((m) => { try { m.prepareExec({ command: ${JSON.stringify(script)}, args: [], env: {}, trustedUids: [0] }); console.log("passed"); } catch (e) { console.log(e.exitCode, e.message); } })`],
    });
    assert.is(asService.stdout.toString(), `126 refusing to execute ${script}: it cannot be read to check for a #! interpreter (EACCES)\n`, asService.stderr.toString());
  },
  true,
);

withTrustedScratch("agent commands (no trusted owners) are not held to the rule: the agent may run anything as itself", (dir) => {
  const open = join(dir, "open");
  mkdirSync(open);
  chmodSync(open, 0o777);
  const tool = writeProgram(join(open, "tool"));
  const script = writeScript(join(dir, "run.sh"), tool);
  assert.is(prepareExec({ command: script, args: [], env: {} }).path, script);
});

trust.after(() => {
  if (SCRATCH_BASE?.startsWith("/run/")) rmSync(SCRATCH_BASE, { recursive: true, force: true });
});
trust.run();

/* ------------------------------------------------------------- capture -- */

const capture = suite("runCapture and startCapture");

capture("both return the same result: stdout, stderr, status; the environment is the allowlist plus what is named", async () => {
  process.env.CAPTURE_NAMED = "named";
  process.env.CAPTURE_SECRET = "not passed";
  try {
    const request = { command: "/bin/sh", args: ["-c", 'echo "out $CAPTURE_NAMED ${CAPTURE_SECRET-absent} $PATH"; echo err >&2; exit 3'], pass: ["CAPTURE_NAMED"] };
    const sync = runCapture(request);
    const later = await startCapture(request);
    for (const result of [sync, later]) {
      assert.is(result.path, "/bin/sh");
      assert.is(result.stdout.toString(), `out named absent ${SYSTEM_PATH}\n`);
      assert.is(result.stderr.toString(), "err\n");
      assert.is(result.status, 3);
      assert.is(result.signal, null);
      assert.is(result.error, undefined);
    }
  } finally {
    delete process.env.CAPTURE_NAMED;
    delete process.env.CAPTURE_SECRET;
  }
});

capture("startCapture runs beside this process: it has started before the promise is awaited", async () => {
  const pending = startCapture({ command: "/bin/sh", args: ["-c", "sleep 0.3; echo done"] });
  const blockedUntil = Date.now() + 400;
  while (Date.now() < blockedUntil) {
    // synchronous work, as the audit's /state walk
  }
  const started = Date.now();
  const result = await pending;
  assert.is(result.stdout.toString(), "done\n");
  assert.ok(Date.now() - started < 250, "the program had already finished while this process was busy");
});

capture("startCapture: the timeout kills (ETIMEDOUT), the output limit kills (ENOBUFS), input reaches stdin", async () => {
  const slow = await startCapture({ command: "/bin/sleep", args: ["5"], timeoutMs: 100 });
  assert.is(slow.error, "ETIMEDOUT");
  assert.is(slow.signal, "SIGKILL");
  const loud = await startCapture({ command: "/usr/bin/yes", args: [], maxBytes: 4096 });
  assert.is(loud.error, "ENOBUFS");
  assert.ok(loud.stdout.length <= 4096 + 65536);
  const echoed = await startCapture({ command: "/bin/cat", args: [], input: "through stdin" });
  assert.is(echoed.stdout.toString(), "through stdin");
  const ignored = await startCapture({ command: "/bin/true", args: [], input: Buffer.alloc(1 << 20) });
  assert.is(ignored.status, 0, "a program that never reads its input does not crash the caller (EPIPE)");
});

capture("both refuse a program the exec rules refuse, before anything starts", () => {
  for (const start of [runCapture, startCapture] as const) {
    assertRefusal(() => start({ command: "no-such-program-here", args: [] }), {
      exitCode: EXIT.notFound,
      what: `no-such-program-here: not found in ${SYSTEM_PATH}`,
      fix: "install it in a system directory or give its absolute path",
    });
  }
});

capture.run();
