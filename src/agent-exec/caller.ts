/*
 * Who may run clankie-agent-exec: only node's uid holding SETUID and SETGID,
 * with NoNewPrivs set, which in a separated body is the spawner the root
 * phase starts and the private job's shim it starts in turn; the service
 * holds no capability (docs/security.md, "The service holds no capability").
 * Pure.
 */
import type { AgentIds } from "../accounts.ts";
import { maskOf, namesOf } from "../os/capabilities.ts";
import { AGENT_USER, EXIT, SPAWNER_CAPABILITIES, SERVICE_USER } from "../constants.ts";
import type { ProcessCredentials } from "../os/proc-status.ts";
import { Refusal } from "../report.ts";

/** The fix of every refusal of a caller that is not the spawner. */
const FROM_THE_SERVICE = "start agent work from the service (spawnAgent)";

export function checkCaller(status: ProcessCredentials, ids: AgentIds): void {
  const uid = status.uids[1];
  if (status.uids.some((id) => id === 0)) {
    throw new Refusal(EXIT.launchRefused, "started by root: only the spawner, as node, runs clankie-agent-exec", FROM_THE_SERVICE);
  }
  if (status.uids.some((id) => id === ids.uid)) {
    throw new Refusal(EXIT.launchRefused, `started by the agent uid ${ids.uid}: agent work cannot start agent work through clankie-agent-exec`, "run the program directly");
  }
  if (status.uids.some((id) => id !== ids.service)) {
    throw new Refusal(EXIT.launchRefused, `started by uid ${uid}, not the service uid ${ids.service} (${SERVICE_USER}): only the spawner runs clankie-agent-exec`, FROM_THE_SERVICE);
  }
  const missing = maskOf(SPAWNER_CAPABILITIES) & ~(status.capEff & status.capPrm);
  if (missing !== 0n) {
    throw new Refusal(
      EXIT.launchRefused,
      `the caller holds no ${namesOf(missing).join(", ")}: only the spawner runs clankie-agent-exec, and only a body started as root with the flags of ADR 0272 has one`,
      `start agent work from the service (spawnAgent), in a body started as root with the flags of ADR 0272 (docs/launch.md), which configures the agent uid ${AGENT_USER}`,
    );
  }
  if (!status.noNewPrivs) {
    throw new Refusal(EXIT.launchRefused, "NoNewPrivs is not set for the caller", "add --security-opt no-new-privileges to docker run");
  }
}
