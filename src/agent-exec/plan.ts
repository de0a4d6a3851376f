/*
 * Pure builders for the agent's exec chain and environment, so that the exact
 * argv is unit-tested without privileges:
 *
 *   shim (service uid, SETUID+SETGID)
 *    -> setpriv --reuid --regid --groups --inh-caps=-all --ambient-caps=-all
 *                                   capabilities(7): lowering the inheritable
 *                                   set lowers the ambient set; with both
 *                                   empty, execve(2) of a file without file
 *                                   capabilities leaves a non-root process
 *                                   with empty permitted and effective sets
 *    -> perl -T -e STAGE            the verification stage (src/stage/),
 *                                   as the agent: RLIMIT_NPROC (nproc=N,
 *                                   per real uid: the agent's fork bomb
 *                                   cannot take the service's process
 *                                   slots; refused with 75 when the uid is
 *                                   over it), setsid(2) unless the shim
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
import { agentGroups, type Identities } from "../accounts.ts";
import { AGENT_EXEC_NAME, AGENT_HOME, AGENT_UMASK, TOOLS } from "../constants.ts";
import { buildEnvironment, type Environment } from "../exec/environment.ts";
import { stageArgv } from "../stage/stage.ts";
import { type ConfinementRequest, confinementKeys } from "../confinement.ts";
import { withGitTrust } from "./git-trust.ts";

/** The agent's environment: the allowlist and the named variables of the shim's own environment, plus ours. */
export function agentEnvironment(shimEnv: NodeJS.ProcessEnv, names: readonly string[], ids: Identities): Environment {
  return withGitTrust(buildEnvironment({
    from: shimEnv,
    pass: names,
    set: { HOME: AGENT_HOME, USER: ids.agent.name, LOGNAME: ids.agent.name },
  }));
}

interface ChainBase {
  /** The variable stageEnvironment added for perl alone (removed before the command runs). */
  unset?: string | undefined;
  /** RLIMIT_NPROC the stage sets as the agent; undefined keeps the inherited limit (no hard limit can be raised). */
  nproc: number | undefined;
  keepFds: readonly number[];
}

/** Agent work: a command, always under the Landlock domain and seccomp filter `confinement` asks for. */
export interface AgentExecChain extends ChainBase {
  needSetsid: boolean;
  cwd: string;
  confinement: ConfinementRequest;
  /** An absolute path, then argv with argv[0]. */
  action: { path: string; argv: readonly string[] };
}

/** The signal stage: runs no agent code, unconfined so that it reaches every job's domain. */
export interface AgentSignalChain extends ChainBase {
  action: { signal: string; pgid: number };
}

export type AgentChain = AgentExecChain | AgentSignalChain;

function isExecChain(chain: AgentChain): chain is AgentExecChain {
  return "path" in chain.action;
}

/** argv (with argv[0]) of the whole chain, starting at setpriv. */
export function agentChainArgv(ids: Identities, chain: AgentChain): string[] {
  const groups = agentGroups(ids);
  const identity = {
    program: AGENT_EXEC_NAME,
    uid: ids.agent.uid,
    gid: ids.agent.gid,
    groups,
    caps: { inh: 0n, prm: 0n, eff: 0n, amb: 0n },
    keepFds: chain.keepFds,
    unset: chain.unset,
  };
  const stage = isExecChain(chain)
    ? stageArgv({
        ...identity,
        role: "agent",
        nproc: chain.nproc,
        // Agent code gets a session of its own (setsid(2) in the stage unless the shim already leads one).
        session: chain.needSetsid ? "new" : "own",
        umask: AGENT_UMASK,
        cwd: chain.cwd,
        confinement: confinementKeys(chain.confinement),
        action: chain.action,
      })
    : stageArgv({ ...identity, role: "signal", action: chain.action });
  return [
    TOOLS.setpriv,
    `--reuid=${ids.agent.uid}`,
    `--regid=${ids.agent.gid}`,
    `--groups=${groups.join(",")}`,
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--",
    ...stage,
  ];
}
