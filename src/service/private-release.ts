/*
 * The end of a private job's lease, for spawnAgent: once the job's process
 * has exited, the spawner's `clankie-agent-exec --private-cleanup PID` kills what it left
 * holding its group (a tmux server, a background process) and removes its
 * directory (src/agent-exec/private-job.ts). The job's result promise
 * settles only after that, so that a caller that awaits it finds the lease
 * gone; a release that fails is reported on the result (privateRelease),
 * and the next start, or the shim when the pool is exhausted, removes it.
 */
import type { ResultPromise } from "execa";
import type { StageOutcome } from "./spawner-client.ts";

export interface PrivateRelease {
  exitCode: number | undefined;
  stderr: string;
}

export function releaseWhenEnded(subprocess: ResultPromise, releaseLease: (pid: number) => Promise<StageOutcome>): ResultPromise {
  const release = async (): Promise<PrivateRelease> => {
    const pid = subprocess.pid;
    if (pid === undefined) return { exitCode: undefined, stderr: "the job never started" };
    const run = await releaseLease(pid);
    return { exitCode: run.exitCode, stderr: run.stderr };
  };
  const mark = (outcome: unknown, released: PrivateRelease): void => {
    if (outcome !== null && typeof outcome === "object") Object.assign(outcome, { privateRelease: released });
  };
  const settled = subprocess.then(
    async (result) => {
      mark(result, await release());
      return result;
    },
    async (error: unknown) => {
      mark(error, await release());
      throw error;
    },
  );
  for (const name of ["then", "catch", "finally"] as const) {
    Object.defineProperty(subprocess, name, { value: (Promise.prototype[name] as (...args: unknown[]) => unknown).bind(settled), writable: true, configurable: true });
  }
  return subprocess;
}
