/*
 * clankie-agent-exec: the spawn shim the service calls for every piece of
 * model-directed work. It checks its caller, builds the agent's environment
 * from scratch, closes stray fds, raises oom_score_adj, and execs the chain of
 * plan.ts. No Node process stays resident: the service's child becomes the
 * agent's command, with its pid, exit status and signals.
 */
import { writeFileSync } from "node:fs";
import { agentIds, type Identities, readIdentities } from "../accounts.ts";
import { EXIT, STARTED_FD_VARIABLE, TOOLS } from "../constants.ts";
import { type ProcessSession, readSession } from "../os/proc-stat.ts";
import { readStatus } from "../os/proc-status.ts";
import { osCall, Refusal } from "../report.ts";
import { execReplace, prepareExec } from "../exec/replace.ts";
import { uncarried } from "../exec/environment.ts";
import { resolveCommand } from "../exec/rules.ts";
import { checkCaller } from "./caller.ts";
import type { AgentExecRequest } from "./cli.ts";
import { parseStartedFd } from "./run-args.ts";
import { closeStrayDescriptors } from "./descriptors.ts";
import type { AgentChain, PrivateJobLease } from "./plan.ts";
import { agentExec } from "./setpriv-chain.ts";

/**
 * Whether the verification stage must call setsid(2), from the shim's own
 * /proc/self/stat. setsid(2) fails (EPERM) for a process-group leader that
 * does not lead its session: refuse that case here, in one line. A session
 * leader (spawnAgent uses detached) needs no setsid at all.
 */
export function sessionPlan(session: ProcessSession): boolean {
  if (session.session === session.pid) {
    if (session.ttyNr !== 0) {
      throw new Refusal(EXIT.launchRefused, "the shim leads a session that has a controlling terminal", "spawn it in a new session without a terminal (spawnAgent does)");
    }
    return false;
  }
  if (session.pgrp === session.pid) {
    throw new Refusal(EXIT.launchRefused, "the shim leads a process group but not a session, and setsid(2) refuses a process-group leader", "spawn it detached (a new session, as spawnAgent does) or inside its parent's process group");
  }
  return true;
}

function raiseOomScore(value: number): void {
  osCall("write", "/proc/self/oom_score_adj", () => writeFileSync("/proc/self/oom_score_adj", `${value}\n`));
}

function checkedIdentities(): Identities {
  const ids = readIdentities();
  checkCaller(readStatus(), agentIds(ids));
  return ids;
}

/*
 * RLIMIT_NPROC (--nproc) counts the tasks of a real uid (setrlimit(2)),
 * counted per user namespace and uid since Linux 5.14, across every pid
 * namespace, which no scan of this one's /proc could see. The verification
 * stage sets it as the agent, right after the uid change (one exec fewer
 * than a prlimit(1) before setpriv), and refuses the spawn in one line, exit
 * 75 (README, "Exit codes"), when the agent uid already runs more tasks than
 * that: the rule the kernel applied at setpriv's execve(2) when the limit
 * was set before the uid change (src/stage/stage.pl, "processes"). So the
 * shim does not count the agent's tasks: that scan cost a read of every
 * /proc/<pid>/status on each spawn, growing with the processes in the body.
 */

/**
 * oomScoreAdj undefined leaves the value as it is (the signal stage runs no
 * agent code). `takeLease` (a private job) runs last before the exec: its
 * setegid(2) makes the shim non-dumpable (prctl(2) PR_SET_DUMPABLE: a
 * credential change resets it), so that its /proc/self is root's until the
 * execve(2) and oom_score_adj and /proc/self/fd could no longer be used.
 */
function execChain(ids: Identities, chain: AgentChain, oomScoreAdj: number | undefined, envNames: readonly string[], takeLease?: () => PrivateJobLease): never {
  // Every tool of the chain passes the exec rules; execReplace gates the first (argv[0]) itself.
  prepareExec({ command: TOOLS.perl, args: [], env: {}, trustedUids: [0] });
  if (oomScoreAdj !== undefined) raiseOomScore(oomScoreAdj);
  // The started marker crosses to the stage, which closes it at the exec (stage.pl, "exec").
  const startedFd = "startedFd" in chain ? chain.startedFd : undefined;
  closeStrayDescriptors(chain.keepFds, startedFd);
  const { argv, env } = agentExec(agentIds(ids), chain, uncarried(process.env), envNames, takeLease?.());
  execReplace({ command: argv[0]!, args: argv.slice(1), argv0: argv[0], env, trustedUids: [0] });
}

/**
 * A private job's code (src/agent-exec/private-job.ts), which only the
 * private-job bundle holds (src/agent-exec/private-start.ts, build.mjs): the
 * ordinary shim's bundle passes none and never compiles it.
 */
export interface PrivateJobs {
  leasePrivateGroup(ids: Identities, startedFd?: number): PrivateJobLease;
  releaseJobLease(ids: Identities, pid: number): number;
}

function privateJobs(jobs: PrivateJobs | undefined): PrivateJobs {
  if (jobs === undefined) throw new Error("a private job reached the ordinary shim's bundle: build.mjs's main script routes --private-job and --private-cleanup to src/agent-exec/private-start.ts's");
  return jobs;
}

export function runAgentExec(request: Extract<AgentExecRequest, { kind: "run" }>, jobs?: PrivateJobs): never {
  const ids = checkedIdentities();
  // Resolved here, against the fixed PATH or --cwd; whether the agent may
  // execute it is for the kernel to say, as the agent, in the verified stage.
  const path = resolveCommand(request.command[0]!, request.cwd);
  // Read from the shim's own environment as it came, never from the agent's variables (carried, which uncarried would name back).
  const startedFd = parseStartedFd(process.env[STARTED_FD_VARIABLE], request.keepFds);
  return execChain(
    ids,
    {
      needSetsid: sessionPlan(readSession()),
      stageOptions: request.stageOptions,
      cwd: request.cwd,
      keepFds: request.keepFds,
      startedFd,
      confinement: request.confinement,
      action: { path, argv: request.command },
    },
    request.oomScoreAdj,
    request.env,
    request.privateJob ? () => privateJobs(jobs).leasePrivateGroup(ids, startedFd) : undefined,
  );
}

/**
 * The signal stage's plan. It leaves oom_score_adj as it is: the stage runs
 * no agent code, and writing 0 would lower a value the launcher raised,
 * which a kernel that keeps oom_score_adj_min refuses without
 * CAP_SYS_RESOURCE, so that agent work could no longer be stopped.
 */
export function signalPlan(request: Extract<AgentExecRequest, { kind: "signal" }>): { chain: AgentChain; oomScoreAdj: number | undefined } {
  return {
    chain: { keepFds: [], action: { signal: request.signal, pgid: request.pgid } },
    oomScoreAdj: undefined,
  };
}

/** --private-cleanup PID: the end of the lease job PID held (the spawner runs it when the job has ended). */
export function runPrivateCleanup(request: Extract<AgentExecRequest, { kind: "private-cleanup" }>, jobs?: PrivateJobs): number {
  const { releaseJobLease } = privateJobs(jobs);
  const ids = checkedIdentities();
  // The cleanup stage refuses any fd it was not given, as every stage does.
  closeStrayDescriptors([]);
  return releaseJobLease(ids, request.pid);
}

/**
 * Refuses a --pgid that is the shim's own process group (`ownPgrp`) or its
 * caller's (`callerPgrp`, undefined for a parent outside this pid namespace:
 * ppid 0, docker exec, whose group cannot be this one). kill(2) with -pgid
 * reaches every member the sender may signal. As the agent, in the shim's own
 * process group (or its caller's: the service's), that is the signal stage
 * itself: it kills itself, or the call reports success while the service's
 * processes got nothing.
 */
export function checkSignalTarget(pgid: number, ownPgrp: number, callerPgrp: number | undefined): void {
  if (pgid === ownPgrp || pgid === callerPgrp) throw new Refusal(EXIT.usage, `--pgid ${pgid} is the process group of clankie-agent-exec or of its caller, not agent work's`, "pass the process group of a job spawnAgent started (its child.pid)");
}

export function runSignal(request: Extract<AgentExecRequest, { kind: "signal" }>): never {
  const ids = checkedIdentities();
  checkSignalTarget(request.pgid, readSession().pgrp, process.ppid > 0 ? readSession(process.ppid).pgrp : undefined);
  const { chain, oomScoreAdj } = signalPlan(request);
  return execChain(ids, chain, oomScoreAdj, []);
}
