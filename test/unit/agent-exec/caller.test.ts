import { test } from "uvu";
import { checkCaller } from "../../../src/agent-exec/caller.ts";
import { EXIT } from "../../../src/constants.ts";
import type { ProcessCredentials } from "../../../src/os/proc-status.ts";
import { assertRefusal } from "../../helpers/refusal.ts";
import { imageIdentities } from "../../helpers/identities.ts";
import { agentIds } from "../../../src/accounts.ts";
import { SERVICE_CREDENTIALS } from "../../helpers/credentials.ts";

const ids = agentIds(imageIdentities());
const SERVICE = SERVICE_CREDENTIALS;
const caller = (change: Partial<ProcessCredentials>): ProcessCredentials => ({ ...SERVICE, ...change });

test("node holding SETUID and SETGID with NoNewPrivs (the spawner) may run clankie-agent-exec", () => {
  checkCaller(SERVICE, ids);
  checkCaller(caller({ capBnd: 0x1ffffffffffn, capInh: 0n }), ids);
});

test("refusals, each with its exit code and fix", () => {
  const singleUid = "start agent work from the service (spawnAgent), in a body started as root with the flags of ADR 0272 (docs/launch.md), which configures the agent uid clankie-agent";
  const fromTheService = "start agent work from the service (spawnAgent)";
  const noSpawner = "only the spawner runs clankie-agent-exec, and only a body started as root with the flags of ADR 0272 has one";
  const cases: ReadonlyArray<readonly [Partial<ProcessCredentials>, string, string]> = [
    [{ uids: [0, 0, 0, 0] }, "started by root: only the spawner, as node, runs clankie-agent-exec", fromTheService],
    [{ uids: [1000, 1000, 0, 1000] }, "started by root: only the spawner, as node, runs clankie-agent-exec", fromTheService],
    [{ uids: [1001, 1001, 1001, 1001] }, "started by the agent uid 1001: agent work cannot start agent work through clankie-agent-exec", "run the program directly"],
    [{ uids: [1000, 1000, 1001, 1000] }, "started by the agent uid 1001: agent work cannot start agent work through clankie-agent-exec", "run the program directly"],
    [{ uids: [2000, 2000, 2000, 2000] }, "started by uid 2000, not the service uid 1000 (node): only the spawner runs clankie-agent-exec", fromTheService],
    [{ uids: [1000, 2000, 1000, 1000] }, "started by uid 2000, not the service uid 1000 (node): only the spawner runs clankie-agent-exec", fromTheService],
    [{ capEff: 0n, capPrm: 0n, capAmb: 0n }, `the caller holds no SETGID, SETUID: ${noSpawner}`, singleUid],
    [{ capEff: 0x80n }, `the caller holds no SETGID: ${noSpawner}`, singleUid],
    [{ capPrm: 0x40n, capEff: 0xc0n }, `the caller holds no SETUID: ${noSpawner}`, singleUid],
    [{ noNewPrivs: false }, "NoNewPrivs is not set for the caller", "add --security-opt no-new-privileges to docker run"],
  ];
  for (const [change, what, fix] of cases) {
    assertRefusal(() => checkCaller(caller(change), ids), { exitCode: EXIT.launchRefused, what, fix });
  }
});

test.run();
