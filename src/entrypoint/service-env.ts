/*
 * The service's environment: the launcher's variables, less
 * those that load code into a process, plus the fixed PATH, node's HOME, USER
 * and LOGNAME, and the CLANKIE_* variables that tell the service an agent uid
 * is configured. Pure.
 */
import type { Identities } from "../accounts.ts";
import { AGENT_EXEC_PATH, SERVICE_ENV, SYSTEM_PATH } from "../constants.ts";
import { type Environment, isCodeLoadingVariable } from "../exec/environment.ts";

export interface ServiceEnvironment {
  env: Environment;
  dropped: string[];
}

export function serviceEnvironment(launcher: NodeJS.ProcessEnv, ids: Identities): ServiceEnvironment {
  const env: Environment = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(launcher)) {
    if (value === undefined) continue;
    // CLANKIE_* are ours (and the service's) to set: a launcher cannot
    // pre-declare an agent uid or the boundary for the service.
    if (isCodeLoadingVariable(name) || name.startsWith("CLANKIE_")) dropped.push(name);
    else env[name] = value;
  }
  env.PATH = SYSTEM_PATH;
  env.HOME = ids.service.home;
  env.USER = ids.service.name;
  env.LOGNAME = ids.service.name;
  env[SERVICE_ENV.separation] = "1";
  env[SERVICE_ENV.agentUser] = ids.agent.name;
  env[SERVICE_ENV.agentUid] = String(ids.agent.uid);
  env[SERVICE_ENV.agentExec] = AGENT_EXEC_PATH;
  return { env, dropped: dropped.sort() };
}
