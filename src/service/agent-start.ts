/*
 * Telling a refusal from the job's own exit. The shim and its stage refuse
 * with the exit codes of README.md's table (64, 75, 77, 126, 127, ...), and
 * the agent's command may exit with any of them too: a job that ran and
 * exited 75 looked like a busy pool. So spawnAgent hands the shim one more
 * pipe, the started marker (`--started-fd N`), which the verification stage
 * marks close-on-exec and writes "S" to right before its execve(2) (and "F"
 * after one that failed: src/stage/stage.pl, "exec"). The command never
 * holds it: a successful exec closes it. Exactly "S" is a start; the
 * service reads it to its end, which comes at the exec or the exit.
 */
import type { Readable } from "node:stream";
import type { ResultPromise } from "execa";
import { AgentStopError, lastLine } from "./agent-stop.ts";

/**
 * The marker goes at the first fd from 17 that the service's own stdio does
 * not use: the shim's Node marks fds 0-15 close-on-exec at start-up, and
 * every open fd after them up to the first that is not open (16 stays
 * unused; src/agent-exec/descriptors.ts).
 */
export const FIRST_MARKER_FD = 17;

/** What the shim or its stage refused, instead of running the command. */
export interface AgentRefusal {
  /** The shim's exit code (README, "Exit codes"). */
  code: number;
  /** Its one line (`clankie-agent-exec: <what is wrong>; <how to fix it>`), when stderr was piped and kept (execa's default); else undefined. */
  line: string | undefined;
}

/**
 * What spawnAgent adds to execa's result (and to its error): one of three
 * outcomes, told apart by `started` and `refused`, so that `if (r.refused)
 * r.refusal.code` needs no `!`.
 */
export type AgentStart = AgentStarted | AgentRefused | AgentNotStarted;

/** The command was exec'd as the agent: the exit code, signal and output that follow are its own. */
export interface AgentStarted {
  started: true;
  refused: false;
  refusal?: undefined;
}

/** The shim or its stage refused to start the command: the exit code is the refusal's, not the command's. */
export interface AgentRefused {
  started: false;
  refused: true;
  refusal: AgentRefusal;
}

/** Neither: stopped (a timeout, kill()) before the command started, or the shim itself could not be spawned (execa's own error, no exitCode). */
export interface AgentNotStarted {
  started: false;
  refused: false;
  refusal?: undefined;
}

type StdioOption = unknown;
interface StdioOptions {
  stdio?: StdioOption;
  stdin?: StdioOption;
  stdout?: StdioOption;
  stderr?: StdioOption;
}

/**
 * Pure: execa's stdio array with the marker pipe at its fd, as execa
 * itself spreads `stdio` (a string for all three, or the stdin, stdout and
 * stderr options; an entry left undefined takes execa's default: "pipe" for
 * 0-2, "ignore" above).
 */
export function stdioWithMarker(options: StdioOptions): { stdio: StdioOption[]; fd: number } {
  const { stdio, stdin, stdout, stderr } = options;
  const base: StdioOption[] = stdio === undefined ? [stdin, stdout, stderr] : typeof stdio === "string" ? [stdio, stdio, stdio] : Array.isArray(stdio) ? [...(stdio as StdioOption[])] : [stdio];
  const fd = Math.max(FIRST_MARKER_FD, base.length);
  return { stdio: Array.from({ length: fd + 1 }, (_, n) => (n === fd ? "pipe" : base[n])), fd };
}

/** Everything read from the marker until its end (the exec or the exit), as text; "" without a stream. */
export function readMarker(stream: Readable | null | undefined): Promise<string> {
  if (!stream) return Promise.resolve("");
  return new Promise((done) => {
    let text = "";
    stream.on("data", (chunk: Buffer | string) => (text += String(chunk)));
    const end = (): void => done(text);
    stream.once("end", end);
    stream.once("close", end);
    stream.once("error", end);
  });
}

/** Pure: the start as the marker tells it, beside how the subprocess ended. */
export function startOutcome(marker: string, ended: { exitCode?: number | undefined; signal?: string | undefined; stderr?: unknown }): AgentStart {
  if (marker === "S") return { started: true, refused: false };
  // Not started and exited by itself with a status: the shim's or its stage's refusal. Killed before the start (a stop), or never spawned (execa's own failure), is no refusal.
  const { exitCode } = ended;
  if (typeof exitCode === "number" && exitCode !== 0 && !ended.signal) return { started: false, refused: true, refusal: { code: exitCode, line: lastLine(ended.stderr) } };
  return { started: false, refused: false };
}

/**
 * The refusal an outcome of spawnAgent carries (its result, or the error it
 * rejected with), or undefined: the command started, or was stopped before
 * it could, or the outcome is not spawnAgent's.
 */
export function refusalOf(outcome: unknown): AgentRefusal | undefined {
  if (outcome === null || typeof outcome !== "object") return undefined;
  const start: { refused?: unknown; refusal?: unknown } = outcome;
  return start.refused === true ? (start.refusal as AgentRefusal) : undefined;
}

/** Decorates the subprocess's outcome, result or error, with its AgentStart once the marker has ended. */
export function reportStart(subprocess: ResultPromise, marker: Promise<string>): ResultPromise {
  const mark = async (outcome: unknown): Promise<void> => {
    if (outcome !== null && typeof outcome === "object") Object.assign(outcome, startOutcome(await marker, outcome as Parameters<typeof startOutcome>[1]));
  };
  const settled = subprocess.then(
    async (result) => {
      await mark(result);
      return result;
    },
    async (error: unknown) => {
      // The job may still run (no stop was delivered): its marker may never end.
      if (!(error instanceof AgentStopError)) await mark(error);
      throw error;
    },
  );
  for (const name of ["then", "catch", "finally"] as const) {
    Object.defineProperty(subprocess, name, { value: (Promise.prototype[name] as (...args: unknown[]) => unknown).bind(settled), writable: true, configurable: true });
  }
  return subprocess;
}
