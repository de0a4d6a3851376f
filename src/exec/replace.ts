/*
 * The executable's exec primitive: the entrypoint and the shim replace
 * themselves (execve(2)) with the next program of their chain, through the
 * gate of src/exec/rules.ts. Nothing else in this repository calls
 * process.execve.
 */
import { SYSTEM_PATH } from "../constants.ts";
import type { Environment } from "./environment.ts";
import { gateExec } from "./rules.ts";

export interface ExecRequest {
  /** Command name (looked up in SYSTEM_PATH) or absolute path. */
  command: string;
  args: readonly string[];
  /** The complete environment of the new program (PATH is forced to SYSTEM_PATH). */
  env: Environment;
  /** Owners allowed for the file, its directories and its #! interpreters. */
  trustedUids: readonly number[];
  /** argv[0]; default: the command as given. */
  argv0?: string;
}

/** Pure: the resolved path, argv and env that `execReplace` would pass to execve(2). */
export function prepareExec(request: ExecRequest): { path: string; argv: string[]; env: Environment } {
  const path = gateExec(request);
  return { path, argv: [request.argv0 ?? request.command, ...request.args], env: { ...request.env, PATH: SYSTEM_PATH } };
}

/**
 * Replaces this process with the program (execve(2)); never returns.
 * Everything execve could refuse is checked first, because Node 24 aborts
 * (SIGABRT, exit 134, a stack trace on stderr) when the call itself fails.
 *
 * process.execve first loads Node's worker-thread modules, only to refuse a
 * call from a worker thread: about 3 ms of every spawn. This executable runs
 * on its main thread only and starts with --expose-internals (sea-config.json),
 * so it calls the binding behind process.execve itself: the argv and
 * "NAME=value" strings, fds 0-2 made inheritable, execve(2). Under plain Node
 * (the tests) that module is absent and process.execve runs.
 */
export function execReplace(request: ExecRequest): never {
  const { path, argv, env } = prepareExec(request);
  const internals = process.getBuiltinModule("internal/test/binding") as { internalBinding(name: string): { execve(path: string, argv: string[], envp: string[]): void } } | undefined;
  if (!internals) process.execve!(path, argv, env);
  const envp = Object.entries(env).map(([name, value]) => `${name}=${value}`);
  // process.execve's own check: a C string ends at its first NUL byte.
  if (envp.some((entry) => entry.includes("\0"))) throw new TypeError("an environment variable contains a NUL byte");
  internals!.internalBinding("process_methods").execve(path, argv, envp);
  throw new Error("process.execve returned"); // unreachable
}
