/*
 * Starting a program and coming back with what it printed, through the gate
 * of src/exec/rules.ts: the audit's (the probe through the shim, perl for
 * Landlock, file capabilities and the image walk), the ACL walk of /state
 * (src/layout/state-acl.ts) and a private job's cleanup stage
 * (src/agent-exec/private-job.ts). node:child_process is loaded only when a
 * capture runs: a spawn loads it only to end a stale private lease.
 */
import type * as ChildProcess from "node:child_process";
import { TOOLS } from "../constants.ts";
import { withoutCapabilities } from "./drop-capabilities.ts";
import { buildEnvironment, type Environment } from "./environment.ts";
import { gateExec } from "./rules.ts";

export interface CaptureRequest {
  /** Command name (looked up in SYSTEM_PATH) or absolute path. */
  command: string;
  args: readonly string[];
  /** Variables set outright for the child, beyond the allowlist taken from this process's environment. */
  env?: Environment;
  /** Names copied from this process's environment, beyond the allowlist. */
  pass?: readonly string[];
  /** Where the allowlist and `pass` take values from; default this process's environment. */
  from?: NodeJS.ProcessEnv;
  /** Owners allowed for the program file and its directories; default root only. */
  trustedUids?: readonly number[];
  /** Written to the child's stdin, then closed; default: stdin is /dev/null. */
  input?: Buffer | string;
  /** Killed with SIGKILL after this long; default 30 s. */
  timeoutMs?: number;
  /** Most bytes kept of stdout and of stderr; default 16 MiB. */
  maxBytes?: number;
  /**
   * Start the program through `setpriv --inh-caps=-all --ambient-caps=-all`
   * (drop-capabilities.ts), as systemExec does: started by a holder of
   * ambient capabilities, it holds none. The audit under the service holds
   * none to pass on (the service holds none); root keeps its own
   * (capabilities(7): a uid 0 execve takes the bounding set).
   */
  dropCapabilities?: boolean;
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

/** The checks both capture paths make before anything starts: the resolved path, what to execute, and the child's environment. */
function prepareCapture(request: CaptureRequest): { path: string; file: string; args: string[]; env: Environment } {
  const path = gateExec({ command: request.command, args: request.args, trustedUids: request.trustedUids ?? [0] });
  const env = buildEnvironment({ from: request.from ?? process.env, pass: request.pass, set: request.env });
  if (!request.dropCapabilities) return { path, file: path, args: [...request.args], env };
  gateExec({ command: TOOLS.setpriv, args: [], trustedUids: [0] });
  return { path, ...withoutCapabilities(path, request.args), env };
}

/**
 * Runs a program to completion and returns what it printed, under the same
 * rules as every other exec: fixed PATH, resolved and ownership-checked
 * command, environment from the allowlist plus what is named, no shell.
 * Built on spawnSync(2)-style blocking, so it works inside the single
 * executable, where the asynchronous path (execa) is not available.
 */
export function runCapture(request: CaptureRequest): CaptureResult {
  const { path, file, args, env } = prepareCapture(request);
  // Loaded here, not at the top: the shim and the entrypoint never capture,
  // and node:child_process costs milliseconds of every start.
  const { spawnSync } = process.getBuiltinModule("node:child_process") as typeof ChildProcess;
  const result = spawnSync(file, args, {
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
  const { path, file, args, env } = prepareCapture(request);
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
      child = spawn(file, args, { cwd: "/", env, shell: false, stdio: [request.input === undefined ? "ignore" : "pipe", "pipe", "pipe"], windowsHide: true });
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
