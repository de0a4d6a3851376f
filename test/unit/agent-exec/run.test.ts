/*
 * The shim's own decisions over what it read of /proc: whether the stage must
 * call setsid(2) (sessionPlan, over /proc/self/stat) and whether a --pgid is
 * the shim's or its caller's group (checkSignalTarget, over both stat files).
 * The sessions and groups come from real processes where the kernel can make
 * them without root (setsid(1), a perl setpgrp); the reads themselves, the
 * exec and the drop run in test/sandbox/agent-exec.test.ts and agent-stop.test.ts.
 */
import { spawnSync } from "node:child_process";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { checkSignalTarget, sessionPlan } from "../../../src/agent-exec/run.ts";
import { EXIT } from "../../../src/constants.ts";
import { parseStat, type ProcessSession } from "../../../src/os/proc-stat.ts";
import { assertRefusal } from "../../helpers/refusal.ts";

/** /proc/self/stat of a real process, a child of this test that the `wrap` command line puts in its session and group. */
function statOf(wrap: string[]): ProcessSession {
  const argv = [...wrap, "/bin/cat", "/proc/self/stat"];
  const run = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  assert.is(run.status, 0, run.stderr);
  return parseStat(run.stdout);
}

const TERMINAL = "the shim leads a session that has a controlling terminal";
const TERMINAL_FIX = "spawn it in a new session without a terminal (spawnAgent does)";
const LEADER = "the shim leads a process group but not a session, and setsid(2) refuses a process-group leader";
const LEADER_FIX = "spawn it detached (a new session, as spawnAgent does) or inside its parent's process group";

test("sessionPlan: a session leader without a terminal needs no setsid; a member of its parent's group needs it", () => {
  // setsid(1) forks when it leads a group already: --fork makes the session in every case.
  const leader = statOf(["/usr/bin/setsid", "--fork", "--wait"]);
  assert.is(leader.session, leader.pid);
  assert.is(leader.ttyNr, 0);
  assert.is(sessionPlan(leader), false);
  const member = statOf([]);
  assert.ok(member.pgrp !== member.pid && member.session !== member.pid, JSON.stringify(member));
  assert.is(sessionPlan(member), true);
});

test("sessionPlan: a session leader holding a controlling terminal is refused (77)", () => {
  // A terminal needs a pty this test has none of: the kernel's fields, as /proc/self/stat of such a leader has them (tty_nr 34816, /dev/pts/0).
  assertRefusal(() => sessionPlan({ pid: 300, pgrp: 300, session: 300, ttyNr: 34816 }), { exitCode: EXIT.launchRefused, what: TERMINAL, fix: TERMINAL_FIX });
  // The control: the same leader without the terminal.
  assert.is(sessionPlan({ pid: 300, pgrp: 300, session: 300, ttyNr: 0 }), false);
});

test("sessionPlan: a process-group leader that does not lead its session is refused (77): setsid(2) would fail with EPERM", () => {
  const leader = statOf(["/usr/bin/perl", "-e", "setpgrp(0, 0); exec { $ARGV[0] } @ARGV or die"]);
  assert.is(leader.pgrp, leader.pid);
  assert.ok(leader.session !== leader.pid);
  assertRefusal(() => sessionPlan(leader), { exitCode: EXIT.launchRefused, what: LEADER, fix: LEADER_FIX });
  // A terminal changes nothing: setsid(2) is what fails.
  assertRefusal(() => sessionPlan({ ...leader, ttyNr: 34816 }), { exitCode: EXIT.launchRefused, what: LEADER, fix: LEADER_FIX });
});

const ownGroup = (pgid: number): string => `--pgid ${pgid} is the process group of clankie-agent-exec or of its caller, not agent work's`;
const OWN_GROUP_FIX = "pass the process group of a job spawnAgent started (its child.pid)";

test("checkSignalTarget: the shim's own group and its caller's are refused (64); any other group passes to the stage", () => {
  assertRefusal(() => checkSignalTarget(400, 400, 300), { exitCode: EXIT.usage, what: ownGroup(400), fix: OWN_GROUP_FIX });
  assertRefusal(() => checkSignalTarget(300, 400, 300), { exitCode: EXIT.usage, what: ownGroup(300), fix: OWN_GROUP_FIX });
  // The control: a third group, and a caller outside the pid namespace (no group to compare).
  checkSignalTarget(500, 400, 300);
  checkSignalTarget(300, 400, undefined);
  assertRefusal(() => checkSignalTarget(400, 400, undefined), { exitCode: EXIT.usage, what: ownGroup(400), fix: OWN_GROUP_FIX });
});

test.run();
