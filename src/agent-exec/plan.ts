/*
 * Pure builders for the agent's job, so that the exact request is
 * unit-tested without privileges:
 *
 *   the spawner's grab (node, SETUID+SETGID; src/perl/spawn-grab.pl)
 *    -> setgroups, setresgid, setresuid to the agent, capset(2) to nothing,
 *       in the grab's own process (the per-job shim: setpriv, setpriv-chain.ts)
 *    -> the verification stage (src/stage/), compiled into the grab (the
 *                                   shim's: perl -T -e STAGE), as the agent:
 *                                   RLIMIT_NPROC (nproc=N,
 *                                   per real uid: the agent's fork bomb
 *                                   cannot take the service's process
 *                                   slots; refused with 75 when the uid is
 *                                   over it), setsid(2) unless the job
 *                                   leads a session already (a new session
 *                                   has no controlling terminal, and TIOCSTI
 *                                   needs the target to be the caller's
 *                                   controlling terminal, tty_ioctl(4));
 *                                   reads /proc/self/status,
 *                                   /proc/self/stat and /proc/self/fd and
 *                                   refuses on any difference, then umask,
 *                                   chdir, the Landlock domain and seccomp
 *                                   filter of confinement.ts, execve
 *    -> COMMAND
 */
import type { AgentIds } from "../accounts.ts";
import { AGENT_EXEC_NAME, AGENT_HOME, AGENT_UMASK, AGENT_USER } from "../constants.ts";
import { buildEnvironment, type Environment } from "../exec/environment.ts";
import { type AgentStageRequest, type StageRequest, stageEnvironment, stageRequest } from "../stage/stage.ts";
import { type ConfinementRequest, confinementKeys } from "../confinement.ts";

/** A private job's lease: its group and directory (src/agent-exec/private-job.ts). */
export interface PrivateLease {
  group: number;
  dir: string;
}

/** The lease a private job runs with, and the image it may read (privateImageTree of private-job.ts). */
export interface PrivateJobLease extends PrivateLease {
  tree: readonly string[];
}

/** Where a private job's HOME and temporary files live: fresh, inside its lease. */
export function privateEnvironment(lease: PrivateLease): Environment {
  return { HOME: `${lease.dir}/home`, TMPDIR: `${lease.dir}/tmp`, TMUX_TMPDIR: `${lease.dir}/tmp` };
}

/** The agent's environment: the allowlist and the named variables of the shim's own environment, plus ours (which win over a named one). */
export function agentEnvironment(shimEnv: NodeJS.ProcessEnv, names: readonly string[], lease?: PrivateLease): Environment {
  return buildEnvironment({
    from: shimEnv,
    pass: names,
    set: { HOME: AGENT_HOME, USER: AGENT_USER, LOGNAME: AGENT_USER, ...(lease === undefined ? {} : privateEnvironment(lease)) },
  });
}

interface ChainBase {
  keepFds: readonly number[];
}

/** Agent work: a command, always under the Landlock domain and seccomp filter `confinement` asks for. */
export interface AgentExecChain extends ChainBase {
  /** The shim options the stage alone reads, as cli.ts wrote them (nproc=: RLIMIT_NPROC as the agent). */
  stageOptions: AgentStageRequest["options"];
  needSetsid: boolean;
  cwd: string;
  confinement: ConfinementRequest;
  /** The service's started marker (CLANKIE_STARTED_FD): the stage writes "S" to it just before it execs the command, close-on-exec. */
  startedFd?: number | undefined;
  /** An absolute path, then argv with argv[0]. */
  action: { path: string; argv: readonly string[] };
  /** A private job: its group joins the agent's, confinement.privateDir is its directory, and its tree the image it reads. */
  lease?: PrivateJobLease | undefined;
}

/** The signal stage: runs no agent code, unconfined so that it reaches every job's domain. */
export interface AgentSignalChain extends ChainBase {
  action: { signal: string; pgid: number };
}

export type AgentChain = AgentExecChain | AgentSignalChain;

/** The agent's identity as the stage checks it (a private job's `lease` adds its group), with the fds it keeps. */
export function agentIdentity(ids: AgentIds, keepFds: readonly number[], lease?: PrivateLease) {
  const groups = [...ids.groups, ...(lease === undefined ? [] : [lease.group])];
  return { program: AGENT_EXEC_NAME, uid: ids.uid, gid: ids.gid, groups, caps: { inh: 0n, prm: 0n, eff: 0n, amb: 0n }, keepFds };
}

function isExecChain(chain: AgentChain): chain is AgentExecChain {
  return "path" in chain.action;
}

/** The stage's request for `chain`: the agent's identity (a private job's lease adds its group), then its role's keys. */
export function agentStageRequest(ids: AgentIds, chain: AgentChain): StageRequest {
  if (!isExecChain(chain)) return { ...agentIdentity(ids, chain.keepFds), role: "signal", action: chain.action };
  return {
    ...agentIdentity(ids, chain.keepFds, chain.lease),
    role: "agent",
    options: chain.stageOptions,
    // Agent code gets a session of its own (setsid(2) in the stage unless the shim already leads one).
    session: chain.needSetsid ? "new" : "own",
    umask: AGENT_UMASK,
    cwd: chain.cwd,
    confinement: chain.lease === undefined ? confinementKeys(chain.confinement) : confinementKeys({ ...chain.confinement, privateDir: chain.lease.dir }, { topLevel: chain.lease.tree }),
    privateDir: chain.lease?.dir,
    startedFd: chain.startedFd,
    action: chain.action,
  };
}

/**
 * A job or a stop as the spawner's grab makes it itself (src/perl/spawn-grab.pl),
 * with no lease: "-stage", then the stage's request, which the grab runs
 * after its drop to the agent's identity (agentIdentity, given it at its
 * start); and the environment, as the shim's.
 */
export function agentGrabJob(ids: AgentIds, chain: AgentChain, shimEnv: NodeJS.ProcessEnv, names: readonly string[]): { chain: string[]; env: Environment } {
  return { chain: ["-stage", ...stageRequest(agentStageRequest(ids, chain))], env: stageEnvironment(agentEnvironment(shimEnv, names)) };
}
