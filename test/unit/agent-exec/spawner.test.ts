/*
 * The spawner's grab reads its job on stdin (src/agent-exec/spawner.ts,
 * grabJob; src/perl/spawn-grab.pl): the real perl and the real grab, in its
 * own-fds mode ("-"), which execs the chain at once. Judged by what the chain
 * itself prints of its argv and environment.
 */
import { spawnSync } from "node:child_process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { EXIT } from "../../../src/constants.ts";
import { syscallNumbers } from "../../../src/os/syscalls.ts";
import GRAB from "../../../src/perl/spawn-grab.pl";
import { grabJob } from "../../../src/agent-exec/spawner.ts";

const test = suite("the spawner's grab");

const n = syscallNumbers();
const GRAB_ARGV = ["-T", "-C0", "-e", GRAB, ...[n.recvmsg, n.dup3, n.fcntl, n.close, n.setsid, n.exitGroup, n.setgroups, n.setresgid, n.setresuid, n.capset, n.prctl, process.getuid!(), process.getuid!(), process.getgid!(), process.getgid!()].map(String)];
/** A chain that prints its argv, one bracketed word a line, then its whole environment. */
const PRINT = ["/usr/bin/perl", "-e", 'print map({ "[$_]\\n" } @ARGV), map({ "$_=$ENV{$_}\\n" } sort keys %ENV)'];

function runGrab(input: string) {
  return spawnSync("/usr/bin/perl", GRAB_ARGV, { input, env: { INHERITED: "by the grab" }, encoding: "utf8" });
}

test("a job arrives whole: the chain's argv (an empty word, spaces, a newline) and exactly the environment the spawner framed, not the grab's own", () => {
  const job = grabJob(["-", ""], { chain: [...PRINT, "", "a b", "x\ny"], env: { A: "1=2", B: "", C: "line\nbreak" }, fds: [0, 1, 2], oom: "" });
  const run = runGrab(job);
  assert.is(run.status, 0, run.stderr);
  assert.is(run.stdout, "[]\n[a b]\n[x\ny]\nA=1=2\nB=\nC=line\nbreak\n");
});

test("an empty stdin (the spawner has ended before giving the grab a job) starts nothing and exits 0", () => {
  const run = runGrab("");
  assert.is(run.status, 0, run.stderr);
  assert.is(run.stdout, "");
  assert.is(run.stderr, "");
});

test("a job cut short (its last field unended) is refused: the chain never starts", () => {
  const job = grabJob(["-", ""], { chain: [...PRINT, "word"], env: {}, fds: [0, 1, 2], oom: "" });
  const run = runGrab(job.slice(0, -1));
  assert.is(run.status, EXIT.usage);
  assert.is(run.stdout, "");
  assert.match(run.stderr, /^clankie-agent-exec: spawner's grab: bad job; report this\n$/);
});

test.run();
