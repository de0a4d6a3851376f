import { suite } from "uvu";
import * as assert from "uvu/assert";
import { extraPathProblem } from "../../../src/confinement.ts";
import { type AgentExecRequest, parseAgentExecArgs } from "../../../src/agent-exec/cli.ts";
import { parseStartedFd } from "../../../src/agent-exec/run-args.ts";
import { EXIT } from "../../../src/constants.ts";
import { type Accepts, assertRefusal, catchRefusal, type Refuses } from "../../helpers/refusal.ts";

const RANGE = (option: string, min: number, max: number, got: string): string => `${option} needs a whole number from ${min} to ${max}, got ${JSON.stringify(got)}`;

/* ---------------------------------------------------- clankie-agent-exec -- */

const agent = suite("parseAgentExecArgs");
const AEX = (fix: string): string => `${fix} (see clankie-agent-exec --help)`;
const NO_CONFINEMENT = { strict: false, allowWrite: [], allowRead: [], denyConnect: [], denyBind: [], network: "all" } as const;
const RUN_DEFAULTS = { kind: "run", cwd: "/workspace", env: [], keepFds: [], oomScoreAdj: 500, confinement: NO_CONFINEMENT, privateJob: false, stageOptions: { nproc: "512" } } as const;
const SIGNAL_NAMES = ["HUP", "INT", "QUIT", "KILL", "USR1", "USR2", "TERM", "CONT", "STOP", "TSTP", "WINCH"];

const AGENT_ACCEPTS: Accepts<AgentExecRequest>[] = [
  { argv: ["--help"], want: { kind: "help" } },
  { argv: ["-h"], want: { kind: "help" } },
  { argv: ["--version"], want: { kind: "version" } },
  { argv: ["--", "ls", "-la"], want: { ...RUN_DEFAULTS, env: [], keepFds: [], command: ["ls", "-la"] } },
  { argv: ["--", "--help"], want: { ...RUN_DEFAULTS, env: [], keepFds: [], command: ["--help"] } },
  {
    argv: ["--cwd", "/workspace/p", "--env", "TOKEN", "--keep-fd", "17", "--nproc", "64", "--oom-score-adj", "-5", "--", "cmd", "--cwd=/"],
    want: { kind: "run", cwd: "/workspace/p", env: ["TOKEN"], keepFds: [17], oomScoreAdj: -5, confinement: NO_CONFINEMENT, privateJob: false, stageOptions: { nproc: "64" }, command: ["cmd", "--cwd=/"] },
  },
  {
    argv: ["--cwd=/a=b", "--env=_x1", "--env=TOKEN", "--keep-fd=17", "--keep-fd=20", "--nproc=1", "--oom-score-adj=-1000", "--", "cmd"],
    want: { kind: "run", cwd: "/a=b", env: ["_x1", "TOKEN"], keepFds: [17, 20], oomScoreAdj: -1000, confinement: NO_CONFINEMENT, privateJob: false, stageOptions: { nproc: "1" }, command: ["cmd"] },
  },
  {
    argv: ["--allow-write", "/run/worker-1", "--allow-write=/state/agent/sock", "--allow-read=/opt/x y", "--deny-connect", "8081", "--deny-bind=8080", "--deny-connect=1", "--strict-confinement", "--no-network", "--", "cmd"],
    want: {
      ...RUN_DEFAULTS,
      env: [],
      keepFds: [],
      confinement: { strict: true, allowWrite: ["/run/worker-1", "/state/agent/sock"], allowRead: ["/opt/x y"], denyConnect: [8081, 1], denyBind: [8080], network: "none" },
      command: ["cmd"],
    },
  },
  { argv: ["--allow-read", "/state/run/worker-1", "--allow-write", "/state/agent", "--allow-write", "/state/agent/cache", "--allow-write", "/run/state", "--", "x"], want: { ...RUN_DEFAULTS, env: [], keepFds: [], confinement: { ...NO_CONFINEMENT, allowWrite: ["/state/agent", "/state/agent/cache", "/run/state"], allowRead: ["/state/run/worker-1"] }, command: ["x"] } },
  { argv: ["--deny-bind", "65535", "--", "cmd"], want: { ...RUN_DEFAULTS, env: [], keepFds: [], confinement: { ...NO_CONFINEMENT, denyBind: [65535] }, command: ["cmd"] } },
  { argv: ["--no-network", "--", "cmd"], want: { ...RUN_DEFAULTS, env: [], keepFds: [], confinement: { ...NO_CONFINEMENT, network: "none" }, command: ["cmd"] } },
  {
    argv: ["--keep-fd", "3", "--keep-fd", "1048575", "--nproc", "1048576", "--oom-score-adj", "1000", "--", "cmd"],
    want: { ...RUN_DEFAULTS, env: [], keepFds: [3, 1048575], oomScoreAdj: 1000, stageOptions: { nproc: "1048576" }, command: ["cmd"] },
  },
  { argv: ["--nproc=8", "--nproc=9", "--", "cmd"], want: { ...RUN_DEFAULTS, env: [], keepFds: [], stageOptions: { nproc: "9" }, command: ["cmd"] } },
  { argv: ["--private-job", "--", "cmd"], want: { ...RUN_DEFAULTS, env: [], keepFds: [], privateJob: true, command: ["cmd"] } },
  { argv: ["--private-cleanup", "4242"], want: { kind: "private-cleanup", pid: 4242 } },
  { argv: ["--private-cleanup=2"], want: { kind: "private-cleanup", pid: 2 } },
  { argv: ["--signal", "TERM", "--pgid", "4242"], want: { kind: "signal", signal: "SIGTERM", pgid: 4242 } },
  { argv: ["--signal", "SIGKILL", "--pgid=2"], want: { kind: "signal", signal: "SIGKILL", pgid: 2 } },
  // after the first argument both spellings are taken, and the last one wins
  { argv: ["--signal", "HUP", "--signal=INT", "--pgid=1073741823"], want: { kind: "signal", signal: "SIGINT", pgid: 1073741823 } },
  ...SIGNAL_NAMES.flatMap((name) => [
    { argv: ["--signal", name, "--pgid", "9"], want: { kind: "signal", signal: `SIG${name}`, pgid: 9 } } as Accepts<AgentExecRequest>,
    { argv: ["--signal", `SIG${name}`, "--pgid=9"], want: { kind: "signal", signal: `SIG${name}`, pgid: 9 } } as Accepts<AgentExecRequest>,
  ]),
];

for (const { argv, want } of AGENT_ACCEPTS) {
  agent(`accepts ${JSON.stringify(argv)}`, () => {
    assert.equal(parseAgentExecArgs(argv), want);
  });
}

const USAGE_AFTER = AEX("put the command after --: clankie-agent-exec [OPTIONS] -- COMMAND [ARG...]");
const NO_COMMAND = AEX("put the command after --: clankie-agent-exec -- COMMAND [ARG...]");
const ENV_FIX = AEX("give the NAME only: its value is taken from the shim's environment, never from argv");
const SIGNAL_WHAT = (got: string): string => `--signal needs one of ${SIGNAL_NAMES.join(", ")}, got ${JSON.stringify(got)}`;
const SIGNAL_USE = AEX("use --signal SIGNAL --pgid PGID");

const AGENT_REFUSES: Refuses[] = [
  { argv: [], what: "missing -- before the command", fix: USAGE_AFTER },
  { argv: ["--nproc", "5"], what: "missing -- before the command", fix: USAGE_AFTER },
  { argv: ["ls", "-la"], what: 'missing -- before the command "ls"', fix: USAGE_AFTER },
  { argv: ["--cwd=/w", "ls", "--", "x"], what: 'missing -- before the command "ls"', fix: USAGE_AFTER },
  { argv: ["--verbose", "--", "x"], what: 'unknown option "--verbose"', fix: USAGE_AFTER },
  { argv: ["--bogus=1", "--", "x"], what: 'unknown option "--bogus"', fix: USAGE_AFTER },
  { argv: ["-v", "--", "x"], what: 'unknown option "-v"', fix: USAGE_AFTER },
  { argv: ["-e=X", "--", "x"], what: 'unknown option "-e=X"', fix: USAGE_AFTER },
  { argv: ["--"], what: "no command given", fix: NO_COMMAND },
  { argv: ["--", ""], what: "no command given", fix: NO_COMMAND },
  { argv: ["--cwd", "work", "--", "x"], what: '--cwd needs an absolute directory, got "work"', fix: AEX("give an absolute path") },
  { argv: ["--cwd=", "--", "x"], what: '--cwd needs an absolute directory, got ""', fix: AEX("give an absolute path") },
  { argv: ["--cwd"], what: '--cwd needs an absolute directory, got ""', fix: AEX("give an absolute path") },
  { argv: ["--cwd", "--", "x"], what: '--cwd needs an absolute directory, got "--"', fix: AEX("give an absolute path") },
  { argv: ["--env", "1A", "--", "x"], what: '--env needs a variable name, got "1A"', fix: ENV_FIX },
  { argv: ["--env", "A-B", "--", "x"], what: '--env needs a variable name, got "A-B"', fix: ENV_FIX },
  { argv: ["--env=TOKEN=secret", "--", "x"], what: '--env needs a variable name, got "TOKEN=secret"', fix: ENV_FIX },
  { argv: ["--env=", "--", "x"], what: '--env needs a variable name, got ""', fix: ENV_FIX },
  { argv: ["--env"], what: '--env needs a variable name, got ""', fix: ENV_FIX },
  { argv: ["--keep-fd", "2", "--", "x"], what: RANGE("--keep-fd", 3, 1048575, "2"), fix: AEX("give --keep-fd a number in range") },
  { argv: ["--keep-fd=1048576", "--", "x"], what: RANGE("--keep-fd", 3, 1048575, "1048576"), fix: AEX("give --keep-fd a number in range") },
  { argv: ["--keep-fd=x", "--", "x"], what: RANGE("--keep-fd", 3, 1048575, "x"), fix: AEX("give --keep-fd a number in range") },
  { argv: ["--nproc", "0", "--", "x"], what: RANGE("--nproc", 1, 1048576, "0"), fix: AEX("give --nproc a number in range") },
  { argv: ["--nproc=1048577", "--", "x"], what: RANGE("--nproc", 1, 1048576, "1048577"), fix: AEX("give --nproc a number in range") },
  { argv: ["--nproc=12345678901", "--", "x"], what: RANGE("--nproc", 1, 1048576, "12345678901"), fix: AEX("give --nproc a number in range") },
  { argv: ["--oom-score-adj", "-1001", "--", "x"], what: RANGE("--oom-score-adj", -1000, 1000, "-1001"), fix: AEX("give --oom-score-adj a number in range") },
  { argv: ["--oom-score-adj=1001", "--", "x"], what: RANGE("--oom-score-adj", -1000, 1000, "1001"), fix: AEX("give --oom-score-adj a number in range") },
  { argv: ["--oom-score-adj=+5", "--", "x"], what: RANGE("--oom-score-adj", -1000, 1000, "+5"), fix: AEX("give --oom-score-adj a number in range") },
  { argv: ["--signal", "TERMX", "--pgid", "5"], what: SIGNAL_WHAT("TERMX"), fix: AEX("name the signal") },
  { argv: ["--signal", "term", "--pgid", "5"], what: SIGNAL_WHAT("term"), fix: AEX("name the signal") },
  { argv: ["--signal", "SIGSEGV", "--pgid", "5"], what: SIGNAL_WHAT("SIGSEGV"), fix: AEX("name the signal") },
  { argv: ["--signal", "9", "--pgid", "5"], what: SIGNAL_WHAT("9"), fix: AEX("name the signal") },
  { argv: ["--signal", "SIG", "--pgid", "5"], what: SIGNAL_WHAT("SIG"), fix: AEX("name the signal") },
  { argv: ["--signal", "TERM", "--signal=", "--pgid=5"], what: SIGNAL_WHAT(""), fix: AEX("name the signal") },
  { argv: ["--signal"], what: SIGNAL_WHAT(""), fix: AEX("name the signal") },
  { argv: ["--signal", "TERM", "--pgid", "1"], what: RANGE("--pgid", 2, 1073741823, "1"), fix: AEX("give --pgid a number in range") },
  { argv: ["--signal", "TERM", "--pgid", "-5"], what: RANGE("--pgid", 2, 1073741823, "-5"), fix: AEX("give --pgid a number in range") },
  { argv: ["--signal", "TERM", "--pgid=1073741824"], what: RANGE("--pgid", 2, 1073741823, "1073741824"), fix: AEX("give --pgid a number in range") },
  { argv: ["--signal", "TERM"], what: "--signal needs --pgid", fix: SIGNAL_USE },
  { argv: ["--signal", "TERM", "--pgid", "5", "--cwd", "/"], what: 'unknown option "--cwd" with --signal', fix: SIGNAL_USE },
  { argv: ["--signal", "TERM", "--pgid", "5", "--", "x"], what: 'unknown option "--" with --signal', fix: SIGNAL_USE },
  { argv: ["--private-cleanup", "4242", "--", "x"], what: "--private-cleanup takes no other option", fix: AEX("use --private-cleanup PID") },
  { argv: ["--private-cleanup=4242", "--signal", "TERM"], what: "--private-cleanup takes no other option", fix: AEX("use --private-cleanup PID") },
  ...["work", "/", "/state", "/workspace/", "/a//b", "/a/./b", "/a/../state", "/.."].map((path) => ({
    argv: ["--allow-write", path, "--", "x"],
    what: `--allow-write ${JSON.stringify(path)} ${extraPathProblem(path)}`,
    fix: AEX("give --allow-write an absolute, normal path below /"),
  })),
  // A tree the agent may write under /state, but its home: every start walks it (issue 34, item 4). Written out, not read from the rule.
  ...["/state/run/worker-1", "/state/install", "/state/agentx", "/state/x/agent"].map((path) => ({
    argv: ["--allow-write", path, "--", "x"],
    what: `--allow-write ${JSON.stringify(path)} is under /state, which every start walks: agent work that may write there can stop the next start (a hard link, a deep tree)`,
    fix: AEX("give the agent a directory outside /state (under /workspace, say), or under /state/agent"),
  })),
  { argv: ["--allow-read", "/state", "--", "x"], what: '--allow-read "/state" would open all of /state', fix: AEX("give --allow-read an absolute, normal path below /") },
  { argv: ["--allow-read"], what: '--allow-read "" is missing', fix: AEX("give --allow-read an absolute, normal path below /") },
  { argv: ["--deny-connect", "0", "--", "x"], what: RANGE("--deny-connect", 1, 65535, "0"), fix: AEX("give --deny-connect a number in range") },
  { argv: ["--deny-bind=65536", "--", "x"], what: RANGE("--deny-bind", 1, 65535, "65536"), fix: AEX("give --deny-bind a number in range") },
  { argv: ["--strict-confinement=1", "--", "x"], what: "--strict-confinement takes no value", fix: AEX("write --strict-confinement alone") },
  { argv: ["--no-network=1", "--", "x"], what: "--no-network takes no value", fix: AEX("write --no-network alone") },
  { argv: ["--network", "none", "--", "x"], what: 'unknown option "--network"', fix: USAGE_AFTER },
  { argv: ["--verify-agent", "--uid=1001", "--gid=1001", "--groups=1001", "--cwd=/", "--", "x"], what: 'unknown option "--verify-agent"', fix: USAGE_AFTER },
];

for (const { argv, what, fix } of AGENT_REFUSES) {
  agent(`refuses ${JSON.stringify(argv)}`, () => {
    assertRefusal(() => parseAgentExecArgs(argv), { exitCode: 64, what, fix });
  });
}

agent("CLANKIE_STARTED_FD: unset is no marker; a number from 3 is the marker's fd; anything else, or an fd also kept for the command, is refused (64)", () => {
  assert.is(parseStartedFd(undefined, []), undefined);
  assert.is(parseStartedFd("17", [18]), 17);
  for (const value of ["2", "", "x", "1048576"]) {
    assertRefusal(() => parseStartedFd(value, []), { exitCode: 64, what: RANGE("CLANKIE_STARTED_FD", 3, 1048575, value), fix: AEX("give CLANKIE_STARTED_FD a number in range") });
  }
  assertRefusal(() => parseStartedFd("17", [17]), { exitCode: 64, what: "CLANKIE_STARTED_FD=17 is also a --keep-fd", fix: AEX("give the started marker an fd of its own, not one handed to the command") });
});

agent("--signal=NAME is accepted as the first argument", () => {
  assert.equal(parseAgentExecArgs(["--signal=TERM", "--pgid=5"]), { kind: "signal", signal: "SIGTERM", pgid: 5 });
});

agent("a code-loading variable cannot be named with --env (it would reach prlimit and setpriv, which hold SETUID)", () => {
  for (const name of ["LD_PRELOAD", "LD_AUDIT", "NODE_OPTIONS", "GCONV_PATH", "BASH_ENV"]) {
    const refusal = catchRefusal(() => parseAgentExecArgs(["--env", name, "--", "true"]));
    assert.is(refusal.exitCode, EXIT.usage, name);
    assert.is(refusal.message, `--env ${name}: variables that load code are never passed`);
  }
});

agent.run();
