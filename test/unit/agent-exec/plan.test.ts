import { test } from "uvu";
import * as assert from "uvu/assert";
import { AGENT_HOME, SYSTEM_PATH } from "../../../src/constants.ts";
import { stageProgram } from "../../../src/stage/stage.ts";
import { agentEnvironment, type AgentExecChain } from "../../../src/agent-exec/plan.ts";
import { agentChainArgv } from "../../../src/agent-exec/setpriv-chain.ts";
import { agentGroups, agentIds } from "../../../src/accounts.ts";
import { TERMINAL_ENV } from "../../helpers/environments.ts";
import { imageIdentities } from "../../helpers/identities.ts";
import { confinementKeys, NO_EXTRA_CONFINEMENT } from "../../../src/confinement.ts";
import { privateImageTree } from "../../../src/agent-exec/private-job.ts";
import { signalPlan } from "../../../src/agent-exec/run.ts";

const identities = imageIdentities();
const ids = agentIds(identities);
const perl = (role: "agent" | "signal" | "cleanup") => ["/usr/bin/perl", "-T", "-C0", "-e", stageProgram([role]), "--", "clankie-agent-exec"];
const PERL = perl("agent");
const AGENT = ["uid=1001", "gid=1001", "groups=1001,1002", "inh=0", "prm=0", "eff=0", "amb=0", "nnp=1"];
/** The confinement keys for the image's top level as this machine has it (the stage skips what is missing). */
const CONFINED = confinementKeys(NO_EXTRA_CONFINEMENT);

const PREFIX = [
  "/usr/bin/setpriv",
  "--reuid=1001",
  "--regid=1001",
  "--groups=1001,1002",
  "--inh-caps=-all",
  "--ambient-caps=-all",
  "--",
];

const RUN: AgentExecChain = { needSetsid: true, stageOptions: { nproc: "512" }, cwd: "/workspace/project", keepFds: [], confinement: NO_EXTRA_CONFINEMENT, action: { path: "/usr/bin/git", argv: ["git", "status"] } };

/** The end of every chain of RUN: umask, working directory, confinement, then git status. */
const TAIL = ["umask=0002", "cwd=/workspace/project", ...CONFINED, "private=", "started=", "--", "/usr/bin/git", "git", "status"];

test("agentGroups: the agent's own group and clankie-workspace, nothing else", () => {
  assert.equal(agentGroups(identities), [1001, 1002]);
  const sameGid = { ...identities, workspaceGroup: { ...identities.workspaceGroup, gid: 1001 } };
  assert.equal(agentGroups(sameGid), [1001]);
  const lower = { ...identities, workspaceGroup: { ...identities.workspaceGroup, gid: 900 } };
  assert.equal(agentGroups(lower), [900, 1001]);
});

test("the chain with a new session: setpriv, the verification stage (which sets RLIMIT_NPROC and calls setsid), the command", () => {
  assert.equal(agentChainArgv(ids, RUN), [
    ...PREFIX,
    ...PERL,
    "agent",
    ...AGENT,
    "nproc=512",
    "session=new",
    "fds=",
    ...TAIL,
  ]);
});

test("the chain without setsid (the shim already leads its own session), with kept fds", () => {
  assert.equal(agentChainArgv(ids, { ...RUN, needSetsid: false, stageOptions: { nproc: "64" }, keepFds: [17, 20] }), [
    ...PREFIX,
    ...PERL,
    "agent",
    ...AGENT,
    "nproc=64",
    "session=own",
    "fds=17,20",
    ...TAIL,
  ]);
});

test("the started marker (CLANKIE_STARTED_FD) reaches the stage as started=N, kept apart from fds=", () => {
  const argv = agentChainArgv(ids, { ...RUN, keepFds: [18], startedFd: 17 });
  assert.ok(argv.includes("fds=18"), argv.join(" "));
  assert.equal(argv.slice(argv.indexOf("private="), argv.indexOf("--", argv.indexOf("private="))), ["private=", "started=17"]);
});

test("the signal role: no nproc, no session, no umask, cwd or confinement; the stage signals the group and no command follows", () => {
  const argv = agentChainArgv(ids, { keepFds: [], action: { signal: "SIGTERM", pgid: 4242 } });
  assert.equal(argv, [...PREFIX, ...perl("signal"), "signal", ...AGENT, "fds=", "signal=TERM", "pgid=4242", "--"]);
});

test("a private job: its group joins the agent's, the stage gets private=DIR, and the domain writes only /workspace and the lease", () => {
  const lease = { group: 1103, dir: "/run/clankie-private/3", tree: privateImageTree() };
  const argv = agentChainArgv(ids, { ...RUN, lease });
  assert.ok(argv.includes("--groups=1001,1002,1103"));
  assert.ok(argv.includes("groups=1001,1002,1103"));
  assert.ok(argv.includes("private=/run/clankie-private/3"));
  const writable = argv.filter((a) => a.startsWith("path=ffff:"));
  assert.equal(writable, ["path=ffff:may:/workspace", "path=ffff:must:/run/clankie-private/3"]);
  assert.not.ok(argv.some((a) => /^path=[0-9a-f]+:may:(\/tmp|\/var\/tmp|\/dev\/shm|\/state\/agent|\/var|\/dev)$/.test(a)), "nothing other jobs write is readable, and /var and /dev only child by child");
});

test("agentEnvironment of a private job: HOME, TMPDIR and TMUX_TMPDIR in its lease, over any named one", () => {
  const env = agentEnvironment({ TMPDIR: "/tmp/planted", HOME: "/x" }, ["TMPDIR", "TMUX_TMPDIR"], { group: 1100, dir: "/run/clankie-private/0" });
  assert.is(env.HOME, "/run/clankie-private/0/home");
  assert.is(env.TMPDIR, "/run/clankie-private/0/tmp");
  assert.is(env.TMUX_TMPDIR, "/run/clankie-private/0/tmp");
});

test("arguments that look like options or stage keys reach the command untouched, after the stage's --", () => {
  const argv = agentChainArgv(ids, { ...RUN, action: { path: "/bin/sh", argv: ["sh", "-c", "echo uid=0", "--", "nnp=0"] } });
  assert.equal(argv.slice(-7), ["--", "/bin/sh", "sh", "-c", "echo uid=0", "--", "nnp=0"]);
  assert.is(argv.filter((a) => a === "uid=1001").length, 1);
});

test("no capability is kept: setpriv clears the inheritable and ambient sets and sets no bounding set", () => {
  const argv = agentChainArgv(ids, RUN);
  const setpriv = argv.slice(argv.indexOf("/usr/bin/setpriv"), argv.indexOf("--", argv.indexOf("/usr/bin/setpriv")));
  assert.equal(setpriv.filter((a) => a.includes("caps") || a.includes("bounding")), ["--inh-caps=-all", "--ambient-caps=-all"]);
  assert.not.ok(argv.some((a) => a !== stageProgram(["agent"]) && !a.startsWith("path=") && a.includes("+")), "no capability is raised anywhere (a path such as /lost+found may hold one)");
});

test("agentEnvironment: the allowlist and the named variables, then the agent's HOME, USER, LOGNAME and the fixed PATH", () => {
  const shimEnv = {
    ...TERMINAL_ENV,
    PATH: "/workspace/bin:/usr/bin",
    HOME: "/home/node",
    USER: "node",
    LOGNAME: "node",
    CLANKIE_AGENT_UID: "1001",
    CLANKIE_SEPARATION: "1",
    DISCORD_TOKEN: "service-secret",
    LD_PRELOAD: "/workspace/x.so",
    NODE_OPTIONS: "--require /workspace/x.js",
    GITHUB_TOKEN: "for-the-agent",
    EMPTY: "",
  };
  assert.equal(agentEnvironment(shimEnv, ["GITHUB_TOKEN", "EMPTY", "NOT_SET"]), {
    ...TERMINAL_ENV,
    GITHUB_TOKEN: "for-the-agent",
    EMPTY: "",
    HOME: "/state/agent",
    USER: "clankie-agent",
    LOGNAME: "clankie-agent",
    PATH: SYSTEM_PATH,
  });
});

test("agentEnvironment: a named HOME, USER, LOGNAME or PATH cannot override ours", () => {
  const shimEnv = { HOME: "/home/node", USER: "node", LOGNAME: "node", PATH: "/tmp" };
  assert.equal(agentEnvironment(shimEnv, ["HOME", "USER", "LOGNAME", "PATH"]), {
    HOME: AGENT_HOME,
    USER: "clankie-agent",
    LOGNAME: "clankie-agent",
    PATH: SYSTEM_PATH,
  });
});

test("agentEnvironment: nothing of the service's own environment reaches the agent unnamed", () => {
  const env = agentEnvironment({ DISCORD_TOKEN: "x", CLANKIE_AGENT_UID: "1001", SSH_AUTH_SOCK: "/tmp/s", HOSTNAME: "body" }, []);
  assert.equal(Object.keys(env).sort(), ["HOME", "LOGNAME", "PATH", "USER"]);
});

test("the signal stage writes no oom_score_adj (a launcher's raised floor would refuse 0) and runs unconfined, so it can reach every job's domain", () => {
  const { chain, oomScoreAdj } = signalPlan({ kind: "signal", signal: "SIGTERM", pgid: 4242 });
  assert.is(oomScoreAdj, undefined);
  const argv = agentChainArgv(ids, chain);
  assert.equal(argv, [...PREFIX, ...perl("signal"), "signal", ...AGENT, "fds=", "signal=TERM", "pgid=4242", "--"]);
});

test("a command runs confined: the stage gets the confinement keys after the others, before the command", () => {
  const argv = agentChainArgv(ids, { ...RUN, confinement: { ...NO_EXTRA_CONFINEMENT, strict: true } });
  const keys = confinementKeys({ ...NO_EXTRA_CONFINEMENT, strict: true });
  const at = argv.indexOf("confine=strict");
  assert.ok(at > 0);
  assert.equal(argv.slice(at, at + keys.length), keys);
  assert.equal(argv.slice(at + keys.length), ["private=", "started=", "--", "/usr/bin/git", "git", "status"]);
});

test.run();
