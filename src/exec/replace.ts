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
  /** Owners allowed for the file and its directories; undefined skips the ownership rule (agent commands). */
  trustedUids?: readonly number[];
  /** argv[0]; default: the command as given. */
  argv0?: string;
}

/** Pure: the resolved path, argv and env that `execReplace` would pass to execve(2). */
export function prepareExec(request: ExecRequest): { path: string; argv: string[]; env: Environment } {
  const path = gateExec(request);
  return { path, argv: [request.argv0 ?? request.command, ...request.args], env: { ...request.env, PATH: SYSTEM_PATH } };
}

type RawExecve = (path: string, argv: readonly string[], envp: readonly string[]) => void;

/*
 * process.execve first loads Node's worker-thread modules (only to refuse a
 * call from a worker thread): about 3 ms on every spawn, a third of what the
 * shim's own JavaScript cost. This executable runs on its main thread only,
 * and sea-config.json starts it with --expose-internals, so it calls the
 * binding behind process.execve itself (Node's process_methods execve: the
 * argv and "NAME=value" strings, fds 0-2 made inheritable, execve(2)).
 * Under plain Node (the tests) there is no such module and process.execve runs.
 */
function rawExecve(): RawExecve | undefined {
  const internals = process.getBuiltinModule("internal/test/binding") as { internalBinding(name: string): { execve: RawExecve } } | undefined;
  return internals?.internalBinding("process_methods").execve;
}

/**
 * Replaces this process with the program (execve(2)); never returns.
 * Everything execve could refuse is checked first, because Node 24 aborts
 * (SIGABRT, exit 134, a stack trace on stderr) when the call itself fails.
 */
export function execReplace(request: ExecRequest): never {
  const { path, argv, env } = prepareExec(request);
  const envp = Object.entries(env).map(([name, value]) => `${name}=${value}`);
  // process.execve's own check: a C string ends at its first NUL byte.
  if (envp.some((entry) => entry.includes("\0"))) throw new TypeError("an environment variable contains a NUL byte");
  const execve = rawExecve();
  if (execve) execve(path, argv, envp);
  else process.execve!(path, argv, env);
  throw new Error("process.execve returned"); // unreachable
}
