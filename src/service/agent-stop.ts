/*
 * Stopping agent work from the service. The service's uid cannot signal a
 * process of the agent's (no CAP_KILL), so every signal goes through the
 * shim's --signal, which delivers it to the job's process group as the agent.
 */
import { constants as osConstants } from "node:os";
import { execa, type ResultPromise } from "execa";
import { AGENT_EXEC_PATH, AGENT_SIGNALS, EXIT } from "../constants.ts";
import { buildEnvironment } from "../exec/environment.ts";
import { checkTrustedExecutable } from "../exec/rules.ts";
import { Refusal } from "../report.ts";

/** Delivers a signal to an agent process group, as the agent (the service's uid cannot). */
export function signalAgent(pgid: number, signal: NodeJS.Signals, options: { shim?: string } = {}): ResultPromise {
  const shimPath = options.shim ?? AGENT_EXEC_PATH;
  checkTrustedExecutable(shimPath, [0]);
  return execa(shimPath, ["--signal", signal, "--pgid", String(pgid)], {
    env: buildEnvironment({ from: process.env }),
    extendEnv: false,
    shell: false,
    preferLocal: false,
  });
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

/** How often, and how far apart, a signal is retried while the process group still runs as the service (the shim has not yet dropped to the agent). */
const SIGNAL_TRIES = 100;
const SIGNAL_RETRY_MS = 20;

/**
 * Makes execa's ways of stopping a subprocess reach agent work. They all end
 * in kill(2) as the service, which fails with EPERM for a process of another
 * uid (the service holds no CAP_KILL): a job with a 3 s timeout ran its full
 * 25 s and reported exit 0. So the subprocess's kill() is replaced by one that
 * runs `clankie-agent-exec --signal SIG --pgid PID`, which signals the job's
 * whole process group as the agent.
 *
 * execa's own timeout and cancelSignal handlers call `subprocess.kill()`
 * (execa 9.6.0, lib/terminate/timeout.js and cancel.js), so they take this
 * route too, and execa reports the job as it always does (timedOut,
 * isCanceled, isTerminated, signal). forceKillAfterDelay lives inside the
 * kill() execa made, so it is done here (SIGKILL to the group when the
 * command still runs after the delay) and reported as isForcefullyTerminated.
 * A signal the shim cannot deliver fails the job with the reason, as a failed
 * kill(2) does ('error' on the subprocess).
 */
export function routeKillsThroughShim(subprocess: ResultPromise, shim: string, plan: AgentStopPlan): ResultPromise {
  const pgid = subprocess.pid;
  const execaKill = subprocess.kill.bind(subprocess) as (signal: number, error: Error) => boolean;
  const running = (): boolean => pgid !== undefined && subprocess.exitCode === null && subprocess.signalCode === null;
  let forcedAfter: number | undefined;
  let forceTimer: NodeJS.Timeout | undefined;
  let failedWithError = false;
  subprocess.once("exit", () => clearTimeout(forceTimer));

  const fail = (error: Error): void => {
    // Only while execa listens: an 'error' nobody listens to would throw.
    if (running() && subprocess.listenerCount("error") > 0) subprocess.emit("error", error);
  };

  /** True once the shim delivered it; false when the group is gone or the job ended. */
  const deliver = async (signal: NodeJS.Signals): Promise<boolean> => {
    for (let attempt = 1; ; attempt++) {
      if (!running()) return false;
      const result = await signalAgent(pgid!, signal, { shim }).catch((error: { exitCode?: number; stderr?: unknown; message: string }) => error);
      if (result.exitCode === EXIT.ok) return true;
      if (result.exitCode === EXIT.dataRefused) return false; // no such process group: it has ended
      // EXIT.launchRefused: the group is not the agent's, yet: the shim still runs as the service.
      if (result.exitCode === EXIT.launchRefused && attempt < SIGNAL_TRIES) {
        await new Promise((done) => setTimeout(done, SIGNAL_RETRY_MS));
        continue;
      }
      fail(new Error(`cannot deliver ${signal} to agent process group ${pgid}: ${String(result.stderr ?? result.message).trim()}`));
      return false;
    }
  };

  const forceKillLater = (): void => {
    // Not once the job has ended: the timer would only hold the service's event loop open.
    if (plan.forceKillAfterDelay === false || forceTimer !== undefined || !running()) return;
    const delay = plan.forceKillAfterDelay;
    forceTimer = setTimeout(() => {
      if (!running()) return;
      // Marked now, as execa marks it when it sends: the job may be reported before the shim that killed it has exited.
      forcedAfter = delay;
      void deliver("SIGKILL");
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
    void deliver(signal).then((delivered) => {
      if (delivered && signal === plan.killSignal) forceKillLater();
    });
    return true;
  };
  subprocess.kill = kill as ResultPromise["kill"];

  return reportForcedKill(subprocess, () => forcedAfter);
}

/** Marks a job ended by the force-kill as execa would: isForcefullyTerminated, and the message says after how long. */
function reportForcedKill(subprocess: ResultPromise, forcedAfter: () => number | undefined): ResultPromise {
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
  const decorated = subprocess.then(mark, (error: unknown) => {
    throw mark(error);
  });
  // The subprocess is also its own promise (execa's mergePromise): it now settles with the marked outcome.
  for (const name of ["then", "catch", "finally"] as const) {
    Object.defineProperty(subprocess, name, { value: (Promise.prototype[name] as (...args: unknown[]) => unknown).bind(decorated), writable: true, configurable: true });
  }
  return subprocess;
}
