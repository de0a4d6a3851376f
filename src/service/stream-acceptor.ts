/*
 * The acceptor: one resident capless perl, the service's child, that makes
 * a job's stdio without a process per spawn. The service connects one Unix
 * socket per piped fd to the acceptor's listener and names the job and the
 * fd on it; the acceptor answers the spawner's grab with those connections
 * by the holder's own protocol (a listener under the request's socket name,
 * the fds the grab names by SCM_RIGHTS: src/perl/spawn-grab.pl, take), and
 * holds its copies until the service says how the job ended, as the holder
 * does. So the spawner and its grab cannot tell the two apart: the grab's
 * checks of the holder (the service's uid, no capability, the socket's own
 * listener) hold for the acceptor as they stand.
 *
 * Only stdio of "pipe" and "ignore" goes this way (acceptorKinds); a spawn
 * that hands the job one of the service's own fds (an inherited stdio, a
 * number, a stream, keepFds of an open fd) keeps the per-spawn holder,
 * which holds them as execa made them (src/service/spawner-client.ts).
 */
import childProcess, { type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { connect, createServer, type Socket } from "node:net";
import { GRAB_ANSWER } from "./spawner-client.ts";

/**
 * The acceptor's program. argv: sendmsg(2)'s number; fd 3: its listener,
 * bound by the service before the acceptor runs (so that the first
 * connection is queued, not refused). stdin, one line each:
 *   J NAME FD:KIND,...   a job: KIND s, a connection of the service's comes
 *                        for FD; n, /dev/null; c, not open (the grab refuses
 *                        a --keep-fd of it, 64)
 *   A NAME               the service's side failed (a connection it could not
 *                        make or name): every fd closed, and its grab, when it
 *                        asks, gets none (it refuses 71: the spawn ended first)
 *   E NAME LINE          its end: LINE (a refusal the spawner said) to its
 *                        fd 2 when the acceptor holds one, then every fd closed
 * A connection on fd 3 counts only when it is the service's (SO_PEERCRED: the
 * parent's pid, socket(7)) and says "NAME FD" first. A job listens under NAME
 * for its grab (the service's uid), and takes one, answered as the holder
 * answers (GRAB_ANSWER). It loads no module, as the holder and the grab load
 * none.
 */
export const ACCEPTOR_PROGRAM = String.raw`${GRAB_ANSWER}
sub LINE_MAX () { 4096 }
sub F_SETFL () { 4 } sub O_NONBLOCK () { 2048 } sub MSG_DONTWAIT () { 64 }
my ($sendmsg) = @ARGV;
my $service = getppid;
$SIG{PIPE} = "IGNORE";
open(my $listener, "+<&=", 3) or exit 71;
fcntl($listener, F_SETFL, O_NONBLOCK) or exit 71; # every waiting connection is taken at each wake-up
open(my $null, "+<", "/dev/null") or exit 71;
my (%job, %wait, $control);
# One line, read a byte at a time: what follows it on a job's stdin is the job's.
sub line { my ($h, $text, $b) = ($_[0], ""); while (sysread($h, $b, 1)) { return $text if $b eq "\n"; $text .= $b; return undef if length $text > LINE_MAX } undef }
sub declare {
  my ($name, $kinds) = @_;
  my $l; socket($l, AF_UNIX, SOCK_STREAM, 0) && bind($l, pack("S", AF_UNIX) . "\0$name") && listen($l, 4) or return;
  $job{$name} = { want => { map { split /:/ } split /,/, $kinds }, have => {}, l => $l };
  $wait{fileno $l} = sub { accept_grab($name) };
}
sub accept_grab {
  my $name = shift; my $j = $job{$name};
  accept(my $g, $j->{l}) or return;
  (peer($g))[1] == $< or return;
  delete $wait{fileno $j->{l}};
  $j->{grab} = $g;
  $wait{fileno $g} = sub { delete $wait{fileno $g}; $j->{fds} = line($g) // ""; settle($name) };
}
sub accept_streams {
  while (accept(my $s, $listener)) {
    (peer($s))[0] == $service or next;
    $wait{fileno $s} = sub { delete $wait{fileno $s}; my ($name, $fd) = (line($s) // "") =~ /\A(\S+) (\d+)\z/ or return; my $j = $job{$name} or return; $j->{have}{$fd} = $s unless $j->{aborted}; settle($name) };
  }
}
# Once every connection of the job has come: the fds to its grab when it has asked, and its end when the service has said it.
sub settle {
  my $name = shift; my $j = $job{$name} or return;
  if ($j->{aborted}) { delete $j->{have}; delete $j->{grab} if defined $j->{fds} }
  elsif (grep { $j->{want}{$_} eq "s" && !$j->{have}{$_} } keys %{$j->{want}}) { return }
  elsif (defined $j->{fds}) {
    my @fds = split /,/, delete $j->{fds};
    my ($closed) = grep { ($j->{want}{$_} // "c") eq "c" } @fds;
    answer_grab($j->{grab}, $sendmsg, $closed, defined $closed ? () : map { $j->{want}{$_} eq "n" ? fileno $null : fileno $j->{have}{$_} } @fds);
    delete $j->{grab}; delete $j->{l};
  }
  return unless defined $j->{end};
  send($j->{have}{2}, "$j->{end}\n", MSG_DONTWAIT) if length $j->{end} && $j->{have}{2};
  delete $wait{fileno $j->{l}} if $j->{l};
  delete $wait{fileno $j->{grab}} if $j->{grab};
  delete $job{$name};
}
while (1) {
  my $r = ""; vec($r, $_, 1) = 1 for 0, fileno $listener, keys %wait;
  select($r, undef, undef, undef) > 0 or next;
  # What was ready at the select, as it was then: a handler below may close an fd that an accept reuses.
  my @ready = map { [$_, $wait{$_}] } grep { vec($r, $_, 1) } keys %wait;
  if (vec($r, 0, 1)) {
    sysread(STDIN, $control, 65536, length($control // "")) or exit 0;
    while ($control =~ s/\A([^\n]*)\n//) {
      my $c = $1;
      if ($c =~ /\AJ (\S+) (\S+)\z/) { declare($1, $2) }
      elsif ($c =~ /\AE (\S+) ?(.*)\z/ && $job{$1}) { $job{$1}{end} = $2; settle($1) }
      elsif ($c =~ /\AA (\S+)\z/ && $job{$1}) { $job{$1}{aborted} = 1; settle($1) }
    }
  }
  accept_streams() if vec($r, fileno $listener, 1);
  for (@ready) { my ($f, $handler) = @$_; $handler->() if ($wait{$f} // 0) == $handler }
}
`;

/** What each fd becomes on the acceptor's route: a connection of the service's, /dev/null, or not open. */
export type StreamKind = "s" | "n" | "c";

/**
 * Pure: the kinds of fds 0 to count-1 for Node's stdio array (as execa hands
 * it to spawn, the holder's control fd at `count`), or undefined when one of
 * them needs the holder, or when execa added an fd after the control fd (its
 * IPC channel, for `ipc` or `gracefulCancel`).
 */
export function acceptorKinds(stdio: readonly unknown[], count: number): StreamKind[] | undefined {
  if (stdio.length > count + 1) return undefined;
  const kinds: StreamKind[] = [];
  for (let fd = 0; fd < count; fd++) {
    // Node's own default for an entry left out: a pipe for 0-2, nothing above.
    const entry = stdio[fd] ?? (fd < 3 ? "pipe" : "ignore");
    if (entry === "pipe" || entry === "overlapped") kinds.push("s");
    else if (entry === "ignore") kinds.push(fd < 3 ? "n" : "c");
    else return undefined;
  }
  return kinds;
}

interface Running {
  child: ChildProcess;
  name: string;
}
let running: Running | undefined;

/** The acceptor, started at first use and again once it has ended (killed: any process of node's uid may); undefined when it cannot start. */
function theAcceptor(perl: string, sendmsg: number, env: NodeJS.ProcessEnv, spawn: typeof childProcess.spawn): Running | undefined {
  if (running !== undefined) return running; // until its exit, below
  const name = `clankie-streams-${randomBytes(16).toString("hex")}`;
  const server = createServer();
  server.on("error", () => undefined); // a listen that failed (EMFILE): no fd below, the holder's route
  server.listen({ path: `\0${name}`, backlog: 256 });
  try {
    // libuv's handle holds the bound fd (Linux); without it the holder's route stays.
    const fd = (server as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
    if (typeof fd !== "number" || fd < 0) return undefined;
    const child = spawn(perl, ["-e", ACCEPTOR_PROGRAM, String(sendmsg)], { stdio: ["pipe", "ignore", "inherit", fd], env });
    child.on("error", () => undefined); // a failed start: no pid, the holder's route (below)
    if (child.pid === undefined) return undefined;
    // Its name is never used again once it has ended: a process that binds it then would get the next spawn's streams.
    child.once("exit", () => {
      if (running?.child === child) running = undefined;
    });
    child.unref();
    (child.stdin as Socket).unref();
    child.stdin!.on("error", () => undefined);
    running = { child, name };
    return running;
  } finally {
    server.close(); // the acceptor holds the listener now
  }
}

/** A job's streams through the acceptor: its connections by fd (null: none), and its end. */
export interface AcceptedJob {
  acceptorPid: number | undefined;
  streams: (Socket | null)[];
  /** When the stdin's connection has named its job, or failed to (Node destroys a child's stdin at its exit). */
  stdinNamed: Promise<boolean>;
  /** Says how the job ended: the acceptor writes `line` to the job's stderr (when piped), then closes its copies. */
  end(line: string): void;
  /** The service's side failed: the acceptor closes the job's fds and gives its grab none. */
  abort(): void;
}

/** Declares a job to the acceptor and connects its streams: each says its job and fd first (the stdin's write callback tells when it has). */
export function acceptJob(job: string, kinds: readonly StreamKind[], start: { perl: string; sendmsg: number; env: NodeJS.ProcessEnv; spawn: typeof childProcess.spawn }): AcceptedJob | undefined {
  const acceptor = theAcceptor(start.perl, start.sendmsg, start.env, start.spawn);
  if (acceptor === undefined) return undefined;
  const control = acceptor.child.stdin!;
  control.write(`J ${job} ${kinds.map((kind, fd) => `${fd}:${kind}`).join(",")}\n`);
  let aborted = false;
  const abort = (): void => {
    if (!aborted) control.write(`A ${job}\n`);
    aborted = true;
  };
  let stdinNamed = Promise.resolve(true);
  const streams = kinds.map((kind, fd) => {
    if (kind !== "s") return null;
    const socket = connect({ path: `\0${acceptor.name}` });
    // A connection that fails before it has named its job (refused, destroyed at once) would leave the job waiting for it.
    const named = new Promise<boolean>((done) => socket.write(`${job} ${fd}\n`, (error) => done(error == null)));
    void named.then((ok) => ok || abort());
    if (fd === 0) {
      stdinNamed = named;
      socket.resume(); // the job's stdin is written, not read: what the job writes on it is dropped, so that its end comes
    } else {
      socket.end(); // an output: the service writes nothing more on it
    }
    return socket;
  });
  return { acceptorPid: acceptor.child.pid, streams, stdinNamed, abort, end: (line) => void control.write(`E ${job} ${line.replace(/\s+/g, " ").trim()}\n`) };
}
