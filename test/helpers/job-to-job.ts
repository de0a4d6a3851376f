/*
 * The verdict on the stand-in service's "processes" mode, shared by the
 * sandbox and the image test: job A's attempts on job B's limits, priority,
 * scheduling and I/O priority, and the sockets agent work may make (also
 * with network "none"), through the shim and by the agent's uid alone (the
 * control). Job B's /proc, read by the service, is the judge.
 */
import * as assert from "uvu/assert";

export interface JobState {
  fsize: string;
  nofile: string;
  nice: number;
  policy: number;
  cpus: string | null;
  ioprio: string;
}

export interface Processes {
  port: number;
  before: JobState;
  afterConfined: JobState;
  afterControl: JobState;
  confined: Record<string, string>;
  confinedExit: number;
  confinedStderr: string;
  offline: Record<string, string>;
  offlineExit: number;
  offlineStderr: string;
  control: Record<string, string>;
  controlStderr: string;
}

/** Job A's attempts on job B and its own, and the sockets: what the seccomp filter answers (the control must get "ok" for each). */
export const FILTERED: Readonly<Record<string, string>> = {
  prlimit: "EPERM",
  prlimit_high: "EPERM", // PID + 2^32: the kernel reads PID, so does the filter
  renice: "EPERM",
  sched_idle: "EPERM",
  affinity: "EPERM",
  ioprio: "EPERM",
  renice_user: "EPERM",
  ioprio_user: "EPERM",
  prlimit_own_pid: "EPERM", // only pid 0 is the caller to the filter
  self_prlimit: "ok",
  self_renice: "ok",
  self_sched: "ok",
  self_affinity: "ok",
  self_ioprio: "ok",
  tcp_socket: "ok",
  tcp6_socket: "ok",
  udp_socket: "ok",
  netlink_route: "ok",
  unix_pair: "ok",
  mptcp: "EPROTONOSUPPORT", // to a port denied to TCP; Landlock's port rules do not see MPTCP
  udp_bind: "ok", // of the same port: --deny-bind covers TCP only (docs/security.md)
};

export const OFFLINE: Readonly<Record<string, string>> = {
  tcp_socket: "EAFNOSUPPORT",
  tcp6_socket: "EAFNOSUPPORT",
  udp_socket: "EAFNOSUPPORT",
  netlink_route: "EAFNOSUPPORT",
  unix_pair: "ok",
  mptcp: "EAFNOSUPPORT",
  udp_bind: "EAFNOSUPPORT",
};

/** One line per attempt: through the shim, with network "none", as the uid alone. */
export function processesTable(result: Processes): string[] {
  return Object.keys(FILTERED).map((id) => `${id.padEnd(16)} confined ${String(result.confined[id]).padEnd(16)} none ${String(result.offline[id] ?? "-").padEnd(13)} uid alone ${result.control[id]}`);
}

/** Every attempt denied or allowed as FILTERED and OFFLINE say, every control "ok", and job B changed by the control only. */
export function judgeProcesses(result: Processes): void {
  assert.is(result.confinedExit, 0, result.confinedStderr);
  assert.is(result.offlineExit, 0, result.offlineStderr);
  const ids = Object.keys(FILTERED);
  const controlFailed = ids.filter((id) => result.control[id] !== "ok").map((id) => `${id}=${result.control[id]}`);
  assert.equal(controlFailed, [], `these attempts fail even without the filter: they prove nothing\n${result.controlStderr}`);
  assert.equal(Object.fromEntries(ids.map((id) => [id, result.confined[id]])), FILTERED);
  assert.equal(result.offline, OFFLINE);
  // Job B's /proc is the judge: untouched by the confined job, changed by the control.
  assert.equal(result.afterConfined, result.before, "job A changed job B through the filter");
  assert.is.not(result.before.cpus, "0", "one CPU only: the affinity attempt would prove nothing");
  assert.is.not(result.before.fsize, "0:0");
  assert.equal(
    { fsize: result.afterControl.fsize, nofile: result.afterControl.nofile, nice: result.afterControl.nice, policy: result.afterControl.policy, cpus: result.afterControl.cpus },
    { fsize: "0:0", nofile: "64:64", nice: 19, policy: 5 /* SCHED_IDLE */, cpus: "0" },
  );
  assert.match(result.afterControl.ioprio, /^idle/);
  assert.not.match(result.before.ioprio, /^idle/);
}
