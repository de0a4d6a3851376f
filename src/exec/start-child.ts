/*
 * The resident spawner's program start (src/agent-exec/spawner.ts): it
 * cannot replace itself for each job as the shim did, so it starts each
 * chain as a child, through the same gate (src/exec/rules.ts) as
 * execReplace. Node opens every fd close-on-exec and marks the fds it
 * inherited so at start-up (the request channel among them): a child gets
 * only its stdio entries.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { prepareExec } from "./replace.ts";
import type { ExecRequest } from "./replace.ts";

export type { ChildProcess };

export interface ChildRequest extends ExecRequest {
  /** stderr piped back to the spawner (the stage's one line), else ignored. */
  stderr: "pipe" | "ignore";
  /** A session and process group of its own (setsid(2) before the exec). */
  detached: boolean;
}

/** Starts the program as a child; never a shell. */
export function startChild(request: ChildRequest): ChildProcess {
  const { path, argv, env } = prepareExec(request);
  return spawn(path, argv.slice(1), { argv0: argv[0], env, stdio: ["ignore", "ignore", request.stderr], detached: request.detached, shell: false });
}
