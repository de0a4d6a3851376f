/*
 * The resident spawner's program start (src/agent-exec/spawner.ts): it
 * cannot replace itself for each job as the shim did, so it starts each
 * chain as a child, through the same gate (src/exec/rules.ts) as
 * execReplace. Node opens every fd close-on-exec and marks the fds it
 * inherited so at start-up (the request channel among them): a child gets
 * only its stdio entries.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { SYSTEM_PATH } from "../constants.ts";
import type { ExecRequest } from "./replace.ts";
import { gateExec } from "./rules.ts";

export type { ChildProcess };

export interface ChildRequest extends ExecRequest {
  /** stdout piped back to the spawner (what the grab says of a job), else ignored. */
  stdout?: "pipe" | "ignore";
  /** stderr piped back to the spawner (the stage's one line), else ignored. */
  stderr: "pipe" | "ignore";
}

/** Starts the program as a child, as prepareExec (replace.ts) would exec it (PATH forced to SYSTEM_PATH); never a shell. */
export function startChild(request: ChildRequest): ChildProcess {
  const path = gateExec(request);
  return spawn(path, request.args, { argv0: request.argv0 ?? request.command, env: { ...request.env, PATH: SYSTEM_PATH }, stdio: ["ignore", request.stdout ?? "ignore", request.stderr], shell: false });
}
