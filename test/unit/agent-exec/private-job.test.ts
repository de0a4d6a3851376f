/*
 * src/agent-exec/private-job.ts, the parts that run without privilege: the
 * image a private job may read, the cleanup chain, and the pool's rules as
 * the lease and the release apply them (first, before anything on disk).
 * The lease itself, as the private shim with the spawner's CAP_SETGID over /run/clankie-private:
 * test/sandbox/private-jobs.test.ts.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveIdentities } from "../../../src/accounts.ts";
import { cleanupArgv, leasePrivateGroup, privateImageTree, releaseJobLease } from "../../../src/agent-exec/private-job.ts";
import { EXIT } from "../../../src/constants.ts";
import { stageProgram } from "../../../src/stage/stage.ts";
import { GROUP, PASSWD } from "../../helpers/identities.ts";
import { assertRefusal } from "../../helpers/refusal.ts";

const ids = resolveIdentities(PASSWD, GROUP);
const PERL = ["/usr/bin/perl", "-T", "-C0", "-e", stageProgram(["cleanup"]), "--", "clankie-agent-exec"];
const AGENT = ["uid=1001", "gid=1001", "groups=1001,1002", "inh=0", "prm=0", "eff=0", "amb=0", "nnp=1"];

test("privateImageTree: the top level but /state and /tmp; /var and /dev child by child without /var/tmp and /dev/shm", () => {
  const root = mkdtempSync(join(tmpdir(), "clankie-root-"));
  try {
    for (const dir of ["usr", "etc", "tmp", "state", "var/lib", "var/tmp", "var/cache", "dev/shm", "dev/pts"]) mkdirSync(join(root, dir), { recursive: true });
    assert.equal(privateImageTree(`${root}/`), ["/dev/pts", "/etc", "/usr", "/var/cache", "/var/lib"]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("the cleanup role (cleanupArgv of private-job.ts): the agent with the lease's group, no prlimit, then find -delete of the lease's contents", () => {
  const argv = cleanupArgv(ids, { group: 1100, dir: "/run/clankie-private/0" });
  assert.equal(argv.slice(0, 9), ["/usr/bin/setpriv", "--reuid=1001", "--regid=1001", "--groups=1001,1002,1100", "--inh-caps=-all", "--ambient-caps=-all", "--", ...PERL.slice(0, 2)]);
  assert.equal(argv.slice(argv.indexOf("cleanup")), ["cleanup", ...AGENT.slice(0, 2), "groups=1001,1002,1100", ...AGENT.slice(3), "fds=", "lease=/run/clankie-private/0", "group=1100", "started=", "--", "/usr/bin/find", "/usr/bin/find", "/run/clankie-private/0", "-xdev", "-mindepth", "1", "-delete"]);
});

test("the cleanup chain of a shim that takes back a lease for its own job: its started marker reaches the stage as started=N (to close it)", () => {
  const cleanup = cleanupArgv(ids, { group: 1100, dir: "/run/clankie-private/0" }, 17);
  assert.equal(cleanup.slice(cleanup.indexOf("fds="), cleanup.indexOf("--", cleanup.indexOf("fds="))), ["fds=", "lease=/run/clankie-private/0", "group=1100", "started=17"]);
});

test("a wrong pool refuses a private spawn and a release by hand (67), before anything of /run/clankie-private is read", () => {
  const fix = "leave clankie-private-0 without members in /etc/group: only a private job's lease grants it";
  const wrong = resolveIdentities(PASSWD, `${GROUP}clankie-private-0:x:1100:node\n`);
  assertRefusal(() => leasePrivateGroup(wrong), { exitCode: EXIT.noUser, what: "group clankie-private-0 has members (node)", fix });
  assertRefusal(() => releaseJobLease(wrong, 1), { exitCode: EXIT.noUser, what: "group clankie-private-0 has members (node)", fix });
});

test.run();
