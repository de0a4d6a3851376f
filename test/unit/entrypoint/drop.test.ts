import { test } from "uvu";
import * as assert from "uvu/assert";
import { serviceCommandLine, setprivToSpawnerArgs, verifyStageArgs } from "../../../src/entrypoint/drop.ts";
import { stageProgram } from "../../../src/stage/stage.ts";
import { imageIdentities } from "../../helpers/identities.ts";

const ids = imageIdentities();
const PERL = ["/usr/bin/perl", "-T", "-C0", "-e", stageProgram(["service"]), "--"];
/** setpriv's options of the drop: node, its groups, SETUID and SETGID as inheritable, ambient and the whole bounding set. */
const TO_SERVICE = ["--reuid=1000", "--regid=1000", "--groups=1000,1002", "--inh-caps=-all,+setuid,+setgid", "--ambient-caps=-all,+setuid,+setgid", "--bounding-set=-all,+setuid,+setgid"];

test("setpriv argv: become node with SETUID and SETGID as inheritable, ambient and the whole bounding set", () => {
  assert.equal(setprivToSpawnerArgs(ids, ["/next", "a"]), [
    ...TO_SERVICE,
    "--",
    "/next",
    "a",
  ]);
});

test("the whole drop: setpriv, the verification stage as the service, then tini and the service command", () => {
  const command = ["node", "/state/install/server.js", "--port=0", "--"];
  const line = serviceCommandLine(command, "/usr/local/bin/node", 1, true);
  assert.equal(setprivToSpawnerArgs(ids, verifyStageArgs(ids, line)), [
    ...TO_SERVICE,
    "--",
    ...PERL,
    "clankie-separate",
    "service",
    "uid=1000",
    "gid=1000",
    "groups=1000,1002",
    "inh=c0",
    "prm=c0",
    "eff=c0",
    "amb=c0",
    "nnp=1",
    "bnd=c0",
    "umask=0007",
    "--",
    "/usr/bin/tini",
    "tini",
    "--",
    "node",
    "/state/install/server.js",
    "--port=0",
    "--",
  ]);
});

test("serviceCommandLine: tini as PID 1, tini -s (subreaper) otherwise, the resolved command without tini", () => {
  const command = ["node", "server.js"];
  assert.equal(serviceCommandLine(command, "/usr/local/bin/node", 1, true), { path: "/usr/bin/tini", argv: ["tini", "--", "node", "server.js"] });
  assert.equal(serviceCommandLine(command, "/usr/local/bin/node", 7, true), { path: "/usr/bin/tini", argv: ["tini", "-s", "--", "node", "server.js"] });
  assert.equal(serviceCommandLine(command, "/usr/local/bin/node", 1, false), { path: "/usr/local/bin/node", argv: ["node", "server.js"] });
});

test("other ids come from the identities, not from constants", () => {
  const other = { ...ids, service: { ...ids.service, uid: 2000, gid: 2100 }, serviceGroups: [2300, 2100, 2200] };
  const args = setprivToSpawnerArgs(other, ["x"]);
  assert.equal(args.slice(0, 3), ["--reuid=2000", "--regid=2100", "--groups=2300,2100,2200"]);
  const stage = verifyStageArgs(other, { path: "/x", argv: ["x"] });
  assert.equal(stage.slice(PERL.length + 2, PERL.length + 5), ["uid=2000", "gid=2100", "groups=2100,2200,2300"]);
});

test.run();
