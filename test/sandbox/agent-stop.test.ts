/*
 * Stopping agent work: spawnAgent's timeout, cancelSignal, killSignal,
 * forceKillAfterDelay and kill(), and signalAgent, run by a stand-in service
 * after a real ADR launch. The service (node, no capability) cannot signal
 * the agent uid, so every stop is a request to the resident spawner, whose
 * signal stage delivers it as the agent. Judged by the kernel (the command's
 * /proc/<pid> entry and its process group, read inside the body) and by wall
 * time, with generous bounds. The filled scenarios make every signal stage
 * fail for a while, as agent work can, to test the stop's retries.
 */
import { chownSync, readdirSync, readFileSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { withControlRunner } from "../helpers/control-runner.ts";
import { rootTest } from "../helpers/privilege.ts";
import { Body, IDS, SANDBOX_FIXTURES, SANDBOX_NODE } from "../helpers/sandbox.ts";

const test = suite("agent-stop");
const SHIM_LINE = "/usr/local/sbin/clankie-agent-exec -- /bin/sleep 30";

interface Outcome {
  pid: number;
  acted?: unknown;
  before?: { uid: number; name: string } | null;
  wallMs: number;
  failed: boolean;
  timedOut: boolean;
  isCanceled: boolean;
  isTerminated: boolean;
  isForcefullyTerminated: boolean;
  signal: string | null;
  exitCode: number | null;
  shortMessage: string | null;
  cause: string | null;
  isError: boolean;
  thrown?: boolean;
  alive?: boolean;
  group?: number[];
  aliveLater?: { uid: number; name: string } | null;
  aliveAfterMs?: number;
  error?: string;
}

/** Runs one scenario of test/fixtures/agent-stop.mjs as the service of a fresh ADR launch. */
function scenario(name: string, controls = false, nproc?: { limit: number; job: number }): Outcome & { launchMs: number } {
  const body = new Body();
  try {
    chownSync(body.state, IDS.service, IDS.service);
    chownSync(body.workspace, IDS.service, IDS.service);
    const started = Date.now();
    const service = [SANDBOX_NODE, `${SANDBOX_FIXTURES}/agent-stop.mjs`, name, ...(nproc ? [String(nproc.job)] : [])];
    const wrap = nproc ? ["/usr/bin/prlimit", `--nproc=${nproc.limit}:${nproc.limit}`, "--"] : [];
    const run = controls ? body.run({ as: "root", direct: true, wrap, command: withControlRunner(service), timeoutMs: 120_000 }) : body.run({ as: "root", command: service, timeoutMs: 90_000 });
    const launchMs = Date.now() - started;
    assert.is(run.status, 0, `${name}: exit ${run.status}\n${run.stdout}\n${run.stderr}`);
    const outcome = JSON.parse(run.stdout) as Outcome;
    assert.is(outcome.error, undefined, outcome.error);
    return { ...outcome, launchMs };
  } finally {
    body.cleanup();
  }
}

/** Ended by `signal`, reported as a failure, the command and its whole process group gone. */
function assertStopped(o: Outcome, signal: string): void {
  assert.is(o.signal, signal, JSON.stringify(o));
  assert.is(o.isTerminated, true);
  assert.is(o.failed, true);
  assert.is(o.isError, true, "execa's failure is an ExecaError");
  assert.is(o.exitCode, null);
  assert.is(o.alive, false, `pid ${o.pid} still in /proc`);
  if (o.group !== undefined) assert.equal(o.group, [], "nothing left in the process group");
}

rootTest(test, "timeout: the command is stopped through the shim and reported as timed out", () => {
  const o = scenario("timeout");
  assertStopped(o, "SIGTERM");
  assert.is(o.timedOut, true);
  assert.is(o.isCanceled, false);
  assert.is(o.thrown, false, "reject: false returns the failure");
  assert.is(o.shortMessage, `Command timed out after 1000 milliseconds: ${SHIM_LINE}`);
  assert.ok(o.wallMs >= 900 && o.wallMs < 10_000, `ran ${o.wallMs} ms with a 1000 ms timeout`);
});

rootTest(test, "timeout with reject (the default): the promise rejects with the timed-out failure", () => {
  const o = scenario("timeout-rejects");
  assertStopped(o, "SIGTERM");
  assert.is(o.thrown, true);
  assert.is(o.timedOut, true);
  assert.ok(o.wallMs < 10_000, `ran ${o.wallMs} ms`);
});

rootTest(test, "cancelSignal: aborting stops the command; reported as canceled with the abort's reason", () => {
  const o = scenario("cancel");
  assertStopped(o, "SIGTERM");
  assert.is(o.isCanceled, true);
  assert.is(o.timedOut, false);
  assert.is(o.cause, "This operation was aborted");
  assert.ok(o.wallMs < 10_000, `ran ${o.wallMs} ms`);
});

rootTest(test, "kill(): returns true and stops the command with killSignal (SIGTERM)", () => {
  const o = scenario("kill");
  assert.is(o.acted, true);
  assertStopped(o, "SIGTERM");
  assert.is(o.timedOut, false);
  assert.is(o.isCanceled, false);
  assert.is(o.shortMessage, `Command was killed with SIGTERM (Termination): ${SHIM_LINE}`);
  assert.ok(o.wallMs < 10_000);
});

rootTest(test, "kill(signal): a name or a number, delivered as given", () => {
  assertStopped(scenario("kill-sigint"), "SIGINT");
  assertStopped(scenario("kill-number"), "SIGKILL");
});

rootTest(test, "kill(error): the command is stopped and the failure carries the error as its cause", () => {
  const o = scenario("kill-error");
  assertStopped(o, "SIGTERM");
  assert.is(o.cause, "stopped by the owner");
});

rootTest(test, "killSignal: the timeout sends the signal asked for", () => {
  const o = scenario("kill-signal-option");
  assertStopped(o, "SIGHUP");
  assert.is(o.timedOut, true);
});

rootTest(test, "kill() right after the spawn stops the command", () => {
  const o = scenario("kill-at-once");
  assert.is(o.acted, true);
  assertStopped(o, "SIGTERM");
  assert.ok(o.wallMs < 10_000, `ran ${o.wallMs} ms`);
});

rootTest(test, "forceKillAfterDelay: a command that ignores SIGTERM gets SIGKILL after the delay, reported as forcefully terminated", () => {
  const o = scenario("force");
  assertStopped(o, "SIGKILL");
  assert.is(o.timedOut, true);
  assert.is(o.isForcefullyTerminated, true);
  assert.match(o.shortMessage!, /^Command timed out after 1000 milliseconds and was forcefully terminated after 1000 milliseconds: /);
  assert.ok(o.wallMs >= 1800 && o.wallMs < 12_000, `ran ${o.wallMs} ms (timeout 1000 + force 1000)`);
});

rootTest(test, "forceKillAfterDelay: false: a command that ignores SIGTERM is left running", () => {
  const o = scenario("no-force");
  assert.equal(o.acted, { uid: IDS.agent, name: "perl" }, "alive 3 s after its timeout");
  assert.is(o.isForcefullyTerminated, false);
});

rootTest(test, "the whole process group is stopped, not only its leader", () => {
  const o = scenario("group");
  assert.is(o.acted, 3, "a shell and two children ran in the group");
  assertStopped(o, "SIGTERM");
  assert.equal(o.group, []);
});

rootTest(test, "a job that ends before its timeout: a success, and no timer holds the service open", () => {
  const o = scenario("exits-first");
  assert.is(o.failed, false);
  assert.is(o.exitCode, 0);
  assert.is(o.timedOut, false);
  assert.ok(o.launchMs < 4000, `the launch took ${o.launchMs} ms with a 5000 ms timeout that never fired`);
});

/*
 * A descendant that calls setsid(2) leaves the job's process group, so no
 * stop reaches it, and it keeps the job's stdout and stderr: execa waits for
 * the pipes to end, on a timeout too. spawnAgent closes its end of them once
 * the command has exited and the force-kill was due.
 */
interface Escaped {
  holder: number[];
  settled: boolean;
  left: { pid: number; uid: number; name: string }[];
}

rootTest(test, "a timeout while a setsid descendant holds stdout: the promise settles once the force-kill is due, with the output read; the descendant is left running", () => {
  const o = scenario("escaped-holder") as unknown as Outcome & Escaped & { stdout: string | null };
  assert.is(o.holder.length, 1, `the escaped holder was running: ${JSON.stringify(o)}`);
  assert.is(o.settled, true, `the promise did not settle within 15 s: ${JSON.stringify(o)}`);
  assertStopped(o, "SIGTERM");
  assert.is(o.timedOut, true);
  assert.is(o.stdout, "before");
  // Timeout 1000 ms, then the pipes close when the force-kill (1000 ms later) is due.
  assert.ok(o.wallMs >= 1900 && o.wallMs < 8000, `settled after ${o.wallMs} ms`);
  assert.equal(o.left, [{ pid: o.holder[0]!, uid: IDS.agent, name: "sleep" }], "what is left running: the descendant out of the group");
});

rootTest(test, "a stop by signalAgent or kill(), with SIGTERM, SIGINT, SIGHUP or SIGUSR1, while a setsid descendant holds stdout: every promise settles within forceKillAfterDelay of the request, with the output read", () => {
  const o = scenario("escaped-routes") as unknown as { runs: { route: string; signal: string; force: number | null; settled: boolean; msAfterRequest: number; exitAfterRequest: number | null; signalOut: string | null; stdout: string | null; sent: unknown; alive: boolean }[]; left: number };
  assert.is(o.runs.length, 9, JSON.stringify(o));
  for (const r of o.runs) {
    const what = JSON.stringify(r);
    assert.is(r.settled, true, `pending 20 s after the request: ${what}`);
    assert.is(r.signalOut, r.signal, what);
    assert.is(r.stdout, "before", what);
    assert.is(r.alive, false, what);
    // The bound: the request plus forceKillAfterDelay (default 5000 ms), or 250 ms after the exit when the stop arrived later (a loaded host), with room for the event loop.
    const delay = r.force ?? 5000;
    const bound = Math.max(delay, (r.exitAfterRequest ?? 0) + 250);
    assert.ok(r.exitAfterRequest !== null, `the command's exit was seen: ${what}`);
    assert.ok(r.msAfterRequest >= delay - 100 && r.msAfterRequest < bound + 2000, `settled ${r.msAfterRequest} ms after the request, bound ${bound}: ${what}`);
  }
  assert.is(o.left, 9, "each job left its setsid descendant running, out of every stop's reach");
});

rootTest(test, "signalAgent given the service's own process group: refused by the spawner (65, one line), which signals only the jobs it started", () => {
  const o = scenario("own-group") as unknown as { pgid: number; results: { signal: string; name: string | null; exitCode: number | null; gone: boolean | null; line: string | null }[] };
  assert.is(o.results.length, 2);
  for (const r of o.results) {
    assert.equal({ name: r.name, exitCode: r.exitCode, gone: r.gone }, { name: "AgentSignalError", exitCode: 65, gone: true }, JSON.stringify(r));
    assert.is(r.line, `clankie-agent-exec: no running job of the spawner's leads process group ${o.pgid}; pass the pid of a job spawnAgent started`);
  }
});

/*
 * The stop's retries. A process of node's uid (started by the launch's
 * control runner as root, as any process of the service's could run) fills
 * node's process count up to the launch's RLIMIT_NPROC, lowered for these
 * runs, and holds it: the spawner's zygote (node) then cannot fork the grab a signal
 * stage runs in (EAGAIN), so no stage delivers until the filler lets go. The
 * control is every stop scenario above: the same stops, unfilled, are
 * delivered by the first stage. The same filler as the agent's uid (agent
 * work past its limit, a fork bomb's end) stops no stop: the grab drops to
 * the agent in its own process and execs nothing (docs/security.md, "The
 * grab makes the drop").
 */
interface Filled {
  filler: string;
  /** Whether the job still ran when the filler let go: every stage until then had failed. */
  aliveAtRelease: boolean;
  aliveAfter: { uid: number; name: string } | null;
  pending?: boolean;
  name?: string;
  tries?: number;
  reason?: string;
}

/** Tasks (threads included: RLIMIT_NPROC counts them) of `uid` on this host, whose pid namespace holds the sandbox's. */
function tasksOf(uid: number): number {
  let n = 0;
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      if (Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "latin1"))![1]) === uid) n += readdirSync(`/proc/${pid}/task`).length;
    } catch {}
  }
  return n;
}

/**
 * A filled scenario: the launch's limit well above what node's and the agent's uids run on this host now (other
 * containers' included), the job's --nproc between. Run again (3 runs at most) when the job had already ended when the
 * filler let go: a task of the agent's uid elsewhere on the host ended meanwhile, the count fell back to the limit, and
 * a stage got through.
 */
function filled(name: string): Outcome & Filled {
  let o: Outcome & Filled;
  for (let run = 1; ; run++) {
    o = fillScenario(name);
    if (o.aliveAtRelease || run === 3) return o;
  }
}

/** One run of a filled scenario: the launch's limit and the job's --nproc from what node's and the agent's uids run now. */
function fillScenario(name: string): Outcome & Filled {
  const [node, agent] = [tasksOf(IDS.service), tasksOf(IDS.agent)];
  return scenario(name, true, { limit: Math.max(node + 200, agent + 300), job: agent + 100 }) as unknown as Outcome & Filled;
}

/** How each stage failed while node's count was full: the spawner's zygote could not fork its grab. */
const NODE_FULL = "the signal stage exited 71: clankie-agent-exec: a grab's stderr or fork(2) failed: EAGAIN: node's uid is at its process limit; try again once processes of node's have ended, or raise the container's process limit";
const FULL = /^\d+ 11$/; // the filler's children, then EAGAIN: fork(2) refused at the limit

/** Every stage failed while the filler held the count, and the job ran on until it let go. */
function assertFilled(o: Outcome & Filled): void {
  assert.match(o.filler, FULL, JSON.stringify(o));
  assert.is(o.aliveAtRelease, true, `the job had ended before the filler let go: ${JSON.stringify(o)}`);
}

rootTest(test, "kill() while no signal stage can run: retried until one delivers SIGTERM once the filler lets go, long before the force-kill", () => {
  const o = filled("retried");
  assertFilled(o);
  assertStopped(o, "SIGTERM");
  assert.is(o.isForcefullyTerminated, false, "SIGTERM arrived before the force-kill (due 5000 ms after the stop) was needed");
});

rootTest(test, "agent work that holds the agent uid's process count over its limit stops no stop: kill() delivers SIGTERM at once, while the filler still holds it", () => {
  const o = fillScenario("agent-full");
  assert.match(o.filler, FULL, JSON.stringify(o));
  assertStopped(o, "SIGTERM");
  assert.is(o.aliveAtRelease, false, `the job still ran when the filler let go, 5 s after the stop: ${JSON.stringify(o)}`);
});

rootTest(test, "kill() whose SIGTERM no stage delivers in 12 tries: the force-kill ends the job when it is due", () => {
  const o = filled("undelivered-term");
  assertFilled(o);
  assertStopped(o, "SIGKILL");
  assert.is(o.timedOut, false);
  assert.is(o.isForcefullyTerminated, true);
  assert.ok(o.wallMs >= 9000 && o.wallMs < 25_000, `ran ${o.wallMs} ms (the force-kill due 9000 ms after the stop)`);
});

rootTest(test, "no stage delivers and no force-kill follows: the promise rejects with AgentStopError after 12 tries, the job still running", () => {
  const o = filled("stop-error");
  assertFilled(o);
  assert.is(o.name, "AgentStopError", JSON.stringify(o));
  assert.is(o.tries, 12);
  assert.is(o.reason, NODE_FULL);
  assert.equal(o.aliveAfter, { uid: IDS.agent, name: "sleep" }, "the job ran on");
  assert.is(o.alive, false, "ended afterwards by a SIGKILL once the filler let go");
});

rootTest(test, "signalAgent by hand, no stage delivers: AgentStopError after 12 tries, the job still running", () => {
  const o = filled("signal-agent-attacked") as Outcome & Filled & { acted: { name: string | null; tries: number | null; reason: string | null } };
  assertFilled(o);
  assert.equal({ name: o.acted.name, tries: o.acted.tries }, { name: "AgentStopError", tries: 12 }, JSON.stringify(o));
  assert.is(o.acted.reason, NODE_FULL);
  assert.equal(o.aliveAfter, { uid: IDS.agent, name: "sleep" }, "the job ran on");
});

test.run();
