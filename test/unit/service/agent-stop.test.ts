import { test } from "uvu";
import * as assert from "uvu/assert";
import { AgentSignalAbortError, AgentSignalError, AgentStopError, isStop, PIPE_DRAIN_MS, pipeCloseDelay, signalAgent, signalRefusal, STOP_RETRY_DELAYS_MS } from "../../../src/service/agent-stop.ts";
import { assertRefusal } from "../../helpers/refusal.ts";

/*
 * No spawner here (no CLANKIE_SPAWNER_FD): every try is answered 77 at once
 * (a retry), as a stop to a chain still dropping is.
 */

/** The timers this process holds (process.getActiveResourcesInfo): none may outlive a settled signalAgent. */
const timers = (): number => process.getActiveResourcesInfo().filter((name) => name === "Timeout").length;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("resolved");
}

test("an undelivered stop: 12 tries over about 6.3 s, and an error that says the job may still run", () => {
  assert.is(STOP_RETRY_DELAYS_MS.length + 1, 12);
  assert.is(STOP_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0), 6260);
  const error = new AgentStopError(42, "SIGKILL", 12, "the signal stage exited 127: perl: error while loading shared libraries");
  assert.instance(error, Error);
  assert.is(error.name, "AgentStopError");
  assert.is(error.failed, true);
  assert.is(error.message, "cannot stop agent process group 42: SIGKILL was not delivered after 12 tries (last: the signal stage exited 127: perl: error while loading shared libraries); the job may still be running");
});

test("signalAgent's timeoutMs gives up after that long with an AgentSignalAbortError (timedOut), leaving no timer behind", async () => {
  const before = timers();
  const started = Date.now();
  const error = await rejection(signalAgent(4242, "SIGTERM", { timeoutMs: 300 }));
  const took = Date.now() - started;
  assert.instance(error, AgentSignalAbortError);
  const abort = error as AgentSignalAbortError;
  assert.is(abort.timedOut, true);
  assert.is(abort.pgid, 4242);
  assert.is(abort.signal, "SIGTERM");
  assert.is(abort.message, "signalAgent gave up on SIGTERM to agent process group 4242: timed out before a signal stage delivered it; one already started may still deliver it");
  assert.ok(took >= 290 && took < 2000, `gave up after ${took} ms`);
  assert.is(timers(), before, "no retry wait or stage timer is left");
});

test("signalAgent's signal: an abort gives up at once (its reason as cause); one aborted before the call starts no stage", async () => {
  const controller = new AbortController();
  const reason = new Error("the service is shutting down");
  setTimeout(() => controller.abort(reason), 150);
  const started = Date.now();
  const error = await rejection(signalAgent(4242, "SIGKILL", { signal: controller.signal }));
  assert.instance(error, AgentSignalAbortError);
  assert.is((error as AgentSignalAbortError).timedOut, false);
  assert.is((error as AgentSignalAbortError).cause, reason);
  assert.ok(Date.now() - started < 1500, `gave up after ${Date.now() - started} ms`);
  const early = await rejection(signalAgent(4242, "SIGKILL", { signal: AbortSignal.abort(reason) }));
  assert.instance(early, AgentSignalAbortError);
});

test("signalAgent refuses the shim option (64): every stop goes through the spawner, no program named by the service", async () => {
  const error = await rejection(signalAgent(4242, "SIGTERM", { shim: "/workspace/planted" }));
  assertRefusal(() => {
    throw error;
  }, { exitCode: 64, what: "signalAgent: the shim option is gone: every stop goes through the spawner", fix: "remove shim" });
});

test("signalAgent refuses a timeoutMs that is not a whole number of milliseconds (64), and a signal that is no AbortSignal", async () => {
  for (const timeoutMs of [-1, 1.5, Number.NaN, Infinity]) {
    const error = await rejection(signalAgent(4242, "SIGTERM", { timeoutMs }));
    assertRefusal(() => {
      throw error;
    }, { exitCode: 64, what: `signalAgent: timeoutMs ${JSON.stringify(timeoutMs)} is not a whole number of milliseconds, 0 or more`, fix: "give timeoutMs as a whole number, or leave it out to wait for every try" });
  }
  const error = await rejection(signalAgent(4242, "SIGTERM", { signal: "SIGTERM" as never }));
  assertRefusal(() => {
    throw error;
  }, { exitCode: 64, what: "signalAgent: the signal option is not an AbortSignal", fix: "pass an AbortController's signal (the signal to send is the second argument)" });
});

test("a signal stage's refusal is an AgentSignalError: gone (65, no such group) told apart from 64 by a field, the stage's line kept", () => {
  const line = "clankie-agent-exec: no agent process group 4242 exists; it has ended, or never was agent work's";
  const gone = signalRefusal(4242, "SIGTERM", { exitCode: 65, stderr: `\n${line}\n` });
  assert.instance(gone, AgentSignalError);
  assert.is(gone.name, "AgentSignalError");
  assert.equal({ pgid: gone.pgid, signal: gone.signal, exitCode: gone.exitCode, gone: gone.gone, line: gone.line }, { pgid: 4242, signal: "SIGTERM", exitCode: 65, gone: true, line });
  assert.is(gone.message, `signalAgent: SIGTERM to agent process group 4242 was refused (exit 65): ${line}`);
  const after = signalRefusal(4242, "SIGTERM", { exitCode: 65, stderr: `perl: warning: Setting locale failed.\n  ${line}  \n\n` });
  assert.is(after.line, line, "the last non-empty line, trimmed: what the stage printed before it is not its refusal");
  const own = signalRefusal(7, "SIGWINCH", { exitCode: 64, stderr: undefined });
  assert.equal({ exitCode: own.exitCode, gone: own.gone, line: own.line }, { exitCode: 64, gone: false, line: undefined });
  assert.not.instance(own, AgentStopError);
});

test("a stopped job's pipes close when the force-kill is due (request plus delay), 250 ms after the exit at the earliest; a job never stopped is waited for", () => {
  assert.is(PIPE_DRAIN_MS, 250);
  assert.is(pipeCloseDelay(undefined, 5000, 10_000), undefined, "not stopped: execa waits for the pipes");
  assert.is(pipeCloseDelay(10_000, 5000, 10_100), 4900, "signalAgent or kill() at 10 s, the exit 100 ms later: closed at 15 s");
  assert.is(pipeCloseDelay(10_000, 1000, 12_000), 250, "the exit after the force-kill was due");
  assert.is(pipeCloseDelay(10_000, false, 10_000), 250, "forceKillAfterDelay: false");
  // Written out: the signals that end a process by default (signal(7)), of those the shim delivers.
  for (const signal of ["SIGHUP", "SIGINT", "SIGQUIT", "SIGKILL", "SIGUSR1", "SIGUSR2", "SIGTERM"] as const) assert.ok(isStop(signal), signal);
  for (const signal of ["SIGCONT", "SIGSTOP", "SIGTSTP", "SIGWINCH"] as const) assert.not.ok(isStop(signal), signal);
});

test.run();
