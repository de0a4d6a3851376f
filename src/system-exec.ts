/*
 * The package entry point the service uses (clankie-separate/system-exec):
 * its own execs (systemExec) and agent work (spawnAgent, signalAgent), on
 * execa, under the exec rules of src/exec/rules.ts. Not part of the single
 * executable, whose roles use src/exec/ directly.
 */
import type { Readable } from "node:stream";
import { execa, ExecaError, type Options as ExecaOptions, type Result, type ResultPromise, type Subprocess } from "execa";
import { AGENT_EXEC_PATH, ENTRYPOINT_NAME, EXIT, INSTALL_DIR, PROBE_AGENT_FLAG, PROBE_FD_VARIABLE, PROBE_SERVICE_PID_VARIABLE, PROBE_SOCKET_VARIABLE, SPAWNER_FD_VARIABLE, STARTED_FD_VARIABLE, TOOLS } from "./constants.ts";
import { buildEnvironment, carried, type Environment, isCodeLoadingVariable } from "./exec/environment.ts";
import { gateExec } from "./exec/rules.ts";
import { Refusal } from "./report.ts";
import { agentStopPlan, routeKillsThroughShim } from "./service/agent-stop.ts";
import { HOLDER_PROGRAM, holderArgs, showAsShim, spawnerChannel } from "./service/spawner-client.ts";
import { withoutCapabilities } from "./exec/drop-capabilities.ts";
import { WRITABLE_PATH_FIX, writablePathProblem } from "./confinement.ts";
import { type PrivateRelease, releaseWhenEnded } from "./service/private-release.ts";
import { type AgentStart, readMarker, reportStart, stdioWithMarker } from "./service/agent-start.ts";
import { isProbeSocketName } from "./probe-socket.ts";
import { startWithoutHolder } from "./service/job-process.ts";
import { syscallNumbers } from "./os/syscalls.ts";

export { buildEnvironment, type Environment } from "./exec/environment.ts";
export { AgentSignalAbortError, AgentSignalError, AgentStopError, signalAgent, type SignalAgentError, type SignalAgentOptions } from "./service/agent-stop.ts";
export { type AgentNotStarted, type AgentRefusal, type AgentRefused, type AgentStart, type AgentStarted, refusalOf } from "./service/agent-start.ts";
export { type PrivateRelease } from "./service/private-release.ts";
/** What the package throws at once (spawnAgent, systemExec, runSelfCheck) or rejects with (signalAgent) for options it refuses (exitCode 64, the one line's `message` and `fix`); the shim's own refusals are exit codes (refusalOf). */
export { Refusal } from "./report.ts";

/**
 * The exit codes of README.md's table, by name: those of clankie-agent-exec
 * (a refusal when AgentStart.refused; the command's own status otherwise),
 * clankie-separate and --self-check. 64-78 follow sysexits(3); 126 and 127
 * follow the shells.
 */
export const EXIT_CODES: Readonly<typeof EXIT> = Object.freeze({ ...EXIT });

/** What a private job's outcome adds: how its release went; none when the job held no lease (refused before it took one). */
export interface AgentRelease {
  privateRelease?: PrivateRelease | undefined;
}
/** execa's Result for these options, whether the agent's command started (AgentStart: narrow it by `refused` or `started`), and a private job's release. */
export type AgentResult<OptionsType extends ExecaOptions = ExecaOptions> = Result<OptionsType> & AgentStart & AgentRelease;
/** What spawnAgent's promise rejects with when the job failed (reject: true, execa's default): execa's error, with the same AgentStart and release as a result. A stop that was not delivered rejects with AgentStopError instead. */
export type AgentError<OptionsType extends ExecaOptions = ExecaOptions> = ExecaError<OptionsType> & AgentStart & AgentRelease;

/** Whether a rejection of spawnAgent's promise is the job's failure (AgentError), as opposed to an AgentStopError or anything else. */
export function isAgentError(error: unknown): error is AgentError {
  return error instanceof ExecaError && typeof (error as { started?: unknown }).started === "boolean";
}
/** spawnAgent's return: execa's subprocess for these options, and a promise of its AgentResult. */
export type AgentSubprocess<OptionsType extends ExecaOptions = ExecaOptions> = Subprocess<OptionsType> & Promise<AgentResult<OptionsType>>;

export interface SystemExecOptions extends Omit<ExecaOptions, "env" | "extendEnv" | "shell" | "preferLocal" | "localDir" | "node" | "uid" | "gid"> {
  /** Variables set outright for the child; a name that loads code (CODE_LOADING_VARIABLES) is refused (64). */
  env?: Environment;
  /** Names copied from this process's environment, beyond the allowlist; likewise. */
  pass?: readonly string[];
  /** Owners allowed for the program file; default root and this process's uid. */
  trustedUids?: readonly number[];
}

/**
 * Refuses execa's uid and gid options: Node would setuid(2) the child before
 * the exec. The service holds no CAP_SETUID, so it would fail; refused so
 * that no child of this package runs as another uid by any route, whoever
 * calls it (ADR 0272's service, which held the capability, got any uid).
 */
function refuseIdentityOptions(options: object, where: string): void {
  for (const name of ["uid", "gid"]) {
    if (Object.hasOwn(options, name)) {
      throw new Refusal(EXIT.usage, `${where}: the ${name} option is not accepted: this package sets no child's ${name === "uid" ? "user" : "group"} from execa's options`, `remove ${name}; agent work runs as the agent through spawnAgent`);
    }
  }
}

/**
 * execa's options that start a program other than the one named, or run it
 * otherwise than this package does: refused (64), never passed. `node`,
 * `nodePath` and `nodeOptions` made execa start a planted program in the
 * service's place (with its capabilities, when it held them); the others
 * are a shell, a search path or a different environment than the allowlist.
 */
const UNSUPPORTED_OPTIONS = ["node", "nodePath", "nodeOptions", "shell", "preferLocal", "localDir", "extendEnv", "argv0", "windowsVerbatimArguments", "windowsHide"] as const;

function refuseUnsupportedOptions(options: object, where: string): void {
  for (const name of UNSUPPORTED_OPTIONS) {
    if (Object.hasOwn(options, name)) throw new Refusal(EXIT.usage, `${where}: the ${name} option is not accepted: this package starts only the program it names, as it names it`, `remove ${name}`);
  }
}

/**
 * Runs a program for the service: fixed PATH, resolved and ownership-checked
 * command, environment from the allowlist plus what is named, no shell, and
 * no capability: it starts through `setpriv --inh-caps=-all
 * --ambient-caps=-all` (src/exec/drop-capabilities.ts), which execs it in
 * place, so its pid, exit status and signals are its own. execa's
 * `command` and error messages show that setpriv line.
 */
export function systemExec<OptionsType extends SystemExecOptions = {}>(command: string, args: readonly string[] = [], options: OptionsType = {} as OptionsType): ResultPromise<OptionsType> {
  refuseIdentityOptions(options, "systemExec");
  refuseUnsupportedOptions(options, "systemExec");
  const { env, pass, trustedUids, ...rest } = options as SystemExecOptions;
  // The environment first: a name that loads code (env or pass) is refused
  // (64) before anything starts (src/exec/environment.ts).
  const childEnv = buildEnvironment({ from: process.env, pass, set: env });
  const path = gateExec({ command, args, trustedUids: trustedUids ?? [...new Set([0, process.geteuid!()])] });
  gateExec({ command: TOOLS.setpriv, args: [], trustedUids: [0] });
  const start = withoutCapabilities(path, args);
  return execa(start.file, start.args, { ...rest, env: childEnv, extendEnv: false, shell: false, preferLocal: false }) as unknown as ResultPromise<OptionsType>;
}

export type SelfCheckOptions = Omit<SystemExecOptions, "trustedUids">;

/** How long the probe may run before runSelfCheck's relay reports it timed out. */
const PROBE_TIMEOUT_MS = 30_000;

/**
 * Runs the installed audit, `clankie-separate --self-check ARGS...`, as
 * doctor does, with no capability (the service holds none). With --probe
 * in a separated body, the audit cannot start the probe itself: it asks on
 * one more pipe (at fd 17 or the first after the given stdio, named by
 * CLANKIE_PROBE_FD), and this process starts exactly the probe,
 * `clankie-separate --probe-agent`, through spawnAgent with the two values
 * the audit named, and answers how it ended. The program is the root-owned
 * entrypoint of this package (the trust rule with root alone).
 */
export function runSelfCheck<OptionsType extends SelfCheckOptions = {}>(args: readonly string[] = [], options: OptionsType = {} as OptionsType): ResultPromise<OptionsType> {
  refuseIdentityOptions(options, "runSelfCheck");
  refuseUnsupportedOptions(options, "runSelfCheck");
  const { env, pass, ...rest } = options as SelfCheckOptions;
  const childEnv = buildEnvironment({ from: process.env, pass, set: env });
  const path = gateExec({ command: `${INSTALL_DIR}/${ENTRYPOINT_NAME}`, args, trustedUids: [0] });
  if (!args.includes("--probe") || process.env[SPAWNER_FD_VARIABLE] === undefined) {
    return execa(path, ["--self-check", ...args], { ...rest, env: childEnv, extendEnv: false, shell: false, preferLocal: false }) as unknown as ResultPromise<OptionsType>;
  }
  const { stdio, fd } = stdioWithMarker(rest as Parameters<typeof stdioWithMarker>[0]);
  const execaOptions: Record<string, unknown> = { ...rest };
  for (const name of ["stdin", "stdout", "stderr"]) delete execaOptions[name];
  const audit = execa(path, ["--self-check", ...args], { ...execaOptions, stdio, env: { ...childEnv, [PROBE_FD_VARIABLE]: String(fd) }, extendEnv: false, shell: false, preferLocal: false } as unknown as ExecaOptions);
  const relay = audit.stdio[fd] as unknown as (Readable & { write(text: string): boolean; end(text?: string): void }) | undefined;
  let asked = "";
  relay?.on("data", (chunk: Buffer | string) => {
    asked += String(chunk);
    if (!asked.includes("\n")) return;
    relay.removeAllListeners("data");
    void startProbe(asked).then((answer) => relay.end(`${JSON.stringify(answer)}\n`));
  });
  return audit as unknown as ResultPromise<OptionsType>;
}

/** The probe the audit asked for: only `clankie-separate --probe-agent`, with the service's pid and the audit's socket name, as the agent. */
async function startProbe(request: string): Promise<{ status: number | null; signal: string | null; stdout: string; stderr: string; error?: string }> {
  let asked: { servicePid?: unknown; socket?: unknown };
  try {
    asked = JSON.parse(request) as typeof asked;
  } catch {
    return { status: null, signal: null, stdout: "", stderr: "", error: "the audit's request is unreadable" };
  }
  const set: Record<string, string> = { [PROBE_SERVICE_PID_VARIABLE]: String(process.pid) };
  if (isProbeSocketName(asked.socket)) set[PROBE_SOCKET_VARIABLE] = asked.socket;
  const ran = await spawnAgent(`${INSTALL_DIR}/${ENTRYPOINT_NAME}`, [PROBE_AGENT_FLAG], { env: set, reject: false, timeout: PROBE_TIMEOUT_MS, stdin: "ignore" });
  return { status: ran.exitCode ?? null, signal: ran.signal ?? null, stdout: String(ran.stdout ?? ""), stderr: String(ran.stderr ?? ""), ...(ran.timedOut ? { error: "ETIMEDOUT" } : {}) };
}

export interface SpawnAgentOptions extends Omit<SystemExecOptions, "cwd" | "detached" | "trustedUids" | "pass" | "killSignal"> {
  /** Working directory of the agent command (default /workspace). */
  cwd?: string;
  /** Variables for the agent, by value: they reach the shim through its environment, never argv. */
  env?: Environment;
  /** Extra fds to hand to the agent, each at its index of `stdio`: 17 or higher, with 16 left unused (the shim's Node marks fds 0-15 close-on-exec at start-up, and every open fd after them up to the first that is not open); the started marker takes the first fd after them. */
  keepFds?: readonly number[];
  /** RLIMIT_NPROC for the agent uid. */
  nproc?: number;
  /** oom_score_adj for agent work. */
  oomScoreAdj?: number;
  /** More trees the agent may write below (absolute, no symbolic links), beyond /workspace, /tmp, /var/tmp, /dev/shm and /state/agent: outside /state, or under /state/agent (a path elsewhere under /state is refused at once, 64: every start walks it, and agent work there could stop it). */
  allowWrite?: readonly string[];
  /** More trees the agent may read and execute, beyond the image and /state/install. */
  allowRead?: readonly string[];
  /** TCP ports the agent may not connect to (Landlock ABI 4; about 50 ms more per spawn). */
  denyConnect?: readonly number[];
  /** TCP ports the agent may not bind (Landlock ABI 4; likewise). */
  denyBind?: readonly number[];
  /** Refuse the spawn (exit 77) unless the kernel applies the whole Landlock domain (ABI 6+) and seccomp filter. */
  strictConfinement?: boolean;
  /** "none": no socket but unix sockets (no IPv4, IPv6, netlink or other); refused (exit 77) where the seccomp filter cannot be installed. Default "all". */
  network?: "all" | "none";
  /**
   * A private job: a fresh HOME and TMPDIR of its own under
   * /run/clankie-private/N, out of every other job's reach (a group of the
   * pool, see README); no SysV IPC or POSIX message queue. Refused (exit 77)
   * without Landlock ABI 6 and the seccomp filter, 75 when the pool is
   * leased. Released when the job has ended: the result settles after it.
   */
  privateJob?: boolean;
  /** Refused (64): every spawn goes through the spawner; there is no shim to name. */
  shim?: string;
  /** What timeout, cancelSignal and kill() send (default SIGTERM): one the shim delivers (AGENT_SIGNALS). */
  killSignal?: NodeJS.Signals | number;
}

/** The options spawnAgent hands to the shim; every other one is execa's. A new shim option goes here and in agentExecArguments. */
const SHIM_OPTIONS = ["cwd", "env", "keepFds", "nproc", "oomScoreAdj", "allowWrite", "allowRead", "denyConnect", "denyBind", "strictConfinement", "network", "privateJob", "shim"] as const satisfies readonly (keyof SpawnAgentOptions)[];

/** Pure: the shim's argv and environment for an agent command. */
export function agentExecArguments(command: string, args: readonly string[], options: SpawnAgentOptions = {}): { argv: string[]; env: Environment } {
  const argv: string[] = [];
  if (options.cwd !== undefined) argv.push("--cwd", options.cwd);
  const names = Object.keys(options.env ?? {}).sort();
  for (const name of names) {
    if (isCodeLoadingVariable(name)) throw new Refusal(EXIT.usage, `${name}: variables that load code are never passed to agent work`, "do not pass it");
    argv.push("--env", name);
  }
  for (const fd of options.keepFds ?? []) argv.push("--keep-fd", String(fd));
  if (options.nproc !== undefined) argv.push("--nproc", String(options.nproc));
  if (options.oomScoreAdj !== undefined) argv.push("--oom-score-adj", String(options.oomScoreAdj));
  for (const path of options.allowWrite ?? []) {
    // Refused here at once, as the shim would (64): a tree the agent may write under /state lets it stop the next start.
    const unsafe = writablePathProblem(path);
    if (unsafe !== undefined) throw new Refusal(EXIT.usage, `allowWrite ${JSON.stringify(path)} ${unsafe}`, WRITABLE_PATH_FIX);
    argv.push("--allow-write", path);
  }
  for (const path of options.allowRead ?? []) argv.push("--allow-read", path);
  for (const port of options.denyConnect ?? []) argv.push("--deny-connect", String(port));
  for (const port of options.denyBind ?? []) argv.push("--deny-bind", String(port));
  if (options.strictConfinement) argv.push("--strict-confinement");
  if (options.network !== undefined && options.network !== "all" && options.network !== "none") throw new Refusal(EXIT.usage, `network ${JSON.stringify(options.network)} is not "all" or "none"`, 'give network: "none" to keep agent work off the network, or leave it out');
  if (options.network === "none") argv.push("--no-network");
  if (options.privateJob) argv.push("--private-job");
  argv.push("--", command, ...args);
  // Carried (CLANKIE_ENV_NAME): the shim's Node and glibc read none of the
  // agent's variables, whose values model output may choose (NODE_V8_COVERAGE
  // made the shim write files as node; LANGUAGE chooses message catalogs).
  return { argv, env: carried(buildEnvironment({ from: process.env, set: options.env })) };
}

/**
 * Starts model-directed work as clankie-agent through the spawner, which runs
 * the shim's parser, plan and stage for it. child.pid is the job's: the
 * agent's own process once the chain has exec'd into the command, leading a
 * new session and process group, pgid = child.pid. Generic over its
 * options as execa is: `lines: true` gives string[] output, `encoding:
 * "buffer"` bytes, and so on.
 *
 * Every signal execa would send (timeout, cancelSignal, killSignal,
 * forceKillAfterDelay, child.kill()) goes through the spawner's signal stage
 * to that process group: see routeKillsThroughShim.
 *
 * The outcome, result or error, carries AgentStart: whether the command
 * started, or the shim's checks refused it (src/service/agent-start.ts). For
 * that the job gets one more stdio pipe, the started marker, at fd 17 or the first
 * fd after the service's own stdio, named in its environment
 * (CLANKIE_STARTED_FD; the agent's variables are all carried, so none of
 * them can name it).
 */
export function spawnAgent<OptionsType extends SpawnAgentOptions = {}>(command: string, args: readonly string[] = [], options: OptionsType = {} as OptionsType): AgentSubprocess<OptionsType> {
  refuseIdentityOptions(options, "spawnAgent");
  refuseUnsupportedOptions(options, "spawnAgent");
  const given: SpawnAgentOptions = options;
  const stop = agentStopPlan(given);
  if (given.shim !== undefined) throw new Refusal(EXIT.usage, "spawnAgent: the shim option is gone: every spawn goes through the spawner", "remove shim");
  const execaOptions: Record<string, unknown> = { ...given };
  for (const name of SHIM_OPTIONS) delete execaOptions[name];
  const { argv, env } = agentExecArguments(command, args, given);
  const { stdio, fd: markerFd } = stdioWithMarker(given);
  // The holder's control fd, after the marker: how the job ended (src/service/spawner-client.ts).
  const ctl = stdio.length;
  stdio.push("pipe");
  for (const name of ["stdin", "stdout", "stderr"]) delete execaOptions[name];
  const held = holderArgs(ctl);
  gateExec({ command: TOOLS.perl, args: [], trustedUids: [0] });
  const holderEnv = buildEnvironment({ from: process.env });
  const channel = spawnerChannel();
  const startHolder = (): ResultPromise => execa(TOOLS.perl, ["-e", HOLDER_PROGRAM, ...held.args], { ...execaOptions, stdio, killSignal: stop.killSignal, env: holderEnv, extendEnv: false, shell: false, preferLocal: false, detached: true } as unknown as ExecaOptions);
  // No holder process when the job's stdio is pipes or nothing and the spawner answers: the acceptor makes it (src/service/job-process.ts).
  const holder = channel.lost === undefined ? startWithoutHolder(ctl, held.socket, { perl: TOOLS.perl, sendmsg: syscallNumbers().sendmsg, env: holderEnv }, startHolder) : startHolder();
  const job = channel.spawn(holder, ctl, held.socket, argv, { ...env, [STARTED_FD_VARIABLE]: String(markerFd) });
  // The subprocess's pid is the job's (its session and process group), once the spawner has started it.
  Object.defineProperty(holder, "pid", { get: () => job.pid, configurable: true });
  const marker = readMarker(holder.stdio[markerFd] as Readable | undefined);
  const shown = showAsShim(holder, [AGENT_EXEC_PATH, ...argv]);
  const reported = reportStart(routeKillsThroughShim(shown, (signal) => channel.signal({ job: job.id }, signal), stop), marker);
  return (given.privateJob ? releaseWhenEnded(reported, (pid) => channel.release(pid)) : reported) as unknown as AgentSubprocess<OptionsType>;
}

// The channel opens when the package loads, so that the service learns at once when the spawner has ended.
if (process.env[SPAWNER_FD_VARIABLE] !== undefined) spawnerChannel();
