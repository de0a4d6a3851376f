import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { NO_EXTRA_CONFINEMENT } from "../../src/confinement.ts";
import { parseAgentExecArgs } from "../../src/agent-exec/cli.ts";
import { ENTRYPOINT_NAME, EXIT, INSTALL_DIR, SYSTEM_PATH } from "../../src/constants.ts";
import { carried, isAllowlisted, uncarried } from "../../src/exec/environment.ts";
import { agentExecArguments, buildEnvironment, runSelfCheck, spawnAgent, systemExec } from "../../src/system-exec.ts";
import { withProcessEnv } from "../helpers/process-env.ts";
import { assertRefusal, catchRefusal } from "../helpers/refusal.ts";

const shim = suite("agentExecArguments");

shim("no options: only the command after --", () => {
  withProcessEnv({ TERM: undefined, SECRET_FOR_TEST: "s" }, () => {
    const { argv, env } = agentExecArguments("ls", ["-la", "--", "x"]);
    assert.equal(argv, ["--", "ls", "-la", "--", "x"]);
    assert.equal(env, carried(buildEnvironment({ from: process.env })));
    assert.is(env.CLANKIE_ENV_SECRET_FOR_TEST, undefined);
  });
});

shim("every option, in a fixed order; variables by name in argv, by value in the environment, carried (CLANKIE_ENV_NAME)", () => {
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
    assert.equal(env, { CLANKIE_ENV_TERM: "xterm-test", CLANKIE_ENV_LC_ALL: "C", CLANKIE_ENV_TOKEN: "agent-token", CLANKIE_ENV_ZED: "z", CLANKIE_ENV_PATH: SYSTEM_PATH });
    assert.equal(uncarried(env), { TERM: "xterm-test", LC_ALL: "C", TOKEN: "agent-token", ZED: "z", PATH: SYSTEM_PATH });
    assert.not.ok(argv.some((arg) => arg.includes("agent-token")), "a value never appears in argv");
  });
});

shim("what the service sends is what the shim parses", () => {
  const { argv } = agentExecArguments("node", ["--cwd=/", "--"], { cwd: "/workspace/p", env: { B: "1", A: "2" }, keepFds: [17], nproc: 5, oomScoreAdj: -1000 });
  assert.equal(parseAgentExecArgs(argv), { kind: "run", cwd: "/workspace/p", env: ["A", "B"], keepFds: [17], oomScoreAdj: -1000, confinement: NO_EXTRA_CONFINEMENT, privateJob: false, stageOptions: { nproc: "5" }, command: ["node", "--cwd=/", "--"] });
  assert.equal(parseAgentExecArgs(agentExecArguments("true", []).argv), { kind: "run", cwd: "/workspace", env: [], keepFds: [], oomScoreAdj: 500, confinement: NO_EXTRA_CONFINEMENT, privateJob: false, stageOptions: { nproc: "512" }, command: ["true"] });
  const confinement = { strict: true, allowWrite: ["/run/w1", "/state/agent/w2"], allowRead: ["/opt/r"], denyConnect: [8081], denyBind: [8080, 8081], network: "none" as const };
  const confined = agentExecArguments("true", [], { allowWrite: confinement.allowWrite, allowRead: confinement.allowRead, denyConnect: confinement.denyConnect, denyBind: confinement.denyBind, strictConfinement: true, network: "none" });
  assert.equal(parseAgentExecArgs(confined.argv), { kind: "run", cwd: "/workspace", env: [], keepFds: [], oomScoreAdj: 500, confinement, privateJob: false, stageOptions: { nproc: "512" }, command: ["true"] });
  assert.equal(agentExecArguments("true", [], { privateJob: true }).argv, ["--private-job", "--", "true"]);
  assert.is((parseAgentExecArgs(agentExecArguments("true", [], { privateJob: true }).argv) as { privateJob: boolean }).privateJob, true);
});

shim("allowWrite under /state outside /state/agent is refused at once (64), as the shim refuses it; README's old example among them", () => {
  for (const path of ["/state/run/worker-1", "/state/install/x", "/state/agentx"]) {
    assertRefusal(() => agentExecArguments("true", [], { allowWrite: ["/run/ok", path] }), {
      exitCode: EXIT.usage,
      what: `allowWrite ${JSON.stringify(path)} is under /state, which every start walks: agent work that may write there can stop the next start (a hard link, a deep tree)`,
      fix: "give the agent a directory outside /state (under /workspace, say), or under /state/agent",
    });
  }
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
  assert.is(env.CLANKIE_ENV_PATH, SYSTEM_PATH);
});

shim("the shim's own environment names nothing Node or glibc reads: every variable is carried, whatever its name", () => {
  const { env } = agentExecArguments("x", [], { env: { NODE_V8_COVERAGE: "/workspace/l", NODE_ICU_DATA: "/workspace/icu", LANGUAGE: "../../workspace/evil", LOCPATH: "/workspace/loc" } });
  assert.equal(Object.keys(env).filter((name) => !name.startsWith("CLANKIE_ENV_")), []);
  assert.is(uncarried(env).NODE_V8_COVERAGE, "/workspace/l");
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

shim("without a spawner (today's single-uid launch), spawnAgent ends refused (77, one line, nothing ran); kill() refuses a signal the spawner cannot deliver", async () => {
  const child = spawnAgent("/bin/sleep", ["5"], { reject: false });
  assertRefusal(() => child.kill("SIGABRT"), { exitCode: EXIT.usage, what: `kill() "SIGABRT": the shim delivers only ${SIGNALS_LIST} to agent work`, fix: SIGNALS_FIX });
  const result = await child;
  assert.is(result.exitCode, EXIT.launchRefused);
  assert.is(result.started, false);
  assert.is(result.refused, true);
  assert.match(result.refusal!.line!, /^clankie-agent-exec: no spawner: this body runs single-uid/);
  assert.is(child.kill(0), false);
  assert.is(child.kill(), false, "nothing is sent once the job has ended");
});

shim("systemExec, runSelfCheck and spawnAgent refuse execa's node, nodePath and nodeOptions (64) before anything starts: never passed", () => {
  const asAny = (o: object) => o as never;
  for (const [where, call] of [["systemExec", (o: object) => systemExec("/bin/true", [], asAny(o))], ["runSelfCheck", (o: object) => runSelfCheck([], asAny(o))], ["spawnAgent", (o: object) => spawnAgent("/bin/true", [], asAny(o))]] as const) {
    for (const name of ["node", "nodePath", "nodeOptions"]) {
      assertRefusal(() => call({ [name]: name === "node" ? true : name === "nodePath" ? "/workspace/planted" : ["--require", "/workspace/x.js"] }), { exitCode: EXIT.usage, what: `${where}: the ${name} option is not accepted: this package starts only the program it names, as it names it`, fix: `remove ${name}` });
    }
  }
});

shim("spawnAgent refuses the shim option (64) before anything starts: every spawn goes through the spawner, no program named by the service", () => {
  assertRefusal(() => spawnAgent("/bin/true", [], { shim: "/workspace/planted" }), { exitCode: EXIT.usage, what: "spawnAgent: the shim option is gone: every spawn goes through the spawner", fix: "remove shim" });
});

shim("systemExec, runSelfCheck and spawnAgent refuse execa's uid and gid options (64) before anything starts", () => {
  const fix = (name: string) => `remove ${name}; agent work runs as the agent through spawnAgent`;
  const what = (where: string, name: string) => `${where}: the ${name} option is not accepted: this package sets no child's ${name === "uid" ? "user" : "group"} from execa's options`;
  const asAny = (o: object) => o as never;
  assertRefusal(() => systemExec("/bin/true", [], asAny({ uid: 0 })), { exitCode: EXIT.usage, what: what("systemExec", "uid"), fix: fix("uid") });
  assertRefusal(() => systemExec("/bin/true", [], asAny({ gid: 0 })), { exitCode: EXIT.usage, what: what("systemExec", "gid"), fix: fix("gid") });
  assertRefusal(() => runSelfCheck([], asAny({ uid: 0 })), { exitCode: EXIT.usage, what: what("runSelfCheck", "uid"), fix: fix("uid") });
  assertRefusal(() => spawnAgent("/bin/true", [], asAny({ shim: "/usr/bin/env", gid: 0 })), { exitCode: EXIT.usage, what: what("spawnAgent", "gid"), fix: fix("gid") });
});

shim("a code-loading variable cannot be named for the agent (it would reach prlimit and setpriv, which hold SETUID)", () => {
  assertRefusal(() => agentExecArguments("true", [], { env: { LD_PRELOAD: "/x.so" } }), { exitCode: EXIT.usage, what: "LD_PRELOAD: variables that load code are never passed to agent work", fix: "do not pass it" });
});

shim("systemExec and runSelfCheck refuse a code-loading name in env, as in pass (64), before anything starts; control: the same call with another name runs", async () => {
  // ld.so reads LD_PRELOAD in setpriv (systemExec's first program) and in the audit (runSelfCheck's): a library the agent planted would run as node (under ADR 0272's shape, with the service's SETUID and SETGID).
  const dir = mkdtempSync(join(tmpdir(), "clankie-env-"));
  try {
    const marker = join(dir, "ran");
    const script = `echo "$TOKEN" > ${marker}`;
    const cases: [string, { env: Record<string, string>; pass?: string[] }][] = [
      ["LD_PRELOAD", { env: { TOKEN: "t", LD_PRELOAD: "/x.so" } }],
      ["GCONV_PATH", { env: { TOKEN: "t", GCONV_PATH: "/x" } }],
      ["LD_AUDIT", { env: { TOKEN: "t" }, pass: ["LD_AUDIT"] }],
    ];
    for (const [name, options] of cases) {
      const want = { exitCode: EXIT.usage, what: `${name}: variables that load code are never passed to a child`, fix: "do not pass it" };
      assertRefusal(() => systemExec("/bin/sh", ["-c", script], options), want);
      assertRefusal(() => runSelfCheck(["--json"], options), want);
    }
    assert.not.ok(existsSync(marker), "nothing started");
    const control = await systemExec("/bin/sh", ["-c", script], { env: { TOKEN: "t" } });
    assert.is(control.exitCode, 0);
    assert.is(readFileSync(marker, "utf8"), "t\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

shim("systemExec refuses a program the exec rules refuse (126) before anything starts; control: a shell of the system runs it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "clankie-gate-"));
  try {
    // A script in a directory others may write (the temporary directory): what runs would be anyone's, as node, with the service's access to /state.
    const marker = join(dir, "ran");
    const program = join(dir, "program");
    writeFileSync(program, `#!/bin/sh\necho ran > ${marker}\n`);
    chmodSync(program, 0o755);
    const refusal = catchRefusal(() => systemExec(program, []));
    assert.is(refusal.exitCode, EXIT.notExecutable);
    assert.match(refusal.message, new RegExp(`^refusing to execute ${program}: .* is writable by group or other \\(mode 1?777\\)$`));
    assert.not.ok(existsSync(marker), "nothing started");
    // The control: the same command run by a shell of the system runs.
    const result = await systemExec("/bin/sh", [program]);
    assert.is(result.exitCode, 0);
    assert.is(readFileSync(marker, "utf8"), "ran\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

shim("runSelfCheck refuses an entrypoint that is missing or that others could write (126/127) before anything starts", () => {
  const entrypoint = `${INSTALL_DIR}/${ENTRYPOINT_NAME}`;
  // Outside the image the entrypoint is not installed: the gate finds nothing to run (an image runs its own audit test, test/image).
  assert.not.ok(existsSync(entrypoint), `${entrypoint} is installed here: this test needs a host without it`);
  assertRefusal(() => runSelfCheck(["--json"]), { exitCode: EXIT.notFound, what: `${entrypoint}: no such file`, fix: "check the command's path" });
});

shim.run();
