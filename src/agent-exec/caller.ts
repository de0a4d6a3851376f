/*
 * Who may call the shim: only the service uid, holding
 * SETUID and SETGID, with NoNewPrivs set. Pure.
 */
import type { Identities } from "../accounts.ts";
import { maskOf, namesOf } from "../os/capabilities.ts";
import { AGENT_USER, EXIT, SERVICE_CAPABILITIES, SERVICE_USER } from "../constants.ts";
import type { ProcessCredentials } from "../os/proc-status.ts";
import { Refusal } from "../report.ts";

export function checkCaller(status: ProcessCredentials, ids: Identities): void {
  const uid = status.uids[1];
  if (status.uids.some((id) => id === 0)) {
    throw new Refusal(EXIT.launchRefused, "started by root", `clankie-agent-exec is for the service; as an operator use: docker exec --user ${SERVICE_USER} CONTAINER clankie-agent-exec ...`);
  }
  if (status.uids.some((id) => id === ids.agent.uid)) {
    throw new Refusal(EXIT.launchRefused, `started by the agent uid ${ids.agent.uid}`, "agent work cannot start agent work through the shim; run the program directly");
  }
  if (status.uids.some((id) => id !== ids.service.uid)) {
    throw new Refusal(EXIT.launchRefused, `started by uid ${uid}, not the service uid ${ids.service.uid} (${SERVICE_USER})`, `run it as ${SERVICE_USER}`);
  }
  const missing = maskOf(SERVICE_CAPABILITIES) & ~(status.capEff & status.capPrm);
  if (missing !== 0n) {
    throw new Refusal(
      EXIT.launchRefused,
      `the service holds no ${namesOf(missing).join(", ")}: this body runs single-uid and no agent uid (${AGENT_USER}) is configured`,
      "start the container as root with the flags of ADR 0272 (docs/launch.md) so that clankie-separate hands the service SETUID and SETGID",
    );
  }
  if (!status.noNewPrivs) {
    throw new Refusal(EXIT.launchRefused, "NoNewPrivs is not set for the service", "add --security-opt no-new-privileges to docker run");
  }
}
