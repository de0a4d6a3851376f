/*
 * The one module that starts programs. Every exec of root, of the service and
 * of the shim goes through here, so that three rules hold everywhere:
 *
 *   1. PATH is SYSTEM_PATH, whatever the caller's says, and every command is
 *      resolved to an absolute path before exec.
 *   2. A program run by root or by the service must be a file that only a
 *      trusted owner (root, or the service uid for the service's own execs)
 *      can change: the file and every directory above it, on the path as
 *      given and on the path as resolved, are owned by a trusted uid and not
 *      writable by group or other. Nothing under /workspace, and nothing the
 *      agent uid could have written, is ever executed by root or the service.
 *   3. The child's environment is built from an allowlist plus what the
 *      caller names, never by extending our own, and no shell is involved.
 *
 * Synchronous exec-replace (`execReplace`) serves the entrypoint and the shim.
 * Synchronous run-and-capture (`runCapture`) serves the audit, which must
 * start a program and come back (the probe through the shim, perl for file
 * capabilities). The asynchronous path (`systemExec`, `spawnAgent`) serves the service; it is
 * built on execa and is not part of the single executable.
 */
import type * as ChildProcess from "node:child_process";
import { accessSync, closeSync, constants, lstatSync, openSync, readSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { constants as osConstants } from "node:os";
import { execa, type Options as ExecaOptions, type ResultPromise } from "execa";
import { AGENT_EXEC_PATH, AGENT_SIGNALS, EXIT, isAllowlisted, isCodeLoadingVariable, SYSTEM_PATH, SYSTEM_PATH_DIRS } from "./constants.ts";
import { Refusal } from "./report.ts";

export { SYSTEM_PATH } from "./constants.ts";

export type Environment = Record<string, string>;

/* ------------------------------------------------------------------ env -- */

export interface EnvironmentRequest {
  /** Source of allowlisted and named variables (default: none). */
  from?: NodeJS.ProcessEnv;
  /** Names whose values are copied from `from`, beyond the allowlist. */
  pass?: readonly string[];
  /** Variables set outright. PATH is always SYSTEM_PATH and cannot be set here. */
  set?: Environment;
}

/** Builds a child environment from scratch: allowlist + named + set, and the fixed PATH. */
export function buildEnvironment(request: EnvironmentRequest = {}): Environment {
  const env: Environment = {};
  const from = request.from ?? {};
  for (const [name, value] of Object.entries(from)) {
    if (typeof value === "string" && isAllowlisted(name)) env[name] = value;
  }
  for (const name of request.pass ?? []) {
    if (isCodeLoadingVariable(name)) {
      throw new Refusal(EXIT.usage, `${name}: variables that load code are never passed to a child`, "do not pass it");
    }
    const value = Object.hasOwn(from, name) ? from[name] : undefined;
    if (typeof value === "string") env[name] = value;
  }
  for (const [name, value] of Object.entries(request.set ?? {})) env[name] = value;
  env.PATH = SYSTEM_PATH;
  return env;
}

/* -------------------------------------------------------------- resolve -- */

/** Finds a command in SYSTEM_PATH (or takes an absolute path) and returns its absolute path. */
export function resolveCommand(command: string, cwd?: string): string {
  if (command === "") throw new Refusal(EXIT.usage, "the command is empty", "name a program to run");
  if (command.includes("\0")) throw new Refusal(EXIT.usage, "the command contains a NUL byte", "name a program to run");
  // process.cwd() only when needed: it throws when the working directory was removed (docker exec, nsenter).
  if (command.includes("/")) return isAbsolute(command) ? command : resolve(cwd ?? process.cwd(), command);
  for (const dir of SYSTEM_PATH_DIRS) {
    const candidate = `${dir}/${command}`;
    try {
      if (statSync(candidate).isFile()) {
        accessSync(candidate, constants.X_OK);
        return candidate;
      }
    } catch {
      // not here: execvp(3) goes on to the next directory too
    }
  }
  throw new Refusal(EXIT.notFound, `${command}: not found in ${SYSTEM_PATH}`, "install it in a system directory or give its absolute path");
}

function ancestors(path: string): string[] {
  const parts: string[] = [];
  let current = path;
  while (current !== "/") {
    parts.push(current);
    current = current.slice(0, current.lastIndexOf("/")) || "/";
  }
  parts.push("/");
  return parts;
}

const TRUST_FIX = "install programs that root or the service run in a root-owned directory that only root can write (for example /usr/local/bin)";
const INTERPRETER_FIX = "name a #! interpreter installed in a root-owned directory that only root can write (for example /usr/bin)";

/**
 * Refuses unless `path` and every directory above it (as given and as
 * resolved) is owned by one of `trustedUids` and writable by nobody else.
 * `via`: the scripts whose `#!` lines led to `path`, first the one asked for;
 * the refusal names them.
 */
export function checkTrustedExecutable(path: string, trustedUids: readonly number[], via: readonly string[] = []): void {
  const subject = via.length === 0 ? path : `${via[0]} (${[...via.slice(1), path].map((p) => `#! ${p}`).join(", ")})`;
  const fix = via.length === 0 ? TRUST_FIX : INTERPRETER_FIX;
  let real: string;
  try {
    real = realpathSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const whose = via.length === 0 ? "" : ` (the #! interpreter of ${via.at(-1)})`;
    if (code === "ENOENT") throw new Refusal(EXIT.notFound, `${path}: no such file${whose}`, "check the command's path");
    throw new Refusal(EXIT.notExecutable, `${path}: cannot be resolved (${code})${whose}`, fix);
  }
  const seen = new Set<string>();
  for (const place of [...ancestors(path), ...ancestors(real)]) {
    if (seen.has(place)) continue;
    seen.add(place);
    let st;
    try {
      st = lstatSync(place);
    } catch (error) {
      throw new Refusal(EXIT.notExecutable, `${place}: cannot be checked (${(error as NodeJS.ErrnoException).code})`, fix);
    }
    if (!trustedUids.includes(st.uid)) {
      throw new Refusal(EXIT.notExecutable, `refusing to execute ${subject}: ${place} is owned by uid ${st.uid}, not ${trustedUids.join(" or ")}`, fix);
    }
    // A symlink's own mode is always 0777 and means nothing; its directory is what counts.
    if (!st.isSymbolicLink() && (st.mode & 0o022) !== 0) {
      throw new Refusal(EXIT.notExecutable, `refusing to execute ${subject}: ${place} is writable by group or other (mode ${(st.mode & 0o7777).toString(8)})`, fix);
    }
  }
}

/**
 * How many `#!` scripts execve(2) follows in a row before it fails with
 * ELOOP: fs/exec.c allows binfmt rewrites while depth <= 5, and a chain of
 * five scripts ending in an ELF ran here (kernel 6.18) where six failed.
 */
export const MAX_SCRIPT_DEPTH = 5;

/**
 * What execve(2) would refuse, found before the call (Node's process.execve
 * aborts the process on failure), and the trust rule for every `#!`
 * interpreter the kernel would run on the way: a trusted script is no better
 * than the program that reads it, since that program runs with the caller's
 * privileges. `trustedUids` undefined: no ownership rule (agent commands).
 */
function checkExecutable(path: string, trustedUids?: readonly number[], scripts: readonly string[] = []): void {
  let st;
  try {
    st = statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new Refusal(EXIT.notFound, `${path}: no such file`, "check the command's path");
    throw new Refusal(EXIT.notExecutable, `${path}: cannot be executed (${code})`, "check the command's path and permissions");
  }
  if (!st.isFile()) throw new Refusal(EXIT.notExecutable, `${path}: not a regular file`, "name an executable file");
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Refusal(EXIT.notExecutable, `${path}: not executable by uid ${process.geteuid?.()}`, "check the file's mode and owner");
  }
  let fd: number | undefined;
  const head = Buffer.alloc(256);
  let length = 0;
  try {
    // The file as resolved: a symlink (/usr/bin/python3 -> python3.11) must
    // not hide the #! line of what it points to. Both paths passed the trust rule.
    fd = openSync(realpathSync(path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    length = readSync(fd, head, 0, head.length, 0);
  } catch (error) {
    // An execute-only file: the kernel reads a #! line we cannot, and would
    // run its interpreter with our privileges. Agent commands: the kernel judges.
    if (trustedUids === undefined) return;
    throw new Refusal(
      EXIT.notExecutable,
      `refusing to execute ${path}: it cannot be read to check for a #! interpreter (${(error as NodeJS.ErrnoException).code})`,
      "make the program readable by the uid that runs it (mode 0755)",
    );
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (length >= 4 && head.readUInt32BE(0) === 0x7f454c46) return; // ELF
  if (length >= 2 && head[0] === 0x23 && head[1] === 0x21) {
    const line = head.subarray(2, length).toString("latin1").split("\n")[0]!.trim();
    const interpreter = line.split(/[ \t]/)[0] ?? "";
    if (!interpreter.startsWith("/")) throw new Refusal(EXIT.notExecutable, `${path}: #! line names no absolute interpreter`, "fix the script's #! line");
    const chain = [...scripts, path];
    if (chain.length > MAX_SCRIPT_DEPTH) {
      throw new Refusal(EXIT.notExecutable, `${chain[0]}: more than ${MAX_SCRIPT_DEPTH} #! scripts in a row (execve would fail with ELOOP)`, "make a shorter chain of #! interpreters");
    }
    if (trustedUids !== undefined) {
      checkTrustedExecutable(interpreter, trustedUids, chain);
    }
    checkExecutable(interpreter, trustedUids, chain);
    return;
  }
  throw new Refusal(EXIT.notExecutable, `${path}: not an ELF binary or #! script (execve would fail with ENOEXEC)`, "name an executable program");
}

/* ------------------------------------------------------------------ exec -- */

export interface ExecRequest {
  /** Command name (looked up in SYSTEM_PATH) or absolute path. */
  command: string;
  args: readonly string[];
  /** The complete environment of the new program (PATH is forced to SYSTEM_PATH). */
  env: Environment;
  /** Owners allowed for the file and its directories; undefined skips the ownership rule (agent commands). */
  trustedUids?: readonly number[];
  /** argv[0]; default: the command as given. */
  argv0?: string;
}

/** Pure: the resolved path, argv and env that `execReplace` would pass to execve(2). */
export function prepareExec(request: ExecRequest): { path: string; argv: string[]; env: Environment } {
  const path = resolveCommand(request.command);
  if (request.trustedUids) checkTrustedExecutable(path, request.trustedUids);
  checkExecutable(path, request.trustedUids);
  for (const arg of request.args) {
    if (arg.includes("\0")) throw new Refusal(EXIT.usage, "an argument contains a NUL byte", "pass arguments without NUL bytes");
  }
  return { path, argv: [request.argv0 ?? request.command, ...request.args], env: { ...request.env, PATH: SYSTEM_PATH } };
}

/**
 * Replaces this process with the program (execve(2)); never returns.
 * Everything execve could refuse is checked first, because Node 24 aborts
 * (SIGABRT, exit 134, a stack trace on stderr) when the call itself fails.
 */
export function execReplace(request: ExecRequest): never {
  const { path, argv, env } = prepareExec(request);
  process.execve!(path, argv, env);
  throw new Error("process.execve returned"); // unreachable
}

/* --------------------------------------------------------------- capture -- */

export interface CaptureRequest {
  /** Command name (looked up in SYSTEM_PATH) or absolute path. */
  command: string;
  args: readonly string[];
  /** Variables set outright for the child, beyond the allowlist taken from this process's environment. */
  env?: Environment;
  /** Names copied from this process's environment, beyond the allowlist. */
  pass?: readonly string[];
  /** Owners allowed for the program file and its directories; default root only. */
  trustedUids?: readonly number[];
  /** Written to the child's stdin, then closed; default: stdin is /dev/null. */
  input?: Buffer | string;
  /** Killed with SIGKILL after this long; default 30 s. */
  timeoutMs?: number;
  /** Most bytes kept of stdout and of stderr; default 16 MiB. */
  maxBytes?: number;
}

export interface CaptureResult {
  /** The absolute path that was executed. */
  path: string;
  /** Exit status, or null when the child was killed by a signal. */
  status: number | null;
  signal: string | null;
  stdout: Buffer;
  stderr: Buffer;
  /** Set when the child could not be started or was killed for the timeout or the output limit (an errno code such as ETIMEDOUT or ENOBUFS). */
  error?: string;
}

/**
 * Runs a program to completion and returns what it printed, under the same
 * rules as every other exec: fixed PATH, resolved and ownership-checked
 * command, environment from the allowlist plus what is named, no shell.
 * Built on spawnSync(2)-style blocking, so it works inside the single
 * executable, where the asynchronous path (execa) is not available.
 */
/** The checks both capture paths make before anything starts: the resolved path and the child's environment. */
function prepareCapture(request: CaptureRequest): { path: string; env: Environment } {
  const path = resolveCommand(request.command);
  const trustedUids = request.trustedUids ?? [0];
  checkTrustedExecutable(path, trustedUids);
  checkExecutable(path, trustedUids);
  for (const arg of request.args) {
    if (arg.includes("\0")) throw new Refusal(EXIT.usage, "an argument contains a NUL byte", "pass arguments without NUL bytes");
  }
  return { path, env: buildEnvironment({ from: process.env, pass: request.pass, set: request.env }) };
}

export function runCapture(request: CaptureRequest): CaptureResult {
  const { path, env } = prepareCapture(request);
  // Loaded here, not at the top: the shim and the entrypoint never capture,
  // and node:child_process costs milliseconds of every start.
  const { spawnSync } = process.getBuiltinModule("node:child_process") as typeof ChildProcess;
  const result = spawnSync(path, [...request.args], {
    cwd: "/",
    env,
    shell: false,
    input: request.input,
    stdio: [request.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    timeout: request.timeoutMs ?? 30_000,
    killSignal: "SIGKILL",
    maxBuffer: request.maxBytes ?? 16 << 20,
    windowsHide: true,
  });
  const error = (result.error as NodeJS.ErrnoException | undefined)?.code;
  return {
    path,
    status: result.status,
    signal: result.signal,
    stdout: result.stdout ?? Buffer.alloc(0),
    stderr: result.stderr ?? Buffer.alloc(0),
    ...(error !== undefined ? { error } : {}),
  };
}

/**
 * runCapture that does not wait: the program starts now and runs while this
 * process goes on with synchronous work (the audit walks /state while perl
 * walks the image, one per CPU); the promise settles when it has exited.
 * Same rules, same result; the pre-checks throw before anything starts.
 */
export function startCapture(request: CaptureRequest): Promise<CaptureResult> {
  const { path, env } = prepareCapture(request);
  const { spawn } = process.getBuiltinModule("node:child_process") as typeof ChildProcess;
  const maxBytes = request.maxBytes ?? 16 << 20;
  // Never rejects: every failure, to start or later, is the result's `error`, like spawnSync's.
  return new Promise((resolvePromise) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const sizes = [0, 0];
    let error: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const settle = (status: number | null, signal: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolvePromise({ path, status, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err), ...(error !== undefined ? { error } : {}) });
    };
    let child: ChildProcess.ChildProcess;
    try {
      // cwd "/": the auditor's own directory may not exist where it runs (docker exec, nsenter).
      child = spawn(path, [...request.args], { cwd: "/", env, shell: false, stdio: [request.input === undefined ? "ignore" : "pipe", "pipe", "pipe"], windowsHide: true });
    } catch (e) {
      error = (e as NodeJS.ErrnoException).code ?? String(e);
      settle(null, null);
      return;
    }
    const stop = (why: string) => {
      error ??= why;
      child.kill("SIGKILL");
    };
    timer = setTimeout(() => stop("ETIMEDOUT"), request.timeoutMs ?? 30_000);
    const collect = (into: Buffer[], which: 0 | 1) => (chunk: Buffer) => {
      sizes[which] = sizes[which]! + chunk.length;
      if (sizes[which]! > maxBytes) return stop("ENOBUFS");
      into.push(chunk);
    };
    child.on("error", (e: NodeJS.ErrnoException) => {
      error ??= e.code ?? String(e);
      // spawn(2) failed: no 'close' may follow when the stdio pipes never opened.
      if (child.pid === undefined) settle(null, null);
    });
    child.stdout?.on("data", collect(out, 0));
    child.stderr?.on("data", collect(err, 1));
    if (request.input !== undefined && child.stdin) {
      child.stdin.on("error", () => undefined); // EPIPE when the program exits without reading: its status says what happened
      child.stdin.end(request.input);
    }
    child.once("close", (status, signal) => settle(status, signal));
  });
}

/* ---------------------------------------------------------------- async -- */

export interface SystemExecOptions extends Omit<ExecaOptions, "env" | "extendEnv" | "shell" | "preferLocal" | "localDir" | "node"> {
  /** Variables set outright for the child. */
  env?: Environment;
  /** Names copied from this process's environment, beyond the allowlist. */
  pass?: readonly string[];
  /** Owners allowed for the program file; default root and this process's uid. */
  trustedUids?: readonly number[];
}

/**
 * Runs a program for the service: fixed PATH, resolved and ownership-checked
 * command, environment from the allowlist plus what is named, no shell.
 */
export function systemExec(command: string, args: readonly string[] = [], options: SystemExecOptions = {}): ResultPromise {
  const { env, pass, trustedUids, ...rest } = options;
  const path = resolveCommand(command);
  const trusted = trustedUids ?? [...new Set([0, process.geteuid!()])];
  checkTrustedExecutable(path, trusted);
  checkExecutable(path, trusted);
  const childEnv = buildEnvironment({ from: process.env, pass, set: env });
  return execa(path, [...args], { ...rest, env: childEnv, extendEnv: false, shell: false, preferLocal: false });
}

export interface SpawnAgentOptions extends Omit<SystemExecOptions, "cwd" | "detached" | "trustedUids" | "pass" | "killSignal"> {
  /** Working directory of the agent command (default /workspace). */
  cwd?: string;
  /** Variables for the agent, by value: they reach the shim through its environment, never argv. */
  env?: Environment;
  /** Extra fds (17 or higher: Node marks inherited fds 3-16 close-on-exec at start-up) to hand to the agent. */
  keepFds?: readonly number[];
  /** RLIMIT_NPROC for the agent uid. */
  nproc?: number;
  /** oom_score_adj for agent work. */
  oomScoreAdj?: number;
  /** More trees the agent may write below (absolute, no symbolic links), beyond /workspace, /tmp, /dev/shm and /state/agent. */
  allowWrite?: readonly string[];
  /** More trees the agent may read and execute, beyond the image and /state/install. */
  allowRead?: readonly string[];
  /** TCP ports the agent may not connect to (Landlock ABI 4; about 50 ms more per spawn). */
  denyConnect?: readonly number[];
  /** TCP ports the agent may not bind (Landlock ABI 4; likewise). */
  denyBind?: readonly number[];
  /** Refuse the spawn (exit 77) unless the kernel applies the whole Landlock domain (ABI 6+) and seccomp filter. */
  strictConfinement?: boolean;
  /** Path of the shim; default CLANKIE_AGENT_EXEC's value of ADR 0272. */
  shim?: string;
  /** What timeout, cancelSignal and kill() send (default SIGTERM): one the shim delivers (AGENT_SIGNALS). */
  killSignal?: NodeJS.Signals | number;
}

/** The options spawnAgent hands to the shim; every other one is execa's. A new shim option goes here and in agentExecArguments. */
const SHIM_OPTIONS = ["cwd", "env", "keepFds", "nproc", "oomScoreAdj", "allowWrite", "allowRead", "denyConnect", "denyBind", "strictConfinement", "shim"] as const satisfies readonly (keyof SpawnAgentOptions)[];

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
  for (const path of options.allowWrite ?? []) argv.push("--allow-write", path);
  for (const path of options.allowRead ?? []) argv.push("--allow-read", path);
  for (const port of options.denyConnect ?? []) argv.push("--deny-connect", String(port));
  for (const port of options.denyBind ?? []) argv.push("--deny-bind", String(port));
  if (options.strictConfinement) argv.push("--strict-confinement");
  argv.push("--", command, ...args);
  return { argv, env: buildEnvironment({ from: process.env, set: options.env }) };
}

/**
 * Starts model-directed work as clankie-agent through the shim. The child is
 * the agent's own process (the shim execs into it), spawned detached: it
 * leads a new session and process group, pgid = child.pid.
 *
 * Every signal execa would send (timeout, cancelSignal, killSignal,
 * forceKillAfterDelay, child.kill()) goes through the shim to that process
 * group: see routeKillsThroughShim.
 */
export function spawnAgent(command: string, args: readonly string[] = [], options: SpawnAgentOptions = {}): ResultPromise {
  const execaOptions: Record<string, unknown> = { ...options };
  for (const name of SHIM_OPTIONS) delete execaOptions[name];
  const shimPath = options.shim ?? AGENT_EXEC_PATH;
  checkTrustedExecutable(shimPath, [0]);
  const stop = agentStopPlan(options);
  const { argv, env } = agentExecArguments(command, args, options);
  const subprocess = execa(shimPath, argv, { ...execaOptions, killSignal: stop.killSignal, env, extendEnv: false, shell: false, preferLocal: false, detached: true });
  return routeKillsThroughShim(subprocess, shimPath, stop);
}

/** Delivers a signal to an agent process group, as the agent (the service's uid cannot). */
export function signalAgent(pgid: number, signal: NodeJS.Signals, options: { shim?: string } = {}): ResultPromise {
  const shimPath = options.shim ?? AGENT_EXEC_PATH;
  checkTrustedExecutable(shimPath, [0]);
  return execa(shimPath, ["--signal", signal, "--pgid", String(pgid)], {
    env: buildEnvironment({ from: process.env }),
    extendEnv: false,
    shell: false,
    preferLocal: false,
  });
}

/* ------------------------------------------------------------ agent stop -- */

interface AgentStopPlan {
  killSignal: NodeJS.Signals;
  /** SIGKILL this long after killSignal when the command still runs; false: never (execa's option, default 5 s). */
  forceKillAfterDelay: number | false;
}

/** The signal's name when the shim can deliver it; a number is taken as execa takes it. */
function agentSignal(signal: string | number, where: string): NodeJS.Signals {
  const name = typeof signal === "number" ? Object.entries(osConstants.signals).find(([, number]) => number === signal)?.[0] : signal;
  if (name === undefined || !AGENT_SIGNALS.includes(name as NodeJS.Signals)) {
    throw new Refusal(EXIT.usage, `${where} ${JSON.stringify(signal)}: the shim delivers only ${AGENT_SIGNALS.join(", ")} to agent work`, "use one of these");
  }
  return name as NodeJS.Signals;
}

function agentStopPlan(options: SpawnAgentOptions): AgentStopPlan {
  const force = options.forceKillAfterDelay;
  return {
    killSignal: agentSignal(options.killSignal ?? "SIGTERM", "killSignal"),
    // Other values: execa refuses them when it validates its options.
    forceKillAfterDelay: force === false ? false : typeof force === "number" ? force : 5_000,
  };
}

/** How often, and how far apart, a signal is retried while the process group still runs as the service (the shim has not yet dropped to the agent). */
const SIGNAL_TRIES = 100;
const SIGNAL_RETRY_MS = 20;

/**
 * Makes execa's ways of stopping a subprocess reach agent work. They all end
 * in kill(2) as the service, which fails with EPERM for a process of another
 * uid (the service holds no CAP_KILL): a job with a 3 s timeout ran its full
 * 25 s and reported exit 0. So the subprocess's kill() is replaced by one that
 * runs `clankie-agent-exec --signal SIG --pgid PID`, which signals the job's
 * whole process group as the agent.
 *
 * execa's own timeout and cancelSignal handlers call `subprocess.kill()`
 * (execa 9.6.0, lib/terminate/timeout.js and cancel.js), so they take this
 * route too, and execa reports the job as it always does (timedOut,
 * isCanceled, isTerminated, signal). forceKillAfterDelay lives inside the
 * kill() execa made, so it is done here (SIGKILL to the group when the
 * command still runs after the delay) and reported as isForcefullyTerminated.
 * A signal the shim cannot deliver fails the job with the reason, as a failed
 * kill(2) does ('error' on the subprocess).
 */
function routeKillsThroughShim(subprocess: ResultPromise, shim: string, plan: AgentStopPlan): ResultPromise {
  const pgid = subprocess.pid;
  const execaKill = subprocess.kill.bind(subprocess) as (signal: number, error: Error) => boolean;
  const running = (): boolean => pgid !== undefined && subprocess.exitCode === null && subprocess.signalCode === null;
  let forcedAfter: number | undefined;
  let forceTimer: NodeJS.Timeout | undefined;
  let failedWithError = false;
  subprocess.once("exit", () => clearTimeout(forceTimer));

  const fail = (error: Error): void => {
    // Only while execa listens: an 'error' nobody listens to would throw.
    if (running() && subprocess.listenerCount("error") > 0) subprocess.emit("error", error);
  };

  /** True once the shim delivered it; false when the group is gone or the job ended. */
  const deliver = async (signal: NodeJS.Signals): Promise<boolean> => {
    for (let attempt = 1; ; attempt++) {
      if (!running()) return false;
      const result = await signalAgent(pgid!, signal, { shim }).catch((error: { exitCode?: number; stderr?: unknown; message: string }) => error);
      if (result.exitCode === EXIT.ok) return true;
      if (result.exitCode === EXIT.dataRefused) return false; // no such process group: it has ended
      // EXIT.launchRefused: the group is not the agent's, yet: the shim still runs as the service.
      if (result.exitCode === EXIT.launchRefused && attempt < SIGNAL_TRIES) {
        await new Promise((done) => setTimeout(done, SIGNAL_RETRY_MS));
        continue;
      }
      fail(new Error(`cannot deliver ${signal} to agent process group ${pgid}: ${String(result.stderr ?? result.message).trim()}`));
      return false;
    }
  };

  const forceKillLater = (): void => {
    // Not once the job has ended: the timer would only hold the service's event loop open.
    if (plan.forceKillAfterDelay === false || forceTimer !== undefined || !running()) return;
    const delay = plan.forceKillAfterDelay;
    forceTimer = setTimeout(() => {
      if (!running()) return;
      // Marked now, as execa marks it when it sends: the job may be reported before the shim that killed it has exited.
      forcedAfter = delay;
      void deliver("SIGKILL");
    }, delay);
  };

  const kill = (signalOrError?: NodeJS.Signals | number | Error, errorArgument?: Error): boolean => {
    const [requested, error] = signalOrError instanceof Error ? [undefined, signalOrError] : [signalOrError, errorArgument];
    if (requested === 0) return running();
    const signal = agentSignal(requested ?? plan.killSignal, "kill()");
    if (!running()) return false;
    if (error !== undefined && !failedWithError && subprocess.listenerCount("error") > 0) {
      // execa's own kill(0, error) fails the job with `error` as its cause, as
      // kill(error) does; signal 0 sends nothing (the EPERM it meets is an
      // 'error' that execa, still waiting for the exit, absorbs).
      failedWithError = true;
      execaKill(0, error);
    }
    void deliver(signal).then((delivered) => {
      if (delivered && signal === plan.killSignal) forceKillLater();
    });
    return true;
  };
  subprocess.kill = kill as ResultPromise["kill"];

  return reportForcedKill(subprocess, () => forcedAfter);
}

/** Marks a job ended by the force-kill as execa would: isForcefullyTerminated, and the message says after how long. */
function reportForcedKill(subprocess: ResultPromise, forcedAfter: () => number | undefined): ResultPromise {
  const mark = <T>(outcome: T): T => {
    const delay = forcedAfter();
    // execa's failures (thrown, or returned with reject: false) carry failed: true and these messages.
    const failure = outcome as { failed?: boolean; signal?: string; isForcefullyTerminated?: boolean; shortMessage?: string; message?: string; escapedCommand?: string };
    if (delay === undefined || failure.failed !== true || failure.signal !== "SIGKILL" || failure.isForcefullyTerminated) return outcome;
    if (typeof failure.shortMessage !== "string" || typeof failure.message !== "string") return outcome;
    const suffix = ` and was forcefully terminated after ${delay} milliseconds`;
    const at = failure.shortMessage.indexOf(`: ${failure.escapedCommand}`);
    const insert = (text: string): string => (at < 0 ? text : `${text.slice(0, at)}${suffix}${text.slice(at)}`);
    Object.assign(failure, { isForcefullyTerminated: true, shortMessage: insert(failure.shortMessage), message: insert(failure.message) });
    return outcome;
  };
  const decorated = subprocess.then(mark, (error: unknown) => {
    throw mark(error);
  });
  // The subprocess is also its own promise (execa's mergePromise): it now settles with the marked outcome.
  for (const name of ["then", "catch", "finally"] as const) {
    Object.defineProperty(subprocess, name, { value: (Promise.prototype[name] as (...args: unknown[]) => unknown).bind(decorated), writable: true, configurable: true });
  }
  return subprocess;
}
