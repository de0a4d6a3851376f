/*
 * Pure builders for the agent's exec chain and environment, so that the exact
 * argv is unit-tested without privileges:
 *
 *   shim (service uid, SETUID+SETGID)
 *    -> prlimit --nproc=N:N         RLIMIT_NPROC counts per real uid: the
 *                                   agent's fork bomb cannot take the
 *                                   service's process slots
 *    -> setpriv --reuid --regid --groups --inh-caps=-all --ambient-caps=-all
 *                                   capabilities(7): lowering the inheritable
 *                                   set lowers the ambient set; with both
 *                                   empty, execve(2) of a file without file
 *                                   capabilities leaves a non-root process
 *                                   with empty permitted and effective sets
 *    -> [setsid]                    a new session without a controlling
 *                                   terminal: TIOCSTI needs the target to be
 *                                   the caller's controlling terminal (tty_ioctl(4))
 *    -> clankie-agent-exec --verify-agent
 *                                   this executable again, as the agent: reads
 *                                   /proc/self/status and refuses on any
 *                                   difference, then chdir, umask, execve
 *    -> COMMAND
 */
import type { Identities } from "../accounts.ts";
import { AGENT_UMASK, STATE_AGENT_NAME, STATE_DIR, TOOLS } from "../constants.ts";
import { VERIFY_AGENT_FLAG } from "../cli.ts";
import { buildEnvironment, type Environment } from "../system-exec.ts";

export const AGENT_HOME = `${STATE_DIR}/${STATE_AGENT_NAME}`;
export { AGENT_UMASK };

export function agentGroups(ids: Identities): number[] {
  return [...new Set([ids.agent.gid, ids.workspaceGroup.gid])].sort((a, b) => a - b);
}

/** The agent's environment: the allowlist and the named variables of the shim's own environment, plus ours. */
export function agentEnvironment(shimEnv: NodeJS.ProcessEnv, names: readonly string[], ids: Identities): Environment {
  return buildEnvironment({
    from: shimEnv,
    pass: names,
    set: { HOME: AGENT_HOME, USER: ids.agent.name, LOGNAME: ids.agent.name },
  });
}

export interface AgentChain {
  needSetsid: boolean;
  /** RLIMIT_NPROC to set; undefined keeps the inherited limit (prlimit cannot raise a hard limit). */
  nproc: number | undefined;
  cwd: string;
  keepFds: readonly number[];
  self: string;
  /** What the verified stage does: exec a command, or signal a process group. */
  action: { exec: readonly string[] } | { signal: string; pgid: number };
}

/** argv (with argv[0]) of the whole chain, starting at prlimit. */
export function agentChainArgv(ids: Identities, chain: AgentChain): string[] {
  const groups = agentGroups(ids);
  const verify = [
    chain.self,
    VERIFY_AGENT_FLAG,
    `--uid=${ids.agent.uid}`,
    `--gid=${ids.agent.gid}`,
    `--groups=${groups.join(",")}`,
    `--cwd=${chain.cwd}`,
    ...chain.keepFds.map((fd) => `--keep-fd=${fd}`),
    ...("signal" in chain.action ? [`--signal=${chain.action.signal}`, `--pgid=${chain.action.pgid}`] : []),
    "--",
    ...("exec" in chain.action ? chain.action.exec : []),
  ];
  return [
    ...(chain.nproc === undefined ? [] : [TOOLS.prlimit, `--nproc=${chain.nproc}:${chain.nproc}`, "--"]),
    TOOLS.setpriv,
    `--reuid=${ids.agent.uid}`,
    `--regid=${ids.agent.gid}`,
    `--groups=${groups.join(",")}`,
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--",
    ...(chain.needSetsid ? [TOOLS.setsid, "--"] : []),
    ...verify,
  ];
}

export const AGENT_UMASK_OCTAL = AGENT_UMASK.toString(8).padStart(4, "0");
