/*
 * The service's end of the request channel to the resident spawner
 * (src/agent-exec/spawner.ts). The root phase hands it at the fd
 * CLANKIE_SPAWNER_FD names; it is opened once, when this module loads, so
 * that the service learns at once when the spawner has ended.
 *
 * A spawn: execa starts the holder, a capless perl of the service's that
 * holds the job's stdio, kept fds and started marker exactly as execa made
 * them, and waits on one more pipe (its control fd). The spawner takes those
 * fds from the holder (SCM_RIGHTS on its socket, src/perl/spawn-grab.pl) and starts the
 * job with them; when the job ends, the holder is told how ("x CODE LINE":
 * print LINE, exit CODE; "k SIGNAL": die of it) and ends so, and execa
 * reports the job as its own subprocess. The subprocess's pid is the job's
 * once the spawner has started it (undefined before).
 */
import { randomBytes } from "node:crypto";
import { Socket } from "node:net";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { AGENT_USER, EXIT, SPAWNER_FD_VARIABLE } from "../constants.ts";
import { syscallNumbers } from "../os/syscalls.ts";
import type { SpawnerReply, SpawnerRequest } from "../spawner-protocol.ts";

/**
 * What the holder and the acceptor (src/service/stream-acceptor.ts) share of
 * the answer to a grab, in perl: Linux's constants (linux/net.h,
 * linux/socket.h, asm-generic/socket.h) written out; peer, a connection's
 * pid and uid (SO_PEERCRED, socket(7); 0 and -1 when unknown); and
 * answer_grab, which sends "f" with the fds the grab named by SCM_RIGHTS
 * (unix(7); struct msghdr, iovec and cmsghdr as LP64 lays them out, cmsg(3)),
 * or, when one of them is not open here, that fd's number and no fd; true
 * when it went.
 */
export const GRAB_ANSWER = String.raw`
sub AF_UNIX () { 1 } sub SOCK_STREAM () { 1 } sub SOL_SOCKET () { 1 } sub SO_PEERCRED () { 17 } sub SCM_RIGHTS () { 1 }
sub peer { my ($pid, $uid) = unpack "i I", getsockopt($_[0], SOL_SOCKET, SO_PEERCRED) // ""; ($pid // 0, $uid // -1) }
sub answer_grab {
  my ($g, $sendmsg, $closed, @fds) = @_;
  my $cmsg = defined $closed ? "" : pack "Q i i i*", 16 + 4 * @fds, SOL_SOCKET, SCM_RIGHTS, @fds;
  my $said = $closed // "f"; my $iov = pack "p Q", $said, length $said;
  syscall($sendmsg, fileno $g, pack("p L x4 p Q p Q i x4", undef, 0, $iov, 1, $cmsg, length $cmsg, 0), 0) == length $said;
}`;

/**
 * The holder: argv is its control fd, its socket's abstract name and
 * sendmsg(2)'s number. It listens on that name until the spawner's grab
 * (node's uid: SO_PEERCRED, socket(7)) connects and names the fds it takes,
 * and answers it (GRAB_ANSWER: the fds, or the number of one not open here,
 * a keepFds entry without its stdio); then it reads one line on its control
 * fd and ends as it says. A line that comes first (a refused request) ends
 * the wait. Inherits nothing else of the service's. It loads no module, as
 * the grab loads none (loading Socket.pm costs more than perl's own start,
 * on every spawn): the abstract address as unix(7) lays it out (sun_family,
 * then the name with its leading NUL, unpadded), as the grab connects to it.
 */
export const HOLDER_PROGRAM = String.raw`${GRAB_ANSWER}
my ($ctl, $name, $sendmsg) = @ARGV;
open(my $c, "<&=", $ctl) or exit 71;
socket(my $l, AF_UNIX, SOCK_STREAM, 0) or exit 71;
bind($l, pack("S", AF_UNIX) . "\0$name") && listen($l, 8) or exit 71;
while (1) {
  my $r = ""; vec($r, $ctl, 1) = 1; vec($r, fileno $l, 1) = 1;
  select($r, undef, undef, undef) > 0 or next;
  last if vec($r, $ctl, 1);
  accept(my $g, $l) or next;
  (peer($g))[1] == $< or next;
  my @fds = grep { $_ != $ctl && $_ != fileno $l && $_ != fileno $g } (<$g> // "") =~ /(\d+)/g;
  my ($closed) = grep { !-e "/proc/self/fd/$_" } @fds;
  answer_grab($g, $sendmsg, $closed, @fds) or exit 71;
  last;
}
close $l;
my $line = <$c>;
defined $line or exit 71;
if ($line =~ /\Ak (\w+)/) { my $s = $1; $s =~ s/\ASIG//; $SIG{$s} = "DEFAULT"; kill $s, $$; sleep 1; exit 1 }
if ($line =~ /\Ax (\d+) ?(.*)/s) { my ($code, $text) = ($1, $2); $text =~ s/\s+\z//; syswrite STDERR, "$text
" if length $text; exit $code }
exit 71;
`;

/** The holder's argv after its program: its control fd, a name for its socket no other process can foresee, sendmsg(2)'s number. */
export function holderArgs(ctl: number): { args: string[]; socket: string } {
  const socket = `clankie-holder-${randomBytes(16).toString("hex")}`;
  return { args: [String(ctl), socket, String(syscallNumbers().sendmsg)], socket };
}

/** How long a spawn waits for the spawner's answer before the spawner counts as hung: a burst of 50 spends seconds in fork+exec (docs/benchmarks.md). */
export const SPAWNER_REPLY_MS = 30_000;
/** How long the service goes on reading a lost job's pipes after its holder has said why (agent-stop.ts's PIPE_DRAIN_MS). */
const PIPE_DRAIN_MS = 250;
/** How long the service lives on after it lost the spawner, to settle what was pending, before it exits for the launcher's restart policy. */
export const SPAWNER_LOST_EXIT_MS = 1_000;

/** What a stop or a release got back: as the signal stage's run. */
export interface StageOutcome {
  exitCode: number | undefined;
  /** The signal that ended the stage (exitCode undefined then). */
  signal?: string | undefined;
  stderr: string;
  message?: string;
}

/** A spawn request: its id, and the job's pid once the spawner has started it. */
export interface JobRecord {
  readonly id: number;
  pid: number | undefined;
}

interface PendingJob {
  holder: { stdio: readonly (Readable | Writable | null | undefined)[] };
  ctl: number;
  record: JobRecord;
  answered: boolean;
  /** Stops asked before the spawner's first answer: sent once it has come (the job's pid is known, or the job has ended). */
  stops: (() => void)[];
  timer: NodeJS.Timeout;
}

const NO_SPAWNER = `clankie-agent-exec: no spawner: this body runs single-uid and no agent uid (${AGENT_USER}) is configured; start the container as root with the flags of ADR 0272 (docs/launch.md), which start the spawner beside the service`;

export class SpawnerChannel {
  #socket: Socket | undefined;
  #lost: { code: number; line: string } | undefined;
  #jobs = new Map<number, PendingJob>();
  #waits = new Map<number, (outcome: StageOutcome) => void>();
  #next = 1;

  constructor(fdText: string | undefined) {
    const fd = Number(fdText);
    if (fdText === undefined || !Number.isSafeInteger(fd) || fd < 3) {
      this.#lost = { code: EXIT.launchRefused, line: NO_SPAWNER };
      return;
    }
    const socket = new Socket({ fd, readable: true, writable: true });
    socket.unref();
    socket.on("error", () => socket.destroy());
    socket.once("close", () => this.#lose(`clankie-agent-exec: the spawner has ended (its channel closed): no agent work can start or be stopped; restart the body (the launcher's restart policy does, as the service exits now)`));
    createInterface({ input: socket, crlfDelay: Infinity }).on("line", (text) => this.#reply(JSON.parse(text) as SpawnerReply));
    this.#socket = socket;
  }

  /** Why no spawn can start, or undefined while the spawner answers. */
  get lost(): string | undefined {
    return this.#lost?.line;
  }

  #send(request: SpawnerRequest): void {
    this.#socket!.write(`${JSON.stringify(request)}\n`);
    this.#hold();
  }

  /** The channel keeps the service's event loop alive while an answer is awaited, and only then. */
  #hold(): void {
    if (this.#jobs.size > 0 || this.#waits.size > 0) this.#socket?.ref();
    else this.#socket?.unref();
  }

  #lose(line: string): void {
    if (this.#lost !== undefined) return;
    this.#lost = { code: EXIT.osError, line };
    this.#socket?.destroy();
    process.stderr.write(`${line}\n`);
    for (const [id, job] of this.#jobs) {
      // A running job lives on, reparented, and holds its pipes: once the holder has said the line, the service stops reading them, so that the job's promise settles.
      const holder = job.holder as { once?: (event: string, listener: () => void) => unknown };
      holder.once?.("exit", () => setTimeout(() => {
        for (const stream of job.holder.stdio) if (stream && !stream.destroyed) stream.destroy();
      }, PIPE_DRAIN_MS));
      this.#end(id, `x ${EXIT.osError} ${line}`);
      for (const stop of job.stops.splice(0)) stop();
    }
    for (const [seq, done] of this.#waits) {
      this.#waits.delete(seq);
      done({ exitCode: EXIT.osError, stderr: line });
    }
    // The body exits, for the launcher's restart policy: no agent work can start in it again.
    process.exitCode = EXIT.osError;
    setTimeout(() => process.exit(EXIT.osError), SPAWNER_LOST_EXIT_MS);
  }

  #end(id: number, how: string): void {
    const job = this.#jobs.get(id);
    if (job === undefined) return;
    this.#jobs.delete(id);
    clearTimeout(job.timer);
    const ctl = job.holder.stdio[job.ctl] as Writable | undefined;
    ctl?.end(`${how}\n`);
    this.#hold();
  }

  #reply(reply: SpawnerReply): void {
    if (reply.t === "done") {
      const done = this.#waits.get(reply.seq);
      this.#waits.delete(reply.seq);
      this.#hold();
      done?.({ exitCode: reply.code ?? undefined, signal: reply.signal ?? undefined, stderr: reply.stderr });
      return;
    }
    const job = this.#jobs.get(reply.id);
    if (job === undefined) return;
    job.answered = true;
    clearTimeout(job.timer);
    for (const stop of job.stops.splice(0)) stop();
    if (reply.t === "started") job.record.pid = reply.pid;
    else this.#end(reply.id, reply.signal !== null ? `k ${reply.signal}` : `x ${reply.code ?? EXIT.osError} ${reply.line}`);
  }

  /**
   * Asks for a job: the holder (execa's subprocess) keeps the job's fds at
   * `ctl`'s index and before; returns the request's id, whose pid `pidOf`
   * reads once the spawner has started it.
   */
  spawn(holder: { pid?: number | undefined; stdio: readonly (Readable | Writable | null | undefined)[] }, ctl: number, socket: string, argv: readonly string[], env: Readonly<Record<string, string>>): JobRecord {
    const id = this.#next++;
    const record: JobRecord = { id, pid: undefined };
    if (holder.pid === undefined) return record; // execa could not start the holder: it reports that itself
    const timer = setTimeout(() => {
      const job = this.#jobs.get(id);
      if (job !== undefined && !job.answered) this.#lose(`clankie-agent-exec: the spawner did not answer a spawn within ${SPAWNER_REPLY_MS} ms (hung): no agent work can start or be stopped; restart the body (the launcher's restart policy does, as the service exits now)`);
    }, SPAWNER_REPLY_MS);
    timer.unref();
    this.#jobs.set(id, { holder, ctl, record, answered: false, stops: [], timer });
    if (this.#lost !== undefined) this.#end(id, `x ${this.#lost.code} ${this.#lost.line}`);
    else this.#send({ t: "spawn", id, holder: holder.pid, socket, argv, env });
    return record;
  }

  #wait(request: Omit<Extract<SpawnerRequest, { t: "signal" }>, "seq"> | Omit<Extract<SpawnerRequest, { t: "release" }>, "seq">): Promise<StageOutcome> {
    if (this.#lost !== undefined) return Promise.resolve({ exitCode: this.#lost.code, stderr: this.#lost.line });
    const seq = this.#next++;
    return new Promise((done) => {
      this.#waits.set(seq, done);
      this.#send({ ...request, seq } as SpawnerRequest);
    });
  }

  /** A stop, delivered by the spawner's signal stage as the agent to the job's process group: by the request's id (spawnAgent) or a pgid (signalAgent). */
  signal(target: { job: number } | { pgid: number }, signal: NodeJS.Signals): Promise<StageOutcome> {
    // The spawner learns a job's pid from its grab, after the spawn request: a stop of the job waits for the spawner's first answer on it.
    const job = "job" in target ? this.#jobs.get(target.job) : undefined;
    if (job !== undefined && !job.answered) return new Promise((done) => job.stops.push(() => done(this.signal(target, signal))));
    return this.#wait({ t: "signal", signal, ...target });
  }

  /** The end of a private job's lease, by its pid, once it has ended (clankie-agent-exec --private-cleanup, started by the spawner). */
  release(pid: number): Promise<StageOutcome> {
    return this.#wait({ t: "release", pid });
  }
}

let channel: SpawnerChannel | undefined;

/** The one channel of this process, opened at first use (this module's load: see below). */
export function spawnerChannel(): SpawnerChannel {
  channel ??= new SpawnerChannel(process.env[SPAWNER_FD_VARIABLE]);
  return channel;
}

const SAFE_WORD = /^[\w./:=@%+,-]+$/;

/** The shim's command line the service asked for, as execa would escape it: what a result's command and messages name, rather than the holder's. */
function escapeLine(line: readonly string[]): string {
  return line.map((word) => (SAFE_WORD.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`)).join(" ");
}

/** Names the job, not the holder, in the outcome's command, escapedCommand and messages. */
export function showAsShim<T extends PromiseLike<unknown> & object>(subprocess: T, line: readonly string[]): T {
  const shown = escapeLine(line);
  const rename = (outcome: unknown): void => {
    if (outcome === null || typeof outcome !== "object") return;
    const fields = outcome as Record<string, unknown>;
    const holder = fields.escapedCommand;
    if (typeof holder !== "string") return;
    for (const name of ["shortMessage", "message"]) {
      if (typeof fields[name] === "string") fields[name] = (fields[name] as string).replace(holder, shown);
    }
    Object.assign(fields, { command: line.join(" "), escapedCommand: shown });
  };
  const settled = Promise.resolve(subprocess).then(
    (result) => {
      rename(result);
      return result;
    },
    (error: unknown) => {
      rename(error);
      throw error;
    },
  );
  for (const name of ["then", "catch", "finally"] as const) {
    Object.defineProperty(subprocess, name, { value: (Promise.prototype[name] as (...args: unknown[]) => unknown).bind(settled), writable: true, configurable: true });
  }
  return subprocess;
}
