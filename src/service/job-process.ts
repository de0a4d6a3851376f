/*
 * A spawn with no process of the service's own: execa starts the holder
 * (spawnAgent, src/system-exec.ts), and when every stdio entry is a pipe or
 * nothing, Node's spawn of it gives a JobProcess instead, whose streams are
 * the acceptor's connections (src/service/stream-acceptor.ts). execa builds
 * its subprocess, options and result on it as on a child process: the
 * holder's control fd is a stream here, on which the channel says how the
 * job ended (src/service/spawner-client.ts), and the JobProcess ends so.
 *
 * Node's spawn is wrapped once, when this module loads (its CommonJS export,
 * and execa's ES import of it by syncBuiltinESMExports): the wrapper hands
 * every call through unchanged but the one spawnAgent's execa makes inside
 * startWithoutHolder.
 */
import childProcess, { type ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import { syncBuiltinESMExports } from "node:module";
import { Duplex } from "node:stream";
import { type AcceptedJob, acceptJob, acceptorKinds } from "./stream-acceptor.ts";

/** The holder's end as the channel writes it: "x CODE LINE" (exited CODE, LINE its stderr's last words) or "k SIGNAL". */
export function parseEnd(said: string): { exitCode: number | null; signal: NodeJS.Signals | null; line: string } {
  const killed = /^k (?:SIG)?([A-Z0-9]+)/.exec(said);
  if (killed) return { exitCode: null, signal: `SIG${killed[1]!}` as NodeJS.Signals, line: "" };
  const exited = /^x (\d+) ?(.*)/s.exec(said);
  return exited ? { exitCode: Number(exited[1]), signal: null, line: exited[2]!.trim() } : { exitCode: 71, signal: null, line: "" };
}

/** A job of the spawner's, as execa sees a child process: pid, stdio, exitCode and signalCode, and the spawn, exit and close events. */
class JobProcess extends EventEmitter {
  pid: number | undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  readonly killed = false;
  readonly connected = false;
  readonly stdio: (Duplex | null)[];
  // Own, writable properties, as a child process's are: execa puts a transform's stream in their place.
  stdin: Duplex | null;
  stdout: Duplex | null;
  stderr: Duplex | null;
  readonly spawnfile: string;
  readonly spawnargs: string[];
  #open = 0;

  constructor(file: string, args: readonly string[], job: AcceptedJob) {
    super();
    this.spawnfile = file;
    this.spawnargs = [file, ...args];
    // The acceptor's until spawnAgent names the job's (the request's holder, which the grab checks).
    this.pid = job.acceptorPid;
    this.stdio = job.streams.map((stream) => (stream === null ? null : this.#track(stream)));
    let said = "";
    const control = new Duplex({
      read: () => undefined,
      write: (chunk: Buffer, _encoding, done) => {
        said += String(chunk);
        done();
      },
      final: (done) => {
        this.#end(parseEnd(said), job);
        control.push(null);
        done();
      },
    });
    this.stdio.push(this.#track(control));
    [this.stdin, this.stdout, this.stderr] = [this.stdio[0] ?? null, this.stdio[1] ?? null, this.stdio[2] ?? null];
    process.nextTick(() => this.emit("spawn"));
  }

  #track(stream: Duplex): Duplex {
    this.#open++;
    stream.once("close", () => {
      this.#open--;
      this.#closeWhenDone();
    });
    return stream;
  }

  /** Whether the channel has said how the job ended (parseEnd gives a code or a signal, never neither). */
  #ended(): boolean {
    return this.exitCode !== null || this.signalCode !== null;
  }

  /** As a child process: "close" after "exit" and every stdio stream's close. */
  #closeWhenDone(): void {
    if (this.#ended() && this.#open === 0) this.emit("close", this.exitCode, this.signalCode);
  }

  #end(end: ReturnType<typeof parseEnd>, job: AcceptedJob): void {
    job.end(end.line);
    this.exitCode = end.exitCode;
    this.signalCode = end.signal;
    this.emit("exit", this.exitCode, this.signalCode);
    // Node destroys a child's stdin at its exit; once its connection has named its job, so that the acceptor learns whose it was.
    const stdin = this.stdio[0];
    if (stdin) void job.stdinNamed.then(() => stdin.destroy());
    this.#closeWhenDone();
  }

  /** Every stop goes through the spawner (routeKillsThroughShim replaces the subprocess's kill); execa itself sends only 0, which asks whether the job runs. */
  kill(): boolean {
    return !this.#ended();
  }
  ref(): void {}
  unref(): void {}
  disconnect(): void {}
}

const nodeSpawn = childProcess.spawn;
let nextSpawn: ((file: string, args: readonly string[], options: { stdio?: readonly unknown[] }) => ChildProcess | undefined) | undefined;

function spawnOrJob(this: unknown, ...given: Parameters<typeof childProcess.spawn>): ChildProcess {
  const take = nextSpawn;
  nextSpawn = undefined;
  const [file, args, options] = given as unknown as [string, readonly string[], { stdio?: readonly unknown[] }];
  return take?.(file, Array.isArray(args) ? args : [], options ?? {}) ?? nodeSpawn.apply(this, given);
}
childProcess.spawn = spawnOrJob as typeof childProcess.spawn;
syncBuiltinESMExports();

/**
 * Calls `start` (one execa call of the holder, synchronous), whose spawn
 * gives a JobProcess when stdio allows it (fds 0 to count-1 before the
 * holder's control fd) and the acceptor runs; else the holder starts as
 * before. `job` is the request's socket name, under which the acceptor
 * answers the grab.
 */
export function startWithoutHolder<T>(count: number, job: string, acceptor: { perl: string; sendmsg: number; env: NodeJS.ProcessEnv }, start: () => T): T {
  let accepted: AcceptedJob | undefined;
  nextSpawn = (file, args, options) => {
    const kinds = acceptorKinds(options.stdio ?? [], count);
    accepted = kinds === undefined ? undefined : acceptJob(job, kinds, { ...acceptor, spawn: nodeSpawn });
    return accepted === undefined ? undefined : (new JobProcess(file, args, accepted) as unknown as ChildProcess);
  };
  try {
    return start();
  } catch (error) {
    // execa threw after its spawn: no request follows, so nothing else would end the job at the acceptor.
    accepted?.abort();
    accepted?.end("");
    for (const stream of accepted?.streams ?? []) stream?.destroy();
    throw error;
  } finally {
    nextSpawn = undefined;
  }
}
