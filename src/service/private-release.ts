/*
 * The end of a private job's lease, for spawnAgent: once the job's process
 * has exited, the spawner's `clankie-agent-exec --private-cleanup PID` kills what it left
 * holding its group (a tmux server, a background process) and removes its
 * directory (src/agent-exec/private-job.ts). The job's result promise
 * settles only after that, so that a caller that awaits it finds the lease
 * gone; a release that fails is reported on the result (privateRelease),
 * and the next start, or the shim when the pool is exhausted, removes it.
 * A job that never started may have held no lease at all (the shim refused
 * it before it took one: 64, 75, a kernel without Landlock): its release
 * answers "no private lease is recorded" (65), which is no release, and the
 * outcome carries none; nor does a job the spawner refused before it started
 * anything (no pid: no lease can have been taken).
 */
import type { ResultPromise } from "execa";
import { EXIT } from "../constants.ts";
import type { StageOutcome } from "./spawner-client.ts";

/** How the release of a private job's lease went: `exitCode` 0 released; else the shim's code (README, "Exit codes") and its line in `stderr`. */
export interface PrivateRelease {
  exitCode: number | undefined;
  stderr: string;
}

/**
 * Pure: the release an outcome reports. A job whose command never started
 * and whose release found no lease recorded (65) held none: no release.
 * A started job always reports its release, a 65 too (its lease went
 * missing, which is worth seeing).
 */
export function reportedRelease(started: unknown, release: PrivateRelease): PrivateRelease | undefined {
  return started !== true && release.exitCode === EXIT.dataRefused ? undefined : release;
}

export function releaseWhenEnded(subprocess: ResultPromise, releaseLease: (pid: number) => Promise<StageOutcome>): ResultPromise {
  const release = async (): Promise<PrivateRelease | undefined> => {
    const pid = subprocess.pid;
    if (pid === undefined) return undefined;
    const run = await releaseLease(pid);
    return { exitCode: run.exitCode, stderr: run.stderr };
  };
  const mark = (outcome: unknown, released: PrivateRelease | undefined): void => {
    if (outcome === null || typeof outcome !== "object" || released === undefined) return;
    const report = reportedRelease((outcome as { started?: unknown }).started, released);
    if (report !== undefined) Object.assign(outcome, { privateRelease: report });
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
