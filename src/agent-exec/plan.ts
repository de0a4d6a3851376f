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
 *    -> perl -T -e VERIFIER         the verification stage (src/verifier.ts),
 *                                   as the agent: setsid(2) unless the shim
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
import { AGENT_EXEC_NAME, AGENT_UMASK, STATE_AGENT_NAME, STATE_DIR, TOOLS } from "../constants.ts";
import { buildEnvironment, type Environment } from "../exec/environment.ts";
import { verifierArgv } from "../verifier.ts";
import { type ConfinementRequest, confinementKeys } from "../confinement.ts";
import { withGitTrust } from "./git-trust.ts";

export const AGENT_HOME = `${STATE_DIR}/${STATE_AGENT_NAME}`;

/** The agent's environment: the allowlist and the named variables of the shim's own environment, plus ours. */
export function agentEnvironment(shimEnv: NodeJS.ProcessEnv, names: readonly string[], ids: Identities): Environment {
  return withGitTrust(buildEnvironment({
    from: shimEnv,
    pass: names,
    set: { HOME: AGENT_HOME, USER: ids.agent.name, LOGNAME: ids.agent.name },
  }));
}

export interface AgentChain {
  needSetsid: boolean;
  /** The variable stageEnvironment added for perl alone (removed before the command runs). */
  unset?: string;
  /** RLIMIT_NPROC to set; undefined keeps the inherited limit (prlimit cannot raise a hard limit). */
  nproc: number | undefined;
  cwd: string;
  keepFds: readonly number[];
  /** The Landlock domain and seccomp filter the command runs under (agent commands only, never the signal stage). */
  confinement?: ConfinementRequest;
  /** What the verified stage does: exec a program (absolute path, then argv with argv[0]), or signal a process group. */
  action: { path: string; argv: readonly string[] } | { signal: string; pgid: number };
}

/** argv (with argv[0]) of the whole chain, starting at prlimit. */
export function agentChainArgv(ids: Identities, chain: AgentChain): string[] {
  const groups = agentGroups(ids);
  const exec = "path" in chain.action;
  const verify = verifierArgv({
    program: AGENT_EXEC_NAME,
    role: "agent",
    uid: ids.agent.uid,
    gid: ids.agent.gid,
    groups,
    caps: { inh: 0n, prm: 0n, eff: 0n, amb: 0n },
    // Agent code gets a session of its own (setsid(2) in the stage unless the
    // shim already leads one); the signal stage runs no agent code.
    ...(exec ? { session: chain.needSetsid ? "new" : "own" } as const : {}),
    keepFds: chain.keepFds,
    ...(exec ? { umask: AGENT_UMASK, cwd: chain.cwd } : {}),
    ...(chain.unset === undefined ? {} : { unset: chain.unset }),
    ...(exec && chain.confinement ? { confinement: confinementKeys(chain.confinement) } : {}),
    action: chain.action,
  });
  return [
    ...(chain.nproc === undefined ? [] : [TOOLS.prlimit, `--nproc=${chain.nproc}:${chain.nproc}`, "--"]),
    TOOLS.setpriv,
    `--reuid=${ids.agent.uid}`,
    `--regid=${ids.agent.gid}`,
    `--groups=${groups.join(",")}`,
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--",
    ...verify,
  ];
}
