/*
 * The per-spawn shim's chain (clankie-agent-exec run by hand, a private job,
 * a lease's cleanup): setpriv makes the drop to the agent, then execs the
 * verification stage as a perl of its own. The spawner's own jobs and stops
 * never take it: its grab makes the drop and runs the stage itself
 * (src/perl/spawn-grab.pl, plan.ts's agentGrabJob).
 *
 *   setpriv --reuid --regid --groups --inh-caps=-all --ambient-caps=-all
 *                                   capabilities(7): lowering the inheritable
 *                                   set lowers the ambient set; with both
 *                                   empty, execve(2) of a file without file
 *                                   capabilities leaves a non-root process
 *                                   with empty permitted and effective sets
 *    -> perl -T -e STAGE -> COMMAND
 */
import type { AgentIds } from "../accounts.ts";
import { TOOLS } from "../constants.ts";
import type { Environment } from "../exec/environment.ts";
import { stageArgv } from "../stage/stage-argv.ts";
import { stageEnvironment } from "../stage/stage.ts";
import { type AgentChain, agentEnvironment, agentStageRequest, type PrivateJobLease } from "./plan.ts";

/** argv (with argv[0]) of the drop to `identity` by setpriv, then its `stage` (stageArgv). */
export function agentDropArgv(identity: { uid: number; gid: number; groups: readonly number[] }, stage: readonly string[]): string[] {
  return [TOOLS.setpriv, `--reuid=${identity.uid}`, `--regid=${identity.gid}`, `--groups=${identity.groups.join(",")}`, "--inh-caps=-all", "--ambient-caps=-all", "--", ...stage];
}

/** argv (with argv[0]) of the whole chain, starting at setpriv. (A private job's cleanup chain is private-job.ts's.) */
export function agentChainArgv(ids: AgentIds, chain: AgentChain): string[] {
  const request = agentStageRequest(ids, chain);
  return agentDropArgv(request, stageArgv(request));
}

/**
 * The exec the shim makes: the chain's argv from setpriv on, and the
 * environment setpriv starts with, the agent's (`names` taken from
 * `shimEnv`), carried past setpriv and perl (stageEnvironment). A private
 * job's `lease` joins both.
 */
export function agentExec(ids: AgentIds, chain: AgentChain, shimEnv: NodeJS.ProcessEnv, names: readonly string[], lease?: PrivateJobLease): { argv: string[]; env: Environment } {
  return { argv: agentChainArgv(ids, lease === undefined ? chain : { ...chain, lease }), env: stageEnvironment(agentEnvironment(shimEnv, names, lease)) };
}
