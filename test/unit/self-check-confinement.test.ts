/*
 * agent.confinement: the perl answer and /proc fields parsed, and the check
 * judged for each state the kernel or engine can be in. The number perl gets
 * from the kernel here is compared with the kernel's own answer in
 * test/sandbox/self-check.test.ts.
 */
import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { CONFINEMENT_ATTEMPTS_SCRIPT, parseConfinementAttempts } from "../../src/self-check/probe-agent.ts";
import { type ConfinementFacts, judgeConfinement, LANDLOCK_ABI_SCRIPT, landlockRules, parseLandlockAnswer } from "../../src/self-check/confinement.ts";
import { parseSeccompStatus } from "../../src/os/proc-status.ts";

const Confinement = suite("agent.confinement");

const SECCOMP_ON: ConfinementFacts["seccomp"] = { mode: "2", filters: 1, actions: ["kill_process", "kill_thread", "trap", "errno", "user_notif", "trace", "log", "allow"] };

Confinement("perl's answer and the status fields are parsed; anything else is an error, never an ABI", () => {
  assert.equal(parseLandlockAnswer("abi 7\n"), { abi: 7 });
  assert.equal(parseLandlockAnswer("errno 38\n"), { errno: "ENOSYS" });
  assert.equal(parseLandlockAnswer("errno 95\n"), { errno: "EOPNOTSUPP" });
  assert.match((parseLandlockAnswer("7") as { error: string }).error, /unexpected answer/);
  assert.equal(parseSeccompStatus("Name:\tx\nSeccomp:\t2\nSeccomp_filters:\t3\n"), { mode: "2", filters: 3 });
  assert.equal(parseSeccompStatus("Name:\tx\nSeccomp:\t0\n"), { mode: "0", filters: null });
  assert.equal(parseSeccompStatus("Name:\tx\n"), { mode: null, filters: null });
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

/*
 * The probe's attempts against the kernel, both outcomes: the same perl
 * script run bare (the control) and inside a Landlock domain this test makes
 * (writes handled and none allowed, abstract unix sockets scoped: ABI 6), the
 * way the agent-side stage confines a spawn. This process listens on the
 * abstract socket, outside the domain, as the audit does.
 */
const ABI = Number(spawnSync("/usr/bin/perl", ["-e", LANDLOCK_ABI_SCRIPT], { encoding: "utf8" }).stdout.replace(/^abi /, ""));
// As the shim does: raise oom_score_adj to 500 (a raise needs no privilege; the floor stays where it was).
const RAISE = String.raw`
open(my $f, ">", "/proc/self/oom_score_adj") or die "open oom_score_adj: $!\n";
print $f "500\n";
close($f) or die "raise oom_score_adj: $!\n";
`;
const DOMAIN = String.raw`${RAISE}
syscall(157, 38, 1, 0, 0, 0) == 0 or die "prctl(PR_SET_NO_NEW_PRIVS): $!\n";
my $attr = pack("QQQ", 1 << 1, 0, 1 << 0);
my $fd = syscall(444, $attr, 24, 0);
$fd >= 0 or die "landlock_create_ruleset: $!\n";
syscall(446, $fd, 0) == 0 or die "landlock_restrict_self: $!\n";
exec "/usr/bin/perl", "-e", @ARGV or die "exec: $!\n";
`;
(process.arch === "x64" && ABI >= 6 ? Confinement : Confinement.skip)("the probe's attempts: possible without a domain, denied (EACCES, EPERM) inside a Landlock domain", () => {
  const name = `clankie-test-${process.pid}-${Date.now()}`;
  const server = createServer((socket) => socket.destroy()).listen({ path: `\0${name}` });
  try {
    const bare = spawnSync("/usr/bin/perl", ["-e", `${RAISE}\nexec "/usr/bin/perl", "-e", @ARGV or die "exec: $!\\n";`, CONFINEMENT_ATTEMPTS_SCRIPT, name], { encoding: "utf8" });
    assert.is(bare.status, 0, bare.stderr);
    const [lowered, connected] = parseConfinementAttempts(bare.stdout, name);
    assert.equal([lowered!.outcome, lowered!.detail], ["possible", "wrote 499 over 500 to /proc/self/oom_score_adj"]);
    assert.is(connected!.outcome, "possible", connected!.detail);
    const confined = spawnSync("/usr/bin/perl", ["-e", DOMAIN, CONFINEMENT_ATTEMPTS_SCRIPT, name], { encoding: "utf8" });
    assert.is(confined.status, 0, confined.stderr);
    const [refused, scoped] = parseConfinementAttempts(confined.stdout, name);
    assert.equal([refused!.outcome, refused!.detail], ["denied", "open /proc/self/oom_score_adj for writing: EACCES"]);
    assert.equal([scoped!.outcome, scoped!.detail], ["denied", `connect(@${name}), the audit's socket outside the agent's domain: EPERM`]);
  } finally {
    server.close();
  }
});
if (!(process.arch === "x64" && ABI >= 6)) process.stderr.write(`SKIPPED: Landlock ABI ${ABI || "none"} on ${process.arch}: the confined outcome needs ABI 6 on x86-64\n`);

Confinement.run();
