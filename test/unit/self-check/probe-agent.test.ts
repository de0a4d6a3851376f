/* The probe's inside half (src/self-check/probe-agent.ts): its confinement attempts run for real against the kernel. */
import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LANDLOCK_ABI_SCRIPT } from "../../../src/self-check/confinement.ts";
import { CONFINEMENT_ATTEMPTS_SCRIPT, parseConfinementAttempts } from "../../../src/self-check/probe-agent.ts";

const Attempts = suite("the probe's attempts");

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
(process.arch === "x64" && ABI >= 6 ? Attempts : Attempts.skip)("the probe's attempts: possible without a domain, denied (EACCES, EPERM) inside a Landlock domain", () => {
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

Attempts.run();
