/*
 * The spawner's zygote and its grabs (src/agent-exec/spawner.ts, grabJob;
 * src/perl/spawn-grab.pl): the real perl and the real program, as this
 * user, in the own-fds mode ("-") that execs the chain at once. The zygote
 * reads "ID LENGTH\n" and the job on its stdin, forks a grab per job, and
 * reports on its stdout how each grab ended ("E ID CODE SIGNAL TEXT", TEXT
 * what the grab said on its stderr). Judged by that report.
 */
import { spawn } from "node:child_process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { syscallNumbers } from "../../../src/os/syscalls.ts";
import GRAB from "../../../src/perl/spawn-grab.pl";
import { grabJob } from "../../../src/agent-exec/spawner.ts";

const test = suite("the spawner's zygote");

const n = syscallNumbers();
const ZYGOTE_ARGV = ["-T", "-C0", "-e", GRAB, ...[n.recvmsg, n.dup3, n.fcntl, n.close, n.setsid, n.exitGroup, n.setgroups, n.setresgid, n.setresuid, n.capset, n.prctl, n.memfdCreate, process.getuid!(), process.getuid!(), process.getgid!(), process.getgid!()].map(String)];
/** A chain that runs perl `code` with `args`. */
const perl = (code: string, ...args: string[]): string[] => ["/usr/bin/perl", "-e", code, ...args];
/** A "-" job: the grab's own fds (/dev/null, /dev/null, its stderr pipe), then the chain. */
const ownJob = (chain: readonly string[], env: Record<string, string> = {}): string => grabJob(["-", ""], { chain, env, fds: [0, 1, 2], oom: "" });
const framed = (id: number, job: string): string => `${id} ${Buffer.byteLength(job)}\n${job}`;

/** Starts the zygote, writes `input`, and collects its report until `until` says it is whole (or 10 s have passed); then ends its stdin and waits for its exit. */
function runZygote(input: string, until: (lines: string[]) => boolean): Promise<{ lines: string[]; code: number | null; stderr: string }> {
  return new Promise((done) => {
    const zygote = spawn("/usr/bin/perl", ZYGOTE_ARGV, { env: { INHERITED: "by the zygote" }, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let stderr = "";
    const check = (): void => {
      if (until(out.split("\n").filter(Boolean))) zygote.stdin.end();
    };
    zygote.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      check();
    });
    zygote.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    zygote.stdin.on("error", () => {});
    // A report that never comes fails the test rather than hanging it.
    const timer = setTimeout(() => zygote.kill("SIGKILL"), 10_000);
    zygote.once("close", (code) => {
      clearTimeout(timer);
      done({ lines: out.split("\n").filter(Boolean), code, stderr });
    });
    zygote.stdin.write(input);
    check();
  });
}
const ends = (count: number) => (lines: string[]): boolean => lines.filter((line) => line.startsWith("E ")).length >= count;

test("a job arrives whole: the chain's argv (an empty word, spaces, a newline) and exactly the environment the spawner framed, not the zygote's own", async () => {
  const show = 'print STDERR join "|", map({ "[$_]" =~ s/\\n/\\\\n/gr } @ARGV), map({ "$_=$ENV{$_}" =~ s/\\n/\\\\n/gr } sort keys %ENV); exit 0';
  const run = await runZygote(framed(1, ownJob(perl(show, "", "a b", "x\ny"), { A: "1=2", B: "", C: "line\nbreak" })), ends(1));
  assert.equal(run.lines, ["E 1 0 0 []|[a b]|[x\\ny]|A=1=2|B=|C=line\\nbreak"], run.stderr);
  assert.is(run.code, 0);
});

test("what a job's grab writes on stdout never reaches the report (a forged line stays out); its stderr is the report's text, on one line", async () => {
  const run = await runZygote(framed(1, ownJob(perl('print "E 1 0 0 forged\\nP 1 1\\n"; print STDERR "said\\non two lines\\n"; exit 3'))), ends(1));
  assert.equal(run.lines, ["E 1 3 0 said on two lines "], run.stderr);
});

test("jobs run at once, each reported under its own id as it ends; a grab killed by a signal is reported by its number", async () => {
  const input = framed(7, ownJob(perl("sleep 1; exit 5"))) + framed(8, ownJob(perl("exit 6"))) + framed(9, ownJob(perl("kill 9, $$")));
  const run = await runZygote(input, ends(3));
  assert.equal(run.lines.slice(2), ["E 7 5 0 "], run.stderr);
  assert.equal(run.lines.slice(0, 2).sort(), ["E 8 6 0 ", "E 9 0 9 "], run.stderr);
});

test("a grab that says more than a pipe holds (200 KiB on its stderr) ends and is reported, with the first 4,000 bytes of it: a line under PIPE_BUF", async () => {
  const run = await runZygote(framed(1, ownJob(perl('print STDERR "x" x 200_000; exit 3'))), ends(1));
  assert.equal(run.lines, [`E 1 3 0 ${"x".repeat(4000)}`], run.stderr);
  assert.ok(run.lines[0]!.length + 1 < 4096);
});

test("fifty jobs that end at once are each reported once", async () => {
  const input = Array.from({ length: 50 }, (_, i) => framed(i + 1, ownJob(perl(`exit ${i % 7}`)))).join("");
  const run = await runZygote(input, ends(50));
  assert.equal(run.lines.sort(), Array.from({ length: 50 }, (_, i) => `E ${i + 1} ${i % 7} 0 `).sort(), run.stderr);
});

test("a job cut short (its last field unended) is refused by its grab (64, one line), and the next job runs", async () => {
  const job = ownJob(perl("exit 0"));
  const run = await runZygote(framed(1, job.slice(0, -1)) + framed(2, job), ends(2));
  assert.equal(run.lines, ["E 1 64 0 clankie-agent-exec: spawner's grab: bad job; report this ", "E 2 0 0 "], run.stderr);
});

test("the end of its stdin (the spawner has ended) ends the zygote: exit 0, nothing started", async () => {
  const run = await runZygote("", () => true);
  assert.equal([run.code, run.lines, run.stderr], [0, [], ""]);
});

test("a header that is not 'ID LENGTH' is refused (64, one line): the zygote ends, and the spawner with it", async () => {
  const run = await runZygote("1 x\n", () => false);
  assert.equal([run.code, run.lines, run.stderr], [64, [], "clankie-agent-exec: spawner's grab: bad job header; report this\n"]);
});

test.run();
