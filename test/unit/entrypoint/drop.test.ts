import { test } from "uvu";
import * as assert from "uvu/assert";
import { parseEntrypointArgs } from "../../../src/cli.ts";
import { SETPRIV, serviceExpectation, setprivToServiceArgs, verifyStageArgs, VERIFY_SERVICE_FLAG } from "../../../src/entrypoint/drop.ts";
import { credentialDifferences, type ProcessCredentials } from "../../../src/proc-status.ts";
import { imageIdentities } from "../helpers/identities.ts";

const ids = imageIdentities();
const SELF = "/usr/local/sbin/clankie-separate";

test("setpriv argv: become node with SETUID and SETGID as inheritable, ambient and the whole bounding set", () => {
  assert.is(SETPRIV, "/usr/bin/setpriv");
  assert.equal(setprivToServiceArgs(ids, ["/next", "a"]), [
    "--reuid=1000",
    "--regid=1000",
    "--groups=1000,1002",
    "--inh-caps=-all,+setuid,+setgid",
    "--ambient-caps=-all,+setuid,+setgid",
    "--bounding-set=-all,+setuid,+setgid",
    "--",
    "/next",
    "a",
  ]);
});

test("the whole drop: setpriv, then this executable's verification stage, then the service command", () => {
  const command = ["node", "/state/install/server.js", "--port=0", "--"];
  assert.equal(setprivToServiceArgs(ids, verifyStageArgs(SELF, ids, command)), [
    "--reuid=1000",
    "--regid=1000",
    "--groups=1000,1002",
    "--inh-caps=-all,+setuid,+setgid",
    "--ambient-caps=-all,+setuid,+setgid",
    "--bounding-set=-all,+setuid,+setgid",
    "--",
    SELF,
    "--verify-service",
    "--uid=1000",
    "--gid=1000",
    "--groups=1000,1002",
    "--",
    "node",
    "/state/install/server.js",
    "--port=0",
    "--",
  ]);
});

test("the verification stage's argv parses back to exactly what was asked", () => {
  const command = ["node", "server.js", "--uid=0", "--"];
  const argv = verifyStageArgs(SELF, ids, command);
  assert.is(argv[1], VERIFY_SERVICE_FLAG);
  assert.equal(parseEntrypointArgs(argv.slice(1)), { kind: "verify-service", uid: 1000, gid: 1000, groups: [1000, 1002], command });
});

test("other ids come from the identities, not from constants", () => {
  const other = { ...ids, service: { ...ids.service, uid: 2000, gid: 2100 }, serviceGroups: [2100, 2200, 2300] };
  const args = setprivToServiceArgs(other, ["x"]);
  assert.equal(args.slice(0, 3), ["--reuid=2000", "--regid=2100", "--groups=2100,2200,2300"]);
  assert.equal(verifyStageArgs(SELF, other, ["x"]), [SELF, "--verify-service", "--uid=2000", "--gid=2100", "--groups=2100,2200,2300", "--", "x"]);
});

test("serviceExpectation: what the verification stage must read in /proc/self/status", () => {
  assert.equal(serviceExpectation(ids), {
    uid: 1000,
    gid: 1000,
    groups: [1000, 1002],
    capInh: 0xc0n,
    capPrm: 0xc0n,
    capEff: 0xc0n,
    capAmb: 0xc0n,
    capBnd: 0xc0n,
    noNewPrivs: true,
  });
});

test("serviceExpectation: a correct drop passes, a failed ambient raise does not", () => {
  const dropped: ProcessCredentials = {
    uids: [1000, 1000, 1000, 1000],
    gids: [1000, 1000, 1000, 1000],
    groups: [1000, 1002],
    capInh: 0xc0n,
    capPrm: 0xc0n,
    capEff: 0xc0n,
    capBnd: 0xc0n,
    capAmb: 0xc0n,
    noNewPrivs: true,
  };
  assert.equal(credentialDifferences(dropped, serviceExpectation(ids)), []);
  // setpriv exits 0 even when the ambient raise fails: the kernel then clears permitted and effective at exec
  assert.equal(credentialDifferences({ ...dropped, capAmb: 0n, capPrm: 0n, capEff: 0n }, serviceExpectation(ids)), [
    "CapPrm 0x0 (want 0xc0)",
    "CapEff 0x0 (want 0xc0)",
    "CapAmb 0x0 (want 0xc0)",
  ]);
  assert.equal(credentialDifferences({ ...dropped, capBnd: 0x1cbn }, serviceExpectation(ids)), ["CapBnd 0x1cb (want 0xc0)"]);
});

test.run();
