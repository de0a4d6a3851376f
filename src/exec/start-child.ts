/*
 * The resident spawner's program start (src/agent-exec/spawner.ts): it
 * cannot replace itself as the shim did, so it starts its zygote
 * (src/perl/spawn-grab.pl) as a child, once, through the same gate
 * (src/exec/rules.ts) as execReplace. Node opens every fd close-on-exec
 * and marks the fds it inherited so at start-up (the request channel among
 * them): a child gets only its stdio entries.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { SYSTEM_PATH } from "../constants.ts";
import type { ExecRequest } from "./replace.ts";
import { gateExec } from "./rules.ts";

export type { ChildProcess };

/** Starts the program as a child, as prepareExec (replace.ts) would exec it (PATH forced to SYSTEM_PATH), its stdin, stdout and stderr pipes to the spawner (the zygote's jobs, its report, and its refusals); never a shell. */
export function startChild(request: ExecRequest): ChildProcess {
  const path = gateExec(request);
  return spawn(path, request.args, { argv0: request.argv0 ?? request.command, env: { ...request.env, PATH: SYSTEM_PATH }, stdio: "pipe", shell: false });
}
