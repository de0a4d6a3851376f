/*
 * RLIMIT_NPROC counts every task (process or thread) of a real uid
 * (setrlimit(2)). The agent-side verification stage is this executable, and
 * Node cannot start without its threads: at the limit it would abort with a
 * native assertion instead of a refusal. So the shim counts the agent uid's
 * tasks first and refuses, in one line, when the new stage would not fit.
 */
import { readProcessTable } from "../proc-status.ts";

/** Tasks a verification stage needs: the main thread, V8's platform workers, libuv's. */
export const VERIFY_STAGE_TASKS = 16;

/** Tasks (threads) of every process whose real uid is `uid`, as far as this pid namespace shows. */
export function countTasks(uid: number): number {
  return readProcessTable()
    .filter((entry) => entry.creds.uids[0] === uid)
    .reduce((total, entry) => total + entry.threads, 0);
}
