/*
 * agent.confinement: the perl answer and /proc fields parsed, and the check
 * judged for each state the kernel or engine can be in, and agent.stop-route
 * from the same facts. The number perl gets from the kernel here is compared
 * with the kernel's own answer in test/sandbox/self-check.test.ts.
 */
import { spawnSync } from "node:child_process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type ConfinementFacts, judgeConfinement, judgeStopRoute, LANDLOCK_ABI_SCRIPT, landlockRules, parseLandlockAnswer } from "../../../src/self-check/confinement.ts";

const Confinement = suite("agent.confinement");

const SECCOMP_ON: ConfinementFacts["seccomp"] = { mode: "2", filters: 1, actions: ["kill_process", "kill_thread", "trap", "errno", "user_notif", "trace", "log", "allow"] };

Confinement("perl's answer is parsed; anything else is an error, never an ABI", () => {
  assert.equal(parseLandlockAnswer("abi 7\n"), { abi: 7 });
  assert.equal(parseLandlockAnswer("errno 38\n"), { errno: "ENOSYS" });
  assert.equal(parseLandlockAnswer("errno 95\n"), { errno: "EOPNOTSUPP" });
  assert.match((parseLandlockAnswer("7") as { error: string }).error, /unexpected answer/);
});

Confinement("the script asks landlock_create_ruleset(NULL, 0, VERSION) through syscall 444 and perl answers as the kernel does", () => {
  assert.match(LANDLOCK_ABI_SCRIPT, /syscall\(444, 0, 0, 1\)/);
  const result = spawnSync("/usr/bin/perl", ["-e", LANDLOCK_ABI_SCRIPT], { encoding: "utf8" });
  assert.is(result.status, 0, result.stderr);
  assert.match(result.stdout, /^(abi [1-9]\d*|errno \d+)\n$/);
});

Confinement("the rules each ABI gives", () => {
  assert.equal(landlockRules(0), []);
  assert.equal(landlockRules(1), ["filesystem access (read, write, execute, create, remove)"]);
  assert.ok(landlockRules(4).includes("TCP bind and connect by port"));
  assert.not.ok(landlockRules(5).includes("scoping of abstract unix sockets and signals"));
  assert.ok(landlockRules(6).includes("scoping of abstract unix sockets and signals"));
});

Confinement("ABI 6 or later with seccomp filters passes, naming the rules", () => {
  const check = judgeConfinement({ landlock: { abi: 7 }, seccomp: SECCOMP_ON });
  assert.is(check.status, "pass");
  assert.match(check.summary, /^the kernel offers Landlock ABI 7 \(filesystem access .*TCP bind and connect by port.*scoping of abstract unix sockets and signals; logging of denials\) and seccomp filters \(errno action\): every agent spawn can be confined beyond its uid$/);
  assert.equal((check.found.landlock as { abi: number }).abi, 7);
  assert.is((check.found.seccomp as { filtersAvailable: boolean }).filtersAvailable, true);
});

Confinement("no Landlock (ENOSYS, EOPNOTSUPP, an engine's EPERM) warns: uid boundary only, with the kernel and engine fix", () => {
  for (const errno of ["ENOSYS", "EOPNOTSUPP", "EPERM"]) {
    const check = judgeConfinement({ landlock: { errno }, seccomp: SECCOMP_ON });
    assert.is(check.status, "warn");
    assert.match(check.summary, new RegExp(`^Landlock is not available \\(landlock_create_ruleset: ${errno}\\): agent work then runs under the uid boundary only`));
    assert.match(check.fix!, /CONFIG_SECURITY_LANDLOCK=y.*lsm=.*Docker engine >= 20\.10\.18.*444-446/);
  }
  assert.is(judgeConfinement({ landlock: { error: "could not run perl: x" }, seccomp: SECCOMP_ON }).status, "warn");
});

Confinement("an older ABI warns with what it lacks; missing seccomp filters warn", () => {
  const old = judgeConfinement({ landlock: { abi: 3 }, seccomp: SECCOMP_ON });
  assert.is(old.status, "warn");
  assert.match(old.summary, /^Landlock ABI 3 lacks TCP bind and connect by port \(ABI 4\), ioctl on devices \(ABI 5\), scoping of abstract unix sockets and signals \(ABI 6\): those limits then rest on the uid boundary only/);
  assert.match(old.fix!, /Linux 6\.12 or later/);
  const noSeccomp = judgeConfinement({ landlock: { abi: 7 }, seccomp: { mode: null, filters: null, actions: { error: "read x: ENOENT" } } });
  assert.is(noSeccomp.status, "warn");
  assert.match(noSeccomp.summary, /^seccomp filters are not available \(no Seccomp: field in \/proc\/self\/status\): agent work then runs under the uid boundary only/);
  assert.match(noSeccomp.fix!, /CONFIG_SECCOMP_FILTER/);
  assert.match(judgeConfinement({ landlock: { abi: 7 }, seccomp: { ...SECCOMP_ON, actions: ["kill_process", "allow"] } }).summary, /lists no errno action/);
});


Confinement.run();

const StopRoute = suite("agent.stop-route");

StopRoute("Landlock and seccomp filters: the stop route can be kept from agent jobs (pass); without either it is exposed (warn, the confinement's fix)", () => {
  assert.is(judgeStopRoute({ landlock: { abi: 7 }, seccomp: SECCOMP_ON }).status, "pass");
  assert.is(judgeStopRoute({ landlock: { abi: 3 }, seccomp: SECCOMP_ON }).status, "pass", "any ABI gives the domain the stage's filter sits in");
  const noLandlock = judgeStopRoute({ landlock: { errno: "ENOSYS" }, seccomp: SECCOMP_ON });
  assert.is(noLandlock.status, "warn");
  assert.match(noLandlock.summary, /^the stop route is exposed: without Landlock, an agent job can change the limits, priority and scheduling of the signal stage and of other agent jobs \(prlimit, renice, chrt\)/);
  assert.equal(noLandlock.fix, judgeConfinement({ landlock: { errno: "ENOSYS" }, seccomp: SECCOMP_ON }).fix);
  const neither = judgeStopRoute({ landlock: { error: "perl" }, seccomp: { mode: null, filters: null, actions: { error: "x" } } });
  assert.match(neither.summary, /without Landlock or seccomp filters/);
  assert.equal(neither.found.missing, ["Landlock", "seccomp filters"]);
  assert.match(neither.fix!, /CONFIG_SECURITY_LANDLOCK.*; and .*CONFIG_SECCOMP_FILTER/);
});

StopRoute.run();
