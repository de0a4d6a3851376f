/*
 * RLIMIT_NPROC counts every task (process or thread) of a real uid
 * (setrlimit(2)). Since Linux 3.1 the limit is enforced at execve(2) after
 * the uid change: at the limit, setpriv would become the agent and then fail
 * to exec the verification stage, with setpriv's own message. So the shim
 * counts the agent uid's tasks first and refuses, in one line, when the new
 * agent process would not fit.
 */
import { readProcessTable } from "../os/proc-status.ts";

/** Tasks the new agent process adds: itself (the verification stage is single-threaded perl). */
export const NEW_AGENT_TASKS = 1;

/** Tasks (threads) of every process whose real uid is `uid`, as far as this pid namespace shows. */
export function countTasks(uid: number): number {
  return readProcessTable()
    .filter((entry) => entry.creds.uids[0] === uid)
    .reduce((total, entry) => total + entry.threads, 0);
}
