/*
 * RLIMIT_NPROC counts every task (process or thread) of a real uid
 * (setrlimit(2)). The agent-side verification stage is this executable, and
 * Node cannot start without its threads: at the limit it would abort with a
 * native assertion instead of a refusal. So the shim counts the agent uid's
 * tasks first and refuses, in one line, when the new stage would not fit.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Tasks a verification stage needs: the main thread, V8's platform workers, libuv's. */
export const VERIFY_STAGE_TASKS = 16;

/** Sum of the Threads: field of every process whose real uid is `uid`. */
export function countTasks(uid: number): number {
  let total = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let text: string;
    try {
      text = readFileSync(`/proc/${name}/status`, "latin1");
    } catch {
      continue; // exited since readdir
    }
    const real = /^Uid:\s+(\d+)/m.exec(text);
    if (!real || Number(real[1]) !== uid) continue;
    total += Number(/^Threads:\s+(\d+)/m.exec(text)?.[1] ?? 1);
  }
  return total;
}
