import { test } from "uvu";
import { checkCaller } from "../../../src/agent-exec/caller.ts";
import { EXIT } from "../../../src/constants.ts";
import type { ProcessCredentials } from "../../../src/os/proc-status.ts";
import { assertRefusal } from "../../helpers/refusal.ts";
import { imageIdentities } from "../../helpers/identities.ts";
import { SERVICE_CREDENTIALS } from "../../helpers/credentials.ts";

const ids = imageIdentities();
const SERVICE = SERVICE_CREDENTIALS;
const caller = (change: Partial<ProcessCredentials>): ProcessCredentials => ({ ...SERVICE, ...change });

test("the service holding SETUID and SETGID with NoNewPrivs may call the shim", () => {
  checkCaller(SERVICE, ids);
  checkCaller(caller({ capBnd: 0x1ffffffffffn, capInh: 0n }), ids);
});

test("refusals, each with its exit code and fix", () => {
  const singleUid =
    "start the container as root with the flags of ADR 0272 (docs/launch.md) so that clankie-separate hands the service SETUID and SETGID";
  const cases: ReadonlyArray<readonly [Partial<ProcessCredentials>, string, string]> = [
    [{ uids: [0, 0, 0, 0] }, "started by root", "clankie-agent-exec is for the service; as an operator use: docker exec --user node CONTAINER clankie-agent-exec ..."],
    [{ uids: [1000, 1000, 0, 1000] }, "started by root", "clankie-agent-exec is for the service; as an operator use: docker exec --user node CONTAINER clankie-agent-exec ..."],
    [{ uids: [1001, 1001, 1001, 1001] }, "started by the agent uid 1001", "agent work cannot start agent work through the shim; run the program directly"],
    [{ uids: [1000, 1000, 1001, 1000] }, "started by the agent uid 1001", "agent work cannot start agent work through the shim; run the program directly"],
    [{ uids: [2000, 2000, 2000, 2000] }, "started by uid 2000, not the service uid 1000 (node)", "run it as node"],
    [{ uids: [1000, 2000, 1000, 1000] }, "started by uid 2000, not the service uid 1000 (node)", "run it as node"],
    [{ capEff: 0n, capPrm: 0n, capAmb: 0n }, "the service holds no SETGID, SETUID: this body runs single-uid and no agent uid (clankie-agent) is configured", singleUid],
    [{ capEff: 0x80n }, "the service holds no SETGID: this body runs single-uid and no agent uid (clankie-agent) is configured", singleUid],
    [{ capPrm: 0x40n, capEff: 0xc0n }, "the service holds no SETUID: this body runs single-uid and no agent uid (clankie-agent) is configured", singleUid],
    [{ noNewPrivs: false }, "NoNewPrivs is not set for the service", "add --security-opt no-new-privileges to docker run"],
  ];
  for (const [change, what, fix] of cases) {
    assertRefusal(() => checkCaller(caller(change), ids), { exitCode: EXIT.launchRefused, what, fix });
  }
});

test.run();
