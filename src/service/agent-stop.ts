/*
 * Stopping agent work from the service. The service's uid cannot signal a
 * process of the agent's (no CAP_KILL), so every signal is a request to the
 * resident spawner, whose signal stage delivers it to the job's process
 * group as the agent, for a job the spawner started only.
 */
import { constants as osConstants } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import type { Result, ResultPromise } from "execa";
import { AGENT_SIGNALS, EXIT } from "../constants.ts";
import { Refusal } from "../report.ts";
import { spawnerChannel, type StageOutcome } from "./spawner-client.ts";

/** One stop, as the spawner's signal stage ran it (src/service/spawner-client.ts). */
export type SignalRoute = (signal: NodeJS.Signals) => Promise<StageOutcome>;

export interface SignalAgentOptions {
  /** Refused (64): every stop goes through the spawner; there is no shim to name. */
  shim?: string;
  /** Give up when it aborts: the promise rejects with an AgentSignalAbortError (its reason as cause), and no further try starts. */
  signal?: AbortSignal;
  /** Give up after this many milliseconds (a whole number, 0 or more): likewise, with timedOut: true. */
  timeoutMs?: number;
}

/**
 * signalAgent gave up before a stage delivered the signal: its `signal`
 * option aborted (`cause`: the abort's reason) or its `timeoutMs` passed
 * (`timedOut`). No further signal stage starts; one already running (a few
 * milliseconds, as the agent, which the service cannot stop) may still
 * deliver it.
 */
export class AgentSignalAbortError extends Error {
  override readonly name = "AgentSignalAbortError";
  readonly pgid: number;
  readonly signal: NodeJS.Signals;
  readonly timedOut: boolean;
  constructor(pgid: number, signal: NodeJS.Signals, timedOut: boolean, cause: unknown) {
    super(`signalAgent gave up on ${signal} to agent process group ${pgid}: ${timedOut ? "timed out" : "aborted"} before a signal stage delivered it; one already started may still deliver it`, { cause });
    this.pgid = pgid;
    this.signal = signal;
    this.timedOut = timedOut;
  }
}

/**
 * Signals that do not end a process by default (signal(7): Cont, Stop,
 * Ign): sending one is no stop. Every other signal the shim delivers ends a
 * process that does not catch it.
 */
const NOT_STOPS: ReadonlySet<NodeJS.Signals> = new Set(["SIGCONT", "SIGSTOP", "SIGTSTP", "SIGWINCH"]);

/** Pure: whether sending `signal` asks the job to end. */
export function isStop(signal: NodeJS.Signals): boolean {
  return !NOT_STOPS.has(signal);
}

/**
 * The jobs spawnAgent started that still run (each one's pid, its process
 * group, is known once the spawner has started it): signalAgent
 * tells a job's stop handler (routeKillsThroughShim) that a stop was asked
 * for, so that a job stopped by hand settles as one stopped by kill() does.
 */
const runningJobs = new Map<ResultPromise, (signal: NodeJS.Signals) => void>();

/**
 * The signal stage answered, and refused: `gone` (exit 65) the process
 * group does not exist, so the job has ended (or never was one); else (64)
 * the group is the service's own or the stage's, never agent work's.
 * Nothing was signalled. Told apart from AgentStopError (not delivered: the
 * job may still run) and AgentSignalAbortError (given up) by `instanceof`.
 */
export class AgentSignalError extends Error {
  override readonly name = "AgentSignalError";
  readonly pgid: number;
  readonly signal: NodeJS.Signals;
  /** The stage's exit code (README, "Exit codes"): 65 no such group, 64 not agent work's group. */
  readonly exitCode: number;
  /** exitCode 65: no such process group; the job has ended. */
  readonly gone: boolean;
  /** The stage's one line (`clankie-agent-exec: <what is wrong>; <how to fix it>`), when it printed one. */
  readonly line: string | undefined;
  constructor(pgid: number, signal: NodeJS.Signals, exitCode: number, line: string | undefined, cause?: unknown) {
    super(`signalAgent: ${signal} to agent process group ${pgid} was refused (exit ${exitCode})${line === undefined ? "" : `: ${line}`}`, { cause });
    this.pgid = pgid;
    this.signal = signal;
    this.exitCode = exitCode;
    this.gone = exitCode === EXIT.dataRefused;
    this.line = line;
  }
}

/** What signalAgent rejects with: refused by the stage (gone, 65), not delivered after every try, given up, or a Refusal of its options or of the shim's file. */
export type SignalAgentError = AgentSignalError | AgentStopError | AgentSignalAbortError | Refusal;

/** Whether a failure is a signal stage's own end (it ran and exited with a status), not the package's Refusal or AgentStopError. */
function stageEnded(error: unknown): boolean {
  return !(error instanceof Refusal) && !(error instanceof AgentStopError) && typeof (error as { exitCode?: unknown } | undefined)?.exitCode === "number";
}

/** The last non-empty line of what execa kept of stderr (a string, lines, or bytes). */
export function lastLine(stderr: unknown): string | undefined {
  const text = typeof stderr === "string" ? stderr : stderr instanceof Uint8Array ? Buffer.from(stderr).toString("utf8") : Array.isArray(stderr) ? stderr.map((line) => (line instanceof Uint8Array ? Buffer.from(line).toString("utf8") : String(line))).join("\n") : undefined;
  return text?.split("\n").map((line) => line.trim()).filter((line) => line !== "").at(-1);
}

/** Pure: the stage's refusal (how it ended, an execa result or error) as an AgentSignalError. */
export function signalRefusal(pgid: number, signal: NodeJS.Signals, ended: unknown): AgentSignalError {
  const { exitCode, stderr } = (ended ?? {}) as { exitCode?: unknown; stderr?: unknown };
  return new AgentSignalError(pgid, signal, typeof exitCode === "number" ? exitCode : EXIT.osError, lastLine(stderr), ended);
}

/**
 * Delivers a signal to an agent process group, as the agent, retried as the
 * stops of spawnAgent are (STOP_RETRY_DELAYS_MS). Resolves with the result
 * of the stage that delivered it; rejects (never throws: a bad option is a
 * rejected Refusal too) with an AgentSignalError when the stage refuses:
 * the group does not exist (exit 65, `gone`) or is not agent work's (64);
 * with an AgentStopError when every try failed, and with an
 * AgentSignalAbortError when `signal` aborts or `timeoutMs` passes first.
 */
export async function signalAgent(pgid: number, signal: NodeJS.Signals, options: SignalAgentOptions = {}): Promise<Result> {
  const { timeoutMs, signal: abortSignal } = options;
  if (timeoutMs !== undefined && !(Number.isSafeInteger(timeoutMs) && timeoutMs >= 0)) {
    throw new Refusal(EXIT.usage, `signalAgent: timeoutMs ${JSON.stringify(timeoutMs)} is not a whole number of milliseconds, 0 or more`, "give timeoutMs as a whole number, or leave it out to wait for every try");
  }
  if (abortSignal !== undefined && !(abortSignal instanceof AbortSignal)) {
    throw new Refusal(EXIT.usage, "signalAgent: the signal option is not an AbortSignal", "pass an AbortController's signal (the signal to send is the second argument)");
  }
  if (options.shim !== undefined) throw new Refusal(EXIT.usage, "signalAgent: the shim option is gone: every stop goes through the spawner", "remove shim");
  // One signal for both ways of giving up, so that every wait below ends at once.
  const giveUp = new AbortController();
  let timedOut = false;
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
    timedOut = true;
    giveUp.abort(new Error(`timed out after ${timeoutMs} ms`));
  }, timeoutMs);
  const onAbort = (): void => giveUp.abort(abortSignal!.reason);
  if (abortSignal?.aborted) onAbort();
  else abortSignal?.addEventListener("abort", onAbort, { once: true });
  try {
    // Asked for now, delivered or not (as kill() counts it): a job spawnAgent started settles within its bound from here.
    for (const [job, noteStop] of runningJobs) if (job.pid === pgid) noteStop(signal);
    const outcome = await deliverWithRetries(pgid, signal, (sent) => spawnerChannel().signal({ pgid }, sent), () => true, giveUp.signal);
    if (outcome.kind === "delivered") return outcome.result;
    if (outcome.kind === "gone") throw signalRefusal(pgid, signal, outcome.ended);
    if (outcome.kind === "failed") throw stageEnded(outcome.error) ? signalRefusal(pgid, signal, outcome.error) : outcome.error;
    throw new AgentSignalAbortError(pgid, signal, timedOut, giveUp.signal.reason);
  } finally {
    clearTimeout(timer);
    abortSignal?.removeEventListener("abort", onAbort);
  }
}

export interface AgentStopPlan {
  killSignal: NodeJS.Signals;
  /** SIGKILL this long after killSignal when the command still runs; false: never (execa's option, default 5 s). */
  forceKillAfterDelay: number | false;
}

/** The signal's name when the shim can deliver it; a number is taken as execa takes it. */
function agentSignal(signal: string | number, where: string): NodeJS.Signals {
  const name = typeof signal === "number" ? Object.entries(osConstants.signals).find(([, number]) => number === signal)?.[0] : signal;
  if (name === undefined || !AGENT_SIGNALS.includes(name as NodeJS.Signals)) {
    throw new Refusal(EXIT.usage, `${where} ${JSON.stringify(signal)}: the shim delivers only ${AGENT_SIGNALS.join(", ")} to agent work`, "use one of these");
  }
  return name as NodeJS.Signals;
}

/** What spawnAgent takes from execa's options to stop agent work. */
export interface AgentStopOptions {
  killSignal?: NodeJS.Signals | number;
  forceKillAfterDelay?: number | boolean;
}

export function agentStopPlan(options: AgentStopOptions): AgentStopPlan {
  const force = options.forceKillAfterDelay;
  return {
    killSignal: agentSignal(options.killSignal ?? "SIGTERM", "killSignal"),
    // Other values: execa refuses them when it validates its options.
    forceKillAfterDelay: force === false ? false : typeof force === "number" ? force : 5_000,
  };
}

/**
 * How an undelivered stop is retried. A signal stage can fail to deliver for
 * two reasons, and each try is a new stage with a new pid:
 *   - the job's process group still runs as the service (the shim has not
 *     yet dropped to the agent): exit 77, until the agent's command runs;
 *   - agent work interfered with the stage, which runs as the agent's uid
 *     for a few milliseconds before its kill(2): a job that watches
 *     /proc/sys/kernel/ns_last_pid can prlimit(2) it (RLIMIT_NOFILE 0, so
 *     that perl cannot load its libraries: exit 127), and where no Landlock
 *     scoping stands between them, stop or kill it.
 * The waits double from 20 ms to 1 s: 12 tries over about 6.3 s.
 */
export const STOP_RETRY_DELAYS_MS: readonly number[] = [20, 40, 80, 160, 320, 640, 1000, 1000, 1000, 1000, 1000];
/** A stage that has not exited after this long counts as undelivered: stopped by agent work, it cannot be killed by the service (another uid). */
const TRY_TIMEOUT_MS = 5_000;

/**
 * How long the service goes on reading a stopped job's pipes after its
 * command has exited, at least: what the command wrote before it ended is
 * in the pipe, and Node reads it within a few event-loop turns.
 */
export const PIPE_DRAIN_MS = 250;

/**
 * Pure: how long after a job's exit (at `now`) the service closes its end
 * of the job's pipes, or undefined when the job was not stopped (it is
 * waited for as execa waits). When the force-kill is (or would have been)
 * due: the stop's request plus forceKillAfterDelay, PIPE_DRAIN_MS after
 * the exit at the earliest.
 */
export function pipeCloseDelay(stoppedAt: number | undefined, forceKillAfterDelay: number | false, now: number): number | undefined {
  if (stoppedAt === undefined) return undefined;
  const forceDue = forceKillAfterDelay === false ? stoppedAt : stoppedAt + forceKillAfterDelay;
  return Math.max(PIPE_DRAIN_MS, forceDue - now);
}

/**
 * Closes the service's end of every pipe of the subprocess (stdin, stdout,
 * stderr, any further stdio pipe). execa settles only when its streams have
 * ended (execa 9.6.0, lib/resolve/wait-subprocess.js: on a timeout too, it
 * waits for the buffered output), and a pipe ends only when every process
 * that holds its other end has closed it: a descendant that left the job's
 * process group (setsid, a daemon) and kept stdout held the promise open for
 * as long as it ran. A destroyed readable counts as ended for execa (an
 * aborted output stream is not an error), and what was read before stays in
 * the result.
 */
function closePipes(subprocess: ResultPromise): void {
  for (const stream of subprocess.stdio) {
    if (stream && !stream.destroyed) stream.destroy();
  }
}

/**
 * The job may still run: its stop, and the force-kill when one was due, were
 * not delivered after every try. spawnAgent's promise rejects with it (also
 * with reject: false: there is no result while the job may still run), and
 * so does signalAgent.
 */
export class AgentStopError extends Error {
  override readonly name = "AgentStopError";
  readonly failed = true;
  readonly pgid: number;
  readonly signal: NodeJS.Signals;
  readonly tries: number;
  /** How the last try ended. */
  readonly reason: string;
  constructor(pgid: number, signal: NodeJS.Signals, tries: number, reason: string) {
    super(`cannot stop agent process group ${pgid}: ${signal} was not delivered after ${tries} tries (last: ${reason}); the job may still be running`);
    this.pgid = pgid;
    this.signal = signal;
    this.tries = tries;
    this.reason = reason;
  }
}

type TryOutcome = { kind: "delivered"; result: Result } | { kind: "gone"; ended: unknown } | { kind: "retry" | "permanent"; reason: string; ended: unknown };

/** One signal stage, judged by how it ended. */
async function trySignal(signal: NodeJS.Signals, route: SignalRoute, abort?: AbortSignal): Promise<TryOutcome | undefined> {
  const attempt: Promise<StageOutcome> = route(signal);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((done) => (timer = setTimeout(done, TRY_TIMEOUT_MS, "late")));
  // Given up (signalAgent's signal or timeoutMs): stop waiting for this stage; it ends on its own.
  let onAbort = (): void => undefined;
  const aborted = new Promise<"aborted">((done) => (onAbort = () => done("aborted")));
  abort?.addEventListener("abort", onAbort, { once: true });
  const result = await Promise.race([attempt, late, aborted]).finally(() => {
    clearTimeout(timer);
    abort?.removeEventListener("abort", onAbort);
  });
  if (result === "aborted") return undefined;
  if (result === "late") return { kind: "retry", reason: `the signal stage did not exit within ${TRY_TIMEOUT_MS} ms`, ended: undefined };
  if (result.exitCode === EXIT.ok) return { kind: "delivered", result: { ...result, failed: false } as unknown as Result };
  if (result.exitCode === EXIT.dataRefused) return { kind: "gone", ended: result }; // no such process group: it has ended
  const said = String(result.stderr ?? "").trim();
  const how = result.signal ? `was killed by ${result.signal}` : result.exitCode === undefined ? `did not start (${result.message ?? "unknown"})` : `exited ${result.exitCode}`;
  const reason = `the signal stage ${how}${said === "" ? "" : `: ${said}`}`;
  // A refused command line (the shim's own process group) stays refused.
  return { kind: result.exitCode === EXIT.usage ? "permanent" : "retry", reason, ended: result };
}

type Delivery = { kind: "delivered"; result: Result } | { kind: "gone"; ended: unknown } | { kind: "not-needed" } | { kind: "failed"; error: unknown; stop: AgentStopError };

/**
 * Tries until a stage delivers the signal, the group is gone, `needed()`
 * turns false (the job ended) or `abort` aborts (signalAgent gave up), a try fails for good, or the tries run out.
 * `error` is what signalAgent rejects with: the stage's own failure when it
 * failed for good, else the AgentStopError (`stop`, always set).
 */
async function deliverWithRetries(pgid: number, signal: NodeJS.Signals, route: SignalRoute, needed: () => boolean, abort?: AbortSignal): Promise<Delivery> {
  const wanted = (): boolean => needed() && abort?.aborted !== true;
  for (let tries = 1; ; tries++) {
    if (!wanted()) return { kind: "not-needed" };
    const outcome = await trySignal(signal, route, abort);
    if (outcome === undefined) return { kind: "not-needed" };
    if (outcome.kind === "delivered" || outcome.kind === "gone") return outcome;
    if (!wanted()) return { kind: "not-needed" };
    if (outcome.kind === "permanent" || tries > STOP_RETRY_DELAYS_MS.length) {
      const stop = new AgentStopError(pgid, signal, tries, outcome.reason);
      return { kind: "failed", error: outcome.kind === "permanent" ? outcome.ended : stop, stop };
    }
    try {
      await sleep(STOP_RETRY_DELAYS_MS[tries - 1], undefined, abort === undefined ? {} : { signal: abort });
    } catch {
      return { kind: "not-needed" }; // given up during the wait
    }
  }
}

/**
 * Makes execa's ways of stopping a subprocess reach agent work. They all end
 * in kill(2) as the service, which fails with EPERM for a process of another
 * uid (the service holds no CAP_KILL): a job with a 3 s timeout ran its full
 * 25 s and reported exit 0. So the subprocess's kill() is replaced by one that
 * asks the spawner, whose signal stage signals the job's whole process group
 * as the agent.
 *
 * execa's own timeout and cancelSignal handlers call `subprocess.kill()`
 * (execa 9.6.0, lib/terminate/timeout.js and cancel.js), so they take this
 * route too, and execa reports the job as it always does (timedOut,
 * isCanceled, isTerminated, signal). forceKillAfterDelay lives inside the
 * kill() execa made, so it is done here: SIGKILL to the group when the
 * command still runs after the delay, counted from the stop's request
 * whether or not the stop was delivered, and reported as
 * isForcefullyTerminated.
 *
 * A stop the shim did not deliver is retried (STOP_RETRY_DELAYS_MS). When
 * every try failed, the job fails with the reason (an 'error' on the
 * subprocess, as a failed kill(2) would: never a success once it ends), and
 * when no force-kill is left to follow, its promise rejects at once with an
 * AgentStopError.
 *
 * Once a stopped job's command has exited, the service closes its end of
 * the job's pipes (closePipes) when the force-kill is due (the stop's
 * request plus forceKillAfterDelay; PIPE_DRAIN_MS after the exit at the
 * earliest), unless they have ended by then: whatever still holds them has
 * left the process group and is out of the stop's reach, and the promise
 * settles with the output read so far. Such a process runs on, as the
 * agent, until it ends or writes to the closed pipe (EPIPE, SIGPIPE).
 * A stop is any signal that ends a process by default (isStop), by any
 * route: kill() with any of them, signalAgent to the job's group (the
 * registry above), or, when the service asked for none, the command's own
 * death by a signal (sent from anywhere), counted from its exit.
 */
export function routeKillsThroughShim(subprocess: ResultPromise, route: SignalRoute, plan: AgentStopPlan): ResultPromise {
  const execaKill = subprocess.kill.bind(subprocess) as (signal: number, error: Error) => boolean;
  // The holder's state is the job's: it ends when the spawner reports the job's end.
  const running = (): boolean => subprocess.exitCode === null && subprocess.signalCode === null;
  let forcedAfter: number | undefined;
  let forceTimer: NodeJS.Timeout | undefined;
  let stoppedAt: number | undefined;
  let pipeTimer: NodeJS.Timeout | undefined;
  let failedWithError = false;
  let giveUp: (error: AgentStopError) => void = () => undefined;
  const undeliverable = new Promise<never>((_, reject) => (giveUp = reject));
  undeliverable.catch(() => undefined); // only ever read through the race below
  const noteStop = (signal: NodeJS.Signals): void => {
    if (isStop(signal)) stoppedAt ??= Date.now();
  };
  runningJobs.set(subprocess, noteStop);
  subprocess.once("exit", (_code: number | null, killedBy: NodeJS.Signals | null) => {
    clearTimeout(forceTimer);
    runningJobs.delete(subprocess);
    // Ended by a signal the service did not send (by hand, from another tool): a stop all the same, counted from now.
    if (killedBy !== null) stoppedAt ??= Date.now();
    const delay = pipeCloseDelay(stoppedAt, plan.forceKillAfterDelay, Date.now());
    // A stopped job: its pipes are closed when the force-kill is (or would have been) due, whoever still holds them.
    if (delay !== undefined) pipeTimer = setTimeout(() => closePipes(subprocess), delay);
  });
  subprocess.once("close", () => clearTimeout(pipeTimer)); // every pipe ended on its own

  const fail = (error: Error): void => {
    // Only while execa listens: an 'error' nobody listens to would throw.
    if (running() && subprocess.listenerCount("error") > 0) subprocess.emit("error", error);
  };

  /** Tries until the shim delivers, the job ends, or the tries run out (then the job fails with the reason). */
  const deliver = async (signal: NodeJS.Signals): Promise<"delivered" | "ended" | AgentStopError> => {
    const outcome = await deliverWithRetries(subprocess.pid ?? 0, signal, route, running);
    if (outcome.kind === "delivered") return "delivered";
    if (outcome.kind !== "failed") return "ended";
    fail(outcome.stop);
    return outcome.stop;
  };

  const forceKillLater = (): void => {
    // Not once the job has ended: the timer would only hold the service's event loop open.
    if (plan.forceKillAfterDelay === false || forceTimer !== undefined || !running()) return;
    const delay = plan.forceKillAfterDelay;
    forceTimer = setTimeout(() => {
      if (!running()) return;
      // Marked now, as execa marks it when it sends: the job may be reported before the shim that killed it has exited.
      forcedAfter = delay;
      void deliver("SIGKILL").then((outcome) => {
        if (outcome instanceof AgentStopError) giveUp(outcome);
      });
    }, delay);
  };

  const kill = (signalOrError?: NodeJS.Signals | number | Error, errorArgument?: Error): boolean => {
    const [requested, error] = signalOrError instanceof Error ? [undefined, signalOrError] : [signalOrError, errorArgument];
    if (requested === 0) return running();
    const signal = agentSignal(requested ?? plan.killSignal, "kill()");
    if (!running()) return false;
    if (error !== undefined && !failedWithError && subprocess.listenerCount("error") > 0) {
      // execa's own kill(0, error) fails the job with `error` as its cause, as
      // kill(error) does; signal 0 sends nothing (the EPERM it meets is an
      // 'error' that execa, still waiting for the exit, absorbs).
      failedWithError = true;
      execaKill(0, error);
    }
    // Any stop counts from its request, delivered or not; the force-kill follows the one that execa's timeout, cancelSignal and kill() send.
    noteStop(signal);
    const forceFollows = signal === plan.killSignal && plan.forceKillAfterDelay !== false;
    if (forceFollows) forceKillLater();
    void deliver(signal).then((outcome) => {
      // Nothing else will try to end the job: say so now rather than wait for an exit that may never come.
      if (outcome instanceof AgentStopError && !forceFollows && (signal === plan.killSignal || signal === "SIGKILL")) giveUp(outcome);
    });
    return true;
  };
  subprocess.kill = kill as ResultPromise["kill"];

  return reportForcedKill(subprocess, () => forcedAfter, undeliverable);
}

/** Marks a job ended by the force-kill as execa would: isForcefullyTerminated, and the message says after how long. */
function reportForcedKill(subprocess: ResultPromise, forcedAfter: () => number | undefined, undeliverable: Promise<never>): ResultPromise {
  const mark = <T>(outcome: T): T => {
    const delay = forcedAfter();
    // execa's failures (thrown, or returned with reject: false) carry failed: true and these messages.
    const failure = outcome as { failed?: boolean; signal?: string; isForcefullyTerminated?: boolean; shortMessage?: string; message?: string; escapedCommand?: string };
    if (delay === undefined || failure.failed !== true || failure.signal !== "SIGKILL" || failure.isForcefullyTerminated) return outcome;
    if (typeof failure.shortMessage !== "string" || typeof failure.message !== "string") return outcome;
    const suffix = ` and was forcefully terminated after ${delay} milliseconds`;
    const at = failure.shortMessage.indexOf(`: ${failure.escapedCommand}`);
    const insert = (text: string): string => (at < 0 ? text : `${text.slice(0, at)}${suffix}${text.slice(at)}`);
    Object.assign(failure, { isForcefullyTerminated: true, shortMessage: insert(failure.shortMessage), message: insert(failure.message) });
    return outcome;
  };
  const outcome = subprocess.then(mark, (error: unknown) => {
    throw mark(error);
  });
  // Whichever comes first: the job's end, or the news that nothing could stop it.
  const decorated = Promise.race([outcome, undeliverable]);
  // The subprocess is also its own promise (execa's mergePromise): it now settles with the marked outcome.
  for (const name of ["then", "catch", "finally"] as const) {
    Object.defineProperty(subprocess, name, { value: (Promise.prototype[name] as (...args: unknown[]) => unknown).bind(decorated), writable: true, configurable: true });
  }
  return subprocess;
}
