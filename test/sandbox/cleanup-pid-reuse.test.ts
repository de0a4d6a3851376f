/*
 * The cleanup stage (the end of a private job's lease, src/stage/stage.pl
 * end_lease) kills every process that holds the lease's group. It reads a
 * process's /proc status, then signals it: if that process ends in between
 * and its pid is given to another process of the agent uid, a kill(2) by pid
 * hits that other process, another agent job, past the Landlock signal
 * scope its own jobs are held to. The stage signals through a pidfd opened
 * before the read (pidfd_open(2), pidfd_send_signal(2)), which can only
 * ever name the process it was opened for.
 *
 * The race is made certain, as root in a pid namespace of its own: J has
 * no guard, so the stage, after 2 s of waiting for one, signals J, and strace
 * holds that signal for 2 s (inject=...:delay_enter), meanwhile the
 * job's process J is killed and reaped, and ns_last_pid hands J's pid to a
 * new process V of the agent uid without the group. The control is the same
 * stage with its signal made by pid (kill), as it was: V dies.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { stageProgram } from "../../src/stage/stage.ts";
import { stageArgv } from "../../src/stage/stage-argv.ts";
import { rootTest } from "../helpers/privilege.ts";

const test = suite("cleanup stage and pid reuse");
const AGENT = 1001;
const WORKSPACE = 1002;
const LEASE_GROUP = 1100;
/** The stage's signal to a job's process, by pidfd; the control puts the kill by pid back in its place. */
const PIDFD_SIGNAL = /syscall\(\d+, \$pidfd, 9, 0, 0\)/;

interface Outcome {
  /** strace's log of the stage's signals. */
  strace: string;
  reused: boolean;
  stageExit: string;
  victim: "alive" | "killed";
  log: string;
}

function race(program: string): Outcome {
  const argv = stageArgv({
    program: "clankie-agent-exec",
    role: "cleanup",
    uid: AGENT,
    gid: AGENT,
    groups: [AGENT, WORKSPACE, LEASE_GROUP],
    caps: { inh: 0n, prm: 0n, eff: 0n, amb: 0n },
    keepFds: [],
    lease: "/run/clankie-private/0",
    group: LEASE_GROUP,
    action: { path: "/bin/true", argv: ["/bin/true"] },
  });
  argv[argv.indexOf("-e") + 1] = program;
  const dir = mkdtempSync(join(tmpdir(), "clankie-pid-reuse-"));
  try {
    writeFileSync(join(dir, "stage.argv"), argv.join("\0"));
    const as = (groups: string) => `/usr/bin/setpriv --reuid=${AGENT} --regid=${AGENT} --groups=${groups} --inh-caps=-all --ambient-caps=-all --no-new-privs --`;
    const script = [
      "set -u",
      "for fd in /proc/$$/fd/*; do n=${fd##*/}; if [ \"$n\" -gt 2 ]; then eval \"exec $n>&-\"; fi; done",
      "mount -t tmpfs tmpfs /run && mkdir -p /run/clankie-private/0",
      // J: a process of the private job, holding the lease's group.
      `${as(`${AGENT},${LEASE_GROUP}`)} /bin/sleep 60 &`,
      "J=$!",
      // The cleanup stage, its signal held 2 s by strace.
      `xargs -0 -a ${dir}/stage.argv /usr/bin/strace -f -qq -o ${dir}/strace.log -e trace=kill,pidfd_open,pidfd_send_signal -e inject=kill,pidfd_send_signal:delay_enter=2000000 ${as(`${AGENT},${WORKSPACE},${LEASE_GROUP}`)} > ${dir}/stage.out 2>&1 &`,
      "S=$!",
      // The stage kills nothing for its first 2 s (it waits for the job's guard); then it opens J's pidfd
      // and signals J, which strace holds.
      `for _ in $(seq 1 400); do grep -q pidfd_open ${dir}/strace.log 2>/dev/null && break; sleep 0.025; done`,
      // Meanwhile J ends, and its pid goes to V, an agent process without the group.
      'kill -KILL "$J"; wait "$J" 2>/dev/null',
      'echo $((J - 1)) > /proc/sys/kernel/ns_last_pid',
      `${as(`${AGENT}`)} /bin/sleep 60 &`,
      "V=$!",
      'wait "$S"; echo "stage=$?"',
      '[ "$V" = "$J" ] && echo reused=yes || echo "reused=no J=$J V=$V"',
      'if kill -0 "$V" 2>/dev/null; then echo victim=alive; else echo victim=killed; fi',
      'kill -KILL "$V" 2>/dev/null; wait 2>/dev/null; true',
    ].join("\n");
    const run = spawnSync("/usr/bin/unshare", ["--pid", "--fork", "--mount", "--mount-proc", "--propagation=private", "/bin/bash", "-c", script], { encoding: "utf8", timeout: 30_000 });
    const out = run.stdout ?? "";
    const file = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), "utf8") : "(none)");
    const log = `exit ${run.status ?? run.signal} ${run.error ?? ""}\n${out}\n${run.stderr}\nstage: ${file("stage.out")}\nstrace: ${file("strace.log")}`;
    return {
      strace: file("strace.log"),
      reused: out.includes("reused=yes"),
      stageExit: /stage=(\d+)/.exec(out)?.[1] ?? "?",
      victim: out.includes("victim=alive") ? "alive" : "killed",
      log,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

rootTest(test, "a job's pid given to another agent process while the stage signals: the pidfd signal misses it, a kill by pid (the control) kills it", () => {
  const program = stageProgram(["cleanup"]);
  assert.match(program, PIDFD_SIGNAL, "the stage signals through a pidfd");
  const guarded = race(program);
  assert.ok(guarded.reused, `the pid was not reused: ${guarded.log}`);
  assert.is(guarded.victim, "alive", guarded.log);
  assert.is(guarded.stageExit, "0", guarded.log);
  // The held signal went to the pidfd of the process that had ended.
  assert.match(guarded.strace, /pidfd_send_signal\(\d+, SIGKILL, NULL, 0\)\s+= -1 ESRCH/, guarded.log);
  const control = race(program.replace(PIDFD_SIGNAL, 'kill("KILL", $pid)'));
  assert.ok(control.reused, `the pid was not reused: ${control.log}`);
  assert.is(control.victim, "killed", `the control left the other process alive: ${control.log}`);
  assert.match(control.strace, /kill\(\d+, SIGKILL\)\s+= 0/, control.log);
});

test.run();
