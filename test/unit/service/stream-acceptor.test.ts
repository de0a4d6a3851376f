/*
 * The acceptor's program (src/service/stream-acceptor.ts) run as the
 * service runs it: a child of this process, its listener bound here and
 * handed as fd 3. The kernel judges who connects (SO_PEERCRED); a grab is a
 * perl of a given uid that asks for fds as spawn-grab.pl asks, and writes
 * a word into the one it gets.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ACCEPTOR_PROGRAM, acceptorKinds } from "../../../src/service/stream-acceptor.ts";
import { syscallNumbers } from "../../../src/os/syscalls.ts";
import { rootTest } from "../../helpers/privilege.ts";

const test = suite("stream-acceptor");

test("a piped fd is a connection, an ignored one /dev/null at 0-2 and not open above; execa's undefined is Node's default", () => {
  // The holder's control fd is 4 here: the kinds cover fds 0-3.
  assert.equal(acceptorKinds(["pipe", "overlapped", "ignore", "pipe", "pipe"], 4), ["s", "s", "n", "s"]);
  assert.equal(acceptorKinds([undefined, null, undefined, undefined, "pipe"], 4), ["s", "s", "s", "c"]);
  assert.equal(acceptorKinds(["ignore", "ignore", "ignore", "ignore", "pipe"], 4), ["n", "n", "n", "c"]);
});

test("any other stdio keeps the holder: an inherited fd, a number, a stream, ipc; so does any fd after the control fd (execa's IPC channel)", () => {
  for (const other of ["inherit", 1, { fd: 5 }, "ipc"]) {
    assert.is(acceptorKinds(["pipe", other, "pipe", "pipe"], 3), undefined, JSON.stringify(other));
    assert.is(acceptorKinds(["pipe", "pipe", "pipe", other, "pipe"], 4), undefined, `above 2: ${JSON.stringify(other)}`);
  }
  assert.is(acceptorKinds(["pipe", "pipe", "pipe", "pipe", "ipc"], 3), undefined, "ipc: true puts the channel after the control fd");
  assert.equal(acceptorKinds(["pipe", "pipe", "pipe", "pipe"], 3), ["s", "s", "s"], "control: the same without it");
});

const { recvmsg, sendmsg } = syscallNumbers();

/** A grab as spawn-grab.pl asks: connects to NAME, names fd 1, takes what comes by SCM_RIGHTS and writes WORD into it; prints what happened. */
const GRAB = String.raw`
my ($name, $word, $recvmsg) = @ARGV;
$SIG{PIPE} = "IGNORE"; # the acceptor may close it before the line is written
socket(my $s, 1, 1, 0) or die "socket: $!";
connect($s, pack("S", 1) . "\0$name") or do { print "refused"; exit };
syswrite($s, "1\n");
my ($said, $control) = (chr(0) x 16, chr(0) x 20);
my $iov = pack "p Q", $said, 16;
my $n = syscall($recvmsg, fileno $s, pack("p L x4 p Q p Q i x4", undef, 0, $iov, 1, $control, 20, 0), 0);
if ($n <= 0) { print "closed"; exit }
if (substr($said, 0, $n) ne "f") { print "no fd"; exit }
my ($len, $level, $type, $fd) = unpack "Q i i i", $control;
open(my $h, ">&=", $fd) or do { print "no fd"; exit };
syswrite($h, $word); print "took";
`;
/** Another process (not the acceptor's parent) that connects to the stream listener and says "NAME 1"; prints whether the acceptor closed it within 2 s. */
const STRANGER = String.raw`
my ($listener, $name) = @ARGV;
$SIG{PIPE} = "IGNORE"; # the acceptor may close it before the line is written
socket(my $s, 1, 1, 0) or die "socket: $!";
connect($s, pack("S", 1) . "\0$listener") or do { print "refused"; exit };
syswrite($s, "$name 1\n");
my $r = ""; vec($r, fileno $s, 1) = 1;
select($r, undef, undef, 2) > 0 or do { print "open"; exit };
print sysread($s, my $b, 1) ? "data" : "closed"; # an end (0) or a reset (undef)
`;

function startAcceptor(): { child: ChildProcess; name: string } {
  const name = `clankie-streams-test-${process.pid}-${Math.random().toString(16).slice(2)}`;
  const server = createServer().listen({ path: `\0${name}` });
  const fd = (server as unknown as { _handle: { fd: number } })._handle.fd;
  const child = spawn("/usr/bin/perl", ["-e", ACCEPTOR_PROGRAM, String(sendmsg)], { stdio: ["pipe", "ignore", "inherit", fd] });
  server.close();
  return { child, name };
}

/** This process's connection for `job`'s fd 1, and everything it reads until the acceptor and every grab have closed theirs. */
function ownStream(listener: string, job: string): { socket: Socket; read: Promise<string> } {
  const socket = connect({ path: `\0${listener}` });
  socket.end(`${job} 1\n`);
  let text = "";
  socket.on("data", (chunk: Buffer) => (text += String(chunk)));
  return { socket, read: once(socket, "close").then(() => text) };
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
const perlAs = (uid: number | undefined, program: string, args: string[]): string => {
  const command = uid === undefined ? ["/usr/bin/perl"] : ["/usr/bin/setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "/usr/bin/perl"];
  return spawnSync(command[0]!, [...command.slice(1), "-e", program, ...args], { encoding: "utf8", timeout: 10_000 }).stdout;
};

/**
 * A job with fd 1 piped, the service's connection made; then `attempt` (another process, told the acceptor's
 * listener) and the grab of the acceptor's uid, which writes `word` into what it takes. What each printed,
 * and what the service's connection read.
 */
async function race(job: string, attempt: (listener: string) => string, word: string): Promise<{ attempt: string; grab: string; own: string }> {
  const { child, name } = startAcceptor();
  try {
    child.stdin!.write(`J ${job} 1:s\n`);
    const own = ownStream(name, job);
    await sleep(200);
    const tried = attempt(name);
    const grab = perlAs(undefined, GRAB, [job, word, String(recvmsg)]);
    child.stdin!.write(`E ${job} \n`);
    return { attempt: tried, grab, own: await own.read };
  } finally {
    child.kill("SIGKILL");
  }
}

rootTest(test, "a connection that is not the service's is closed unread, and the job's fd stays the service's; control: the service's own reaches the grab", async () => {
  // Another process of the same uid, after the service's connection: it would take the job's fd 1 in its place.
  const outcome = await race("job-a", (listener) => perlAs(undefined, STRANGER, [listener, "job-a"]), "via-grab");
  assert.equal(outcome, { attempt: "closed", grab: "took", own: "via-grab" });
});

rootTest(test, "a grab of another uid gets no fd; control: a grab of the acceptor's uid takes the job's fd 1", async () => {
  const outcome = await race("job-b", () => perlAs(65534, GRAB, ["job-b", "stolen", String(recvmsg)]), "granted");
  assert.equal(outcome, { attempt: "closed", grab: "took", own: "granted" });
});

rootTest(test, "a job the service aborts (a connection it could not make): its fds are closed and its grab gets none; control: unaborted, the grab takes fd 1", async () => {
  const { child, name } = startAcceptor();
  try {
    child.stdin!.write("J job-d 1:s\nJ job-e 1:s\n");
    const aborted = ownStream(name, "job-d");
    const control = ownStream(name, "job-e");
    await sleep(200);
    child.stdin!.write("A job-d\n");
    const grab = perlAs(undefined, GRAB, ["job-d", "late", String(recvmsg)]);
    const controlGrab = perlAs(undefined, GRAB, ["job-e", "taken", String(recvmsg)]);
    child.stdin!.write("E job-d \nE job-e \n");
    assert.equal({ grab, own: await aborted.read, controlGrab, controlOwn: await control.read }, { grab: "closed", own: "", controlGrab: "took", controlOwn: "taken" });
  } finally {
    child.kill("SIGKILL");
  }
});

rootTest(test, "the end of a job writes the spawner's line on the job's stderr and closes it; a job declared with a closed fd answers the grab with its number", async () => {
  const { child, name } = startAcceptor();
  try {
    child.stdin!.write("J job-c 1:c,2:s\n");
    const socket = connect({ path: `\0${name}` });
    socket.end("job-c 2\n");
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += String(chunk)));
    await sleep(200);
    // The grab names fd 1, which the job holds closed: "1" comes back, and no fd.
    const grab = perlAs(undefined, GRAB, ["job-c", "x", String(recvmsg)]);
    child.stdin!.write("E job-c clankie-agent-exec: refused; fix it\n");
    await once(socket, "close");
    assert.equal({ grab, stderr: text }, { grab: "no fd", stderr: "clankie-agent-exec: refused; fix it\n" });
  } finally {
    child.kill("SIGKILL");
  }
});

test.run();
