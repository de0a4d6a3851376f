/*
 * The resident spawner beside a capless service (src/agent-exec/spawner.ts,
 * src/service/spawner-client.ts), after a real ADR launch in the launch
 * sandbox: what the service holds, the spawner killed or stopped mid-job, the service
 * killed mid-job, another node process and a job reaching for the channel,
 * and a burst of 50. Judged by /proc and the exit statuses.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { Body, IDS, type LaunchOptions, SANDBOX_FIXTURES, SANDBOX_NODE } from "../helpers/sandbox.ts";
import { REPO } from "../helpers/paths.ts";

const test = suite("spawner");
const FIXTURE = `${SANDBOX_FIXTURES}/spawner-service.mjs`;

function launch(scenario: string, fixture = FIXTURE, args: readonly string[] = [], binds: NonNullable<LaunchOptions["binds"]> = []): { status: number | null; out: Record<string, unknown>; stdout: string; stderr: string } {
  const body = new Body();
  try {
    chownSync(body.state, IDS.service, IDS.service);
    chownSync(body.workspace, IDS.service, IDS.service);
    const run = body.run({ as: "root", command: [SANDBOX_NODE, fixture, scenario, ...args], timeoutMs: 120_000, binds });
    const line = run.stdout.split("\n").find((text) => text.startsWith("{")) ?? "{}";
    return { status: run.status, out: JSON.parse(line) as Record<string, unknown>, stdout: run.stdout, stderr: run.stderr };
  } finally {
    body.cleanup();
  }
}

const capLine = (text: string, name: string): string | undefined => new RegExp(`^${name}:\\s*([0-9a-f]+)$`, "m").exec(text)?.[1];

rootTest(test, "the service holds no capability in any set, the bounding set included; the job runs as the agent with fds 0-2 only", () => {
  const r = launch("smoke");
  assert.is(r.status, 0, r.stderr);
  const service = r.out.service as string;
  for (const set of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) assert.is(capLine(service, set), "0000000000000000", `${set}: ${service}`);
  assert.match(service, /^NoNewPrivs:\s*1$/m);
  const result = r.out.result as { exitCode: number; stdout: string; stderr: string; started: boolean };
  assert.is(result.exitCode, 3);
  assert.is(result.started, true);
  assert.is(result.stderr, "err");
  const lines = result.stdout.split("\n");
  assert.is(lines[0], "1001");
  for (const set of ["CapInh", "CapPrm", "CapEff", "CapAmb"]) assert.is(capLine(result.stdout, set), "0000000000000000", result.stdout);
  // ls lists its own directory fd (3) beside 0-2: nothing else reached the job.
  assert.equal(lines.slice(-4), ["0", "1", "2", "3"], result.stdout);
});

rootTest(test, "the spawner's zygote killed mid-job by the service (a process of node's uid may, as it may kill the spawner): the spawner ends with it, the job's promise and the next spawn end with one line (71), and the body exits 71", () => {
  const r = launch("zygote-killed");
  assert.is(r.out.zygotes, 1, `control: the one zygote was found and killed (${JSON.stringify(r.out)})`);
  assert.is(r.status, 71, `${JSON.stringify(r.out)}\n${r.stderr}`);
  const line = "clankie-agent-exec: the spawner has ended (its channel closed): no agent work can start or be stopped; restart the body (the launcher's restart policy does, as the service exits now)";
  const running = r.out.running as { exitCode: number; stderr: string };
  const next = r.out.next as { exitCode: number; refused: boolean; refusal: { code: number; line: string } };
  assert.equal([running.exitCode, running.stderr], [71, line], JSON.stringify(running));
  assert.equal([next.exitCode, next.refused, next.refusal], [71, true, { code: 71, line }], JSON.stringify(next));
  assert.ok(r.stderr.includes("clankie-agent-exec: the spawner's zygote ended (SIGKILL): no agent work can start or be stopped; restart the body (the launcher's restart policy does, as the service exits now)"), r.stderr);
});

rootTest(test, "keepFds 3, 4 and 5 reach the job as the service's own pipes (3 and 4 are the numbers the grab's own files take while it takes the job's fds)", () => {
  const r = launch("kept-low-fds");
  assert.is(r.status, 0, r.stderr);
  assert.equal(r.out.kept, ["three", "four", "five"], JSON.stringify(r.out));
  assert.is((r.out.result as { exitCode: number }).exitCode, 0, JSON.stringify(r.out));
});

rootTest(test, "a spawn with piped stdio starts no process of the service's: its only child is the acceptor; control: a spawn with an inherited stdout starts its holder beside it, and both run", () => {
  const r = launch("acceptor-route");
  assert.is(r.status, 0, r.stderr);
  const acceptor = { program: "/usr/bin/perl", args: 1, holder: false };
  assert.equal(r.out.whilePiped, [acceptor], JSON.stringify(r.out));
  assert.equal(r.out.whileInherited, [acceptor, { program: "/usr/bin/perl", args: 3, holder: true }], JSON.stringify(r.out));
  assert.equal((r.out.results as { exitCode: number; started: boolean }[]).map((x) => [x.exitCode, x.started]), [[0, true], [0, true]], JSON.stringify(r.out));
});

/** A scenario that kills the service's acceptor: it ran, and (the control) found and killed the acceptor; the spawn's result, and the rest of what it printed. */
function acceptorKilled(scenario: string): { result: { exitCode: number; stdout: string; started: boolean }; out: Record<string, unknown> } {
  const r = launch(scenario);
  assert.is(r.status, 0, r.stderr);
  assert.is(r.out.killed, 1, `control: the acceptor was found and killed (${JSON.stringify(r.out)})`);
  const result = r.out.result as { exitCode: number; stdout: string; started: boolean };
  return { result: { exitCode: result.exitCode, stdout: result.stdout, started: result.started }, out: r.out };
}

rootTest(test, "the acceptor killed by the service (a process of node's uid may): the next spawn starts another and runs", () => {
  const r = acceptorKilled("acceptor-killed");
  assert.equal(r.result, { exitCode: 0, stdout: "ran", started: true }, JSON.stringify(r.out));
});

rootTest(test, "the acceptor killed while a job it made the stdio of runs: the job's output before and after, and its exit, reach the service; the next spawn starts another acceptor and runs", () => {
  const r = acceptorKilled("acceptor-killed-mid-job");
  assert.equal(r.result, { exitCode: 3, stdout: "before\nafter", started: true }, JSON.stringify(r.out));
  const next = r.out.next as { exitCode: number; stdout: string };
  assert.equal({ exitCode: next.exitCode, stdout: next.stdout }, { exitCode: 0, stdout: "ran" }, JSON.stringify(r.out));
});

rootTest(test, "execa's options on the acceptor's route: a transform, all, lines, maxBuffer, bytes, input, iteration and pipe() give what execa gives", () => {
  const r = launch("execa-options");
  assert.is(r.status, 0, r.stderr);
  assert.equal({ ...r.out, upper: (r.out.upper as { stdout: string }).stdout }, {
    upper: "ABC",
    all: ["err", "out"],
    lines: ["a", "b"],
    max: { isMaxBuffer: true, stdout: "123" },
    bytes: [104, 105],
    input: "5",
    iterated: ["x", "y"],
    piped: "q",
  }, JSON.stringify(r.out));
});

rootTest(test, "a spawn whose stdout is destroyed at once settles, and the next runs (the acceptor drops the job rather than wait for a connection that never comes)", () => {
  const r = launch("stream-destroyed");
  assert.is(r.status, 0, r.stderr);
  assert.not.equal(r.out.outcome, "hung", JSON.stringify(r.out));
  const next = r.out.next as { exitCode: number; stdout: string };
  assert.equal([next.exitCode, next.stdout], [0, "next"], JSON.stringify(r.out));
});

rootTest(test, "the spawner killed mid-job: the job's promise and the next spawn end with one line (71), and the body exits 71; control: the same job stopped by kill() with the spawner alive, the next spawn runs and the body lives on", () => {
  const control = launch("spawner-killed", FIXTURE, ["control"]);
  assert.is(control.status, 0, `${JSON.stringify(control.out)}\n${control.stderr}`);
  const stopped = control.out.running as { exitCode: number | undefined; signal: string | null; stderr: string };
  assert.equal({ exitCode: stopped.exitCode, signal: stopped.signal, stderr: stopped.stderr }, { exitCode: undefined, signal: "SIGTERM", stderr: "" }, JSON.stringify(control.out));
  assert.equal((control.out.next as { exitCode: number; refused: boolean }).exitCode, 0, JSON.stringify(control.out));
  assert.not.ok(control.stderr.includes("the spawner has ended"), control.stderr);
  const r = launch("spawner-killed");
  assert.is(r.status, 71, `${JSON.stringify(r.out)}\n${r.stderr}`);
  const line = "clankie-agent-exec: the spawner has ended (its channel closed): no agent work can start or be stopped; restart the body (the launcher's restart policy does, as the service exits now)";
  const running = r.out.running as { exitCode: number; stderr: string; started: boolean };
  const next = r.out.next as { exitCode: number; stderr: string; refused: boolean; refusal: { code: number; line: string } };
  assert.is(running.exitCode, 71, JSON.stringify(running));
  assert.is(running.stderr, line);
  assert.is(next.exitCode, 71);
  assert.is(next.refused, true);
  assert.equal(next.refusal, { code: 71, line });
  assert.ok(r.stderr.includes(line), r.stderr);
});

rootTest(test, "the spawner hung (stopped) before a spawn: the spawn ends with one line (71) after 30 s without an answer, and the body exits 71; control: the spawner resumed after 1 s, the same spawn runs", () => {
  const control = launch("spawner-hung", FIXTURE, ["control"]);
  assert.is(control.status, 0, `${JSON.stringify(control.out)}\n${control.stderr}`);
  assert.equal((control.out.result as { exitCode: number; started: boolean }).exitCode, 0, JSON.stringify(control.out));
  const r = launch("spawner-hung");
  assert.is(r.status, 71, `${JSON.stringify(r.out)}\n${r.stderr}`);
  const line = "clankie-agent-exec: the spawner did not answer a spawn within 30000 ms (hung): no agent work can start or be stopped; restart the body (the launcher's restart policy does, as the service exits now)";
  const result = r.out.result as { exitCode: number; stderr: string; refused: boolean };
  assert.is(result.exitCode, 71, JSON.stringify(r.out));
  assert.is(result.stderr, line);
  assert.ok((r.out.ms as number) >= 30_000 && (r.out.ms as number) < 45_000, `ended after ${r.out.ms as number} ms`);
  assert.ok(r.stderr.includes(line), r.stderr);
});

for (const [scenario, how, signal, code, running] of [["service-killed", "killed (SIGKILL)", 9, 0, 2], ["service-exits", "exits (process.exit(0))", 0, 0, 2], ["service-idle", "exits (process.exit(0))", 0, 0, 0]] as const) {
  rootTest(test, `the service ${how} with ${running} jobs running and a grab waiting idle: the spawner ends every job's group and exits, and no process of its own outlives it; control: each job still ran a moment after it started`, () => {
    const body = new Body();
    try {
      chownSync(body.state, IDS.service, IDS.service);
      chownSync(body.workspace, IDS.service, IDS.service);
      const run = body.run({ as: "root", direct: true, command: ["/usr/bin/perl", `${SANDBOX_FIXTURES}/spawner-harness.pl`, SANDBOX_NODE, FIXTURE, scenario], timeoutMs: 60_000 });
      assert.is(run.status, 0, `${run.stdout}\n${run.stderr}`);
      const out = JSON.parse(run.stdout) as { serviceSignal: number; serviceCode: number; jobs: number[]; aliveBefore: number; jobsGone: number; spawnerGone: number; privilegedLeft: number };
      assert.equal({ signal: out.serviceSignal, code: out.serviceCode }, { signal, code }, run.stdout);
      assert.is(out.aliveBefore, 1, `control: the jobs ${out.jobs.join(",")} ran before the service ended`);
      assert.is(out.jobs.length, running, run.stdout);
      assert.is(out.jobsGone, running, `of the jobs ${out.jobs.join(",")}, ${out.jobsGone} ended`);
      assert.is(out.spawnerGone, 1, "the spawner still runs");
      assert.is(out.privilegedLeft, 0, "a process of node's uid holding a capability (a grab) outlived the spawner");
    } finally {
      body.cleanup();
    }
  });
}

rootTest(test, "an fd the launch left open in the spawner (20, not close-on-exec) reaches no job: the grab closes it", () => {
  const body = new Body();
  try {
    chownSync(body.state, IDS.service, IDS.service);
    chownSync(body.workspace, IDS.service, IDS.service);
    const run = body.run({ as: "root", direct: true, command: ["/usr/bin/perl", `${SANDBOX_FIXTURES}/spawner-harness.pl`, SANDBOX_NODE, FIXTURE, "stray-fd"], timeoutMs: 60_000 });
    assert.is(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const result = (JSON.parse(run.stdout) as { result: { exitCode: number; stdout: string; stderr: string } }).result;
    // ls lists its own directory fd (3) beside 0-2; with fd 20 at the stage, the stage refuses the spawn.
    assert.equal({ exitCode: result.exitCode, fds: result.stdout.split("\n") }, { exitCode: 0, fds: ["0", "1", "2", "3"] }, result.stderr);
  } finally {
    body.cleanup();
  }
});

rootTest(test, "another node process of the service uid: no copy of the channel, none by /proc, and nothing of the spawner's", () => {
  const r = launch("other-node");
  assert.is(r.status, 0, r.stderr);
  assert.is(r.out.serviceFd3, "socket", "control: the service holds the channel at fd 3");
  // Node marks inherited fds close-on-exec: a plain child holds no copy; it may read the capless service's fd links (docs/security.md) but a socket cannot be reopened by path; the spawner's fds and environ are closed to a process holding fewer capabilities (ptrace's rule).
  assert.equal(r.out.other, { holdsChannel: false, serviceLink: true, reopen: "ENXIO", spawnerLink: "EACCES", spawnerEnviron: "EACCES" });
});

rootTest(test, "another node process that holds the channel gets no more than the service could ask: no command but agent work, no holder but a capless one of the service's, no socket but that holder's, no field that hides a chain of its own behind a NUL, no environment but the agent's carried variables (LD_PRELOAD for a private job's shim), no stop or release of a job the spawner did not start; control: a request the service could send runs as the agent", () => {
  // test/fixtures/preload-root.c, built for the sandbox's /opt/preload (cc, from scripts/setup-debian.sh's gcc).
  const dir = mkdtempSync(join(tmpdir(), "clankie-preload-"));
  const cc = spawnSync("cc", ["-shared", "-fPIC", "-O2", "-o", join(dir, "preload-root.so"), join(REPO, "test/fixtures/preload-root.c")], { encoding: "utf8" });
  assert.is(cc.status, 0, cc.stderr);
  chmodSync(dir, 0o755);
  let r: ReturnType<typeof launch>;
  try {
    r = launch("", `${SANDBOX_FIXTURES}/spawner-raw.mjs`, ["/opt/preload/preload-root.so"], [[dir, "/opt/preload", "ro"]]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.is(r.status, 0, `${r.stdout}\n${r.stderr}`);
  type Answer = { code: number | null; signal: null; line: string };
  const o = r.out as { [name in "notCommand" | "holderAgent" | "holderSpawner" | "otherSocket" | "nulHolder" | "nulSocket" | "preloadEnv" | "holderDash" | "signalOwnGroup" | "signalSpawner" | "releaseUnknown" | "control"]: Answer } & { self: number; spawner: number; named: number; other: number; agentJob: number | null; nulRan: string | null; preloadRan: string | null; spawnerAlive: boolean };
  assert.equal(o.notCommand, { code: 64, signal: null, line: 'clankie-agent-exec: unknown option "--signal"; put the command after --: clankie-agent-exec [OPTIONS] -- COMMAND [ARG...] (see clankie-agent-exec --help)' }, JSON.stringify(o));
  assert.ok(o.agentJob !== null, "the agent's job ran");
  assert.equal(o.holderAgent, { code: 77, signal: null, line: `clankie-agent-exec: the job's holder ${o.agentJob} is not the service's uid ${IDS.service}; only the service's own children hand stdio to agent work` });
  assert.is(o.holderSpawner.code, 77);
  assert.match(o.holderSpawner.line, new RegExp(`^clankie-agent-exec: the job's holder ${o.spawner} holds capabilities \\(Cap\\w+ 0+c0\\); only a capless child of the service hands stdio to agent work$`));
  assert.equal(o.otherSocket, { code: 77, signal: null, line: `clankie-agent-exec: the socket the job's holder ${o.named} named is held by process ${o.other}; only the service's own holder hands stdio to agent work` });
  // The holder that hides them is no pid (refused first as such); the socket's name that hides them is refused as a field with a NUL, though its holder listens under the name they start with.
  assert.is(o.nulHolder.code, 64, JSON.stringify(o.nulHolder));
  assert.match(o.nulHolder.line, /^clankie-agent-exec: the spawn names no holder's pid \("-\\u0000/);
  assert.equal([o.nulSocket, o.nulRan], [{ code: 64, signal: null, line: "clankie-agent-exec: a field of the job holds a NUL byte; send the holder's pid, its socket's name, the command and its environment without NUL bytes" }, null], JSON.stringify(o));
  assert.equal([o.preloadEnv, o.preloadRan], [{ code: 64, signal: null, line: `clankie-agent-exec: the spawn's environment names "LD_PRELOAD": only the agent's carried variables (CLANKIE_ENV_NAME) and CLANKIE_STARTED_FD reach the spawner; spawn through spawnAgent, which carries them` }, null], JSON.stringify(o));
  assert.equal(o.holderDash, { code: 64, signal: null, line: `clankie-agent-exec: the spawn names no holder's pid ("-"); spawn through spawnAgent, which starts the holder or its acceptor and names it` }, JSON.stringify(o));
  for (const [name, pgid] of [["signalOwnGroup", o.self], ["signalSpawner", o.spawner]] as const) {
    assert.equal(o[name], { code: 65, signal: null, line: `clankie-agent-exec: no running job of the spawner's leads process group ${pgid}; pass the pid of a job spawnAgent started` }, name);
  }
  assert.equal(o.releaseUnknown, { code: 65, signal: null, line: "clankie-agent-exec: process 1 is no ended private job of the spawner's; release only a private job's own pid, once" });
  assert.is(o.spawnerAlive, true, "the spawner lives on after every refusal and the line that was no request");
  assert.equal(o.control, { code: 0, signal: null, line: "" });
  assert.ok(r.stdout.split("\n").includes(`control-ran-as-${IDS.agent}`), r.stdout);
});

rootTest(test, "a job that reaches for the channel: no fd of it, no /proc path to it, and no signal to the spawner; control: the same reads and signal reach the job's own shell", () => {
  const r = launch("job-reaches");
  assert.is(r.status, 0, r.stderr);
  const result = r.out.result as { exitCode: number; stdout: string };
  assert.is(result.exitCode, 0, JSON.stringify(result));
  const [fds, ...rest] = result.stdout.split("\n");
  assert.is(fds!.trim(), "0 1 2 3", "ls's own directory fd beside 0-2");
  assert.equal(rest, ["service-fd3=1", "spawner-fds=2", "spawner-signal=1", "control-fd=0", "control-fds=0", "control-signal=0"], result.stdout);
});

rootTest(test, "the spawner started without its channel (CLANKIE_SPAWNER_FD unset or below 3) or without the identities the root phase hands it (CLANKIE_SPAWNER_IDS unset or malformed): refused in one line (64) before it reads anything; control: with both, it starts and waits on its channel", () => {
  const body = new Body();
  try {
    // As the root phase leaves it (node, SETUID+SETGID, NoNewPrivs), but started by hand.
    const asSpawner = ["/usr/bin/setpriv", `--reuid=${IDS.service}`, `--regid=${IDS.service}`, "--init-groups", "--inh-caps=-all,+setuid,+setgid", "--ambient-caps=-all,+setuid,+setgid", "--no-new-privs", "--"];
    const IDS_VALUE = "1000:1001:1001:1001,1002";
    const noChannel = "clankie-agent-exec: CLANKIE_SPAWNER_FD is not an fd of 3 or more; start the spawner from the root phase (clankie-separate as root), which hands it the channel\n";
    const noIds = "clankie-agent-exec: CLANKIE_SPAWNER_IDS is not node's uid and the agent's uid, gid and groups; start the spawner from the root phase (clankie-separate as root), which hands them to it\n";
    const cases: [string[], string][] = [
      [[`CLANKIE_SPAWNER_IDS=${IDS_VALUE}`], noChannel],
      [[`CLANKIE_SPAWNER_IDS=${IDS_VALUE}`, "CLANKIE_SPAWNER_FD=1"], noChannel],
      [["CLANKIE_SPAWNER_FD=0"], noIds],
      [["CLANKIE_SPAWNER_IDS=1000:1001:1001", "CLANKIE_SPAWNER_FD=0"], noIds],
      [["CLANKIE_SPAWNER_IDS=1000:1001:1001:1001,x", "CLANKIE_SPAWNER_FD=0"], noIds],
    ];
    for (const [env, line] of cases) {
      const run = body.run({ as: "root", direct: true, command: [...asSpawner, "/usr/bin/env", ...env, "/usr/local/sbin/clankie-agent-exec", "--spawner"], timeoutMs: 30_000 });
      assert.is(run.stderr, line, env.join(" "));
      assert.is(run.status, 64);
    }
    // Control: both given (fd 3, a pipe whose writer has ended: the channel ends at once), the spawner runs, and exits 0 when its channel ends.
    const control = body.run({ as: "root", direct: true, command: [...asSpawner, "/usr/bin/env", `CLANKIE_SPAWNER_IDS=${IDS_VALUE}`, "CLANKIE_SPAWNER_FD=3", "/bin/sh", "-c", "true | /usr/local/sbin/clankie-agent-exec --spawner 3<&0"], timeoutMs: 30_000 });
    assert.equal([control.status, control.stderr], [0, ""]);
  } finally {
    body.cleanup();
  }
});

/**
 * A service scenario (test/fixtures/spawner-service.mjs) that runs its control, writes /workspace/ready and waits for
 * /workspace/go, with a root-owned copy of `program` bound over it: 0755 when the launch checks it, 0757 once the
 * control has run. Its one JSON line.
 */
async function writableAfterControl<T>(scenario: string, program: string, original: string): Promise<T> {
  const body = new Body();
  try {
    chownSync(body.state, IDS.service, IDS.service);
    chownSync(body.workspace, IDS.service, IDS.service);
    const copy = join(body.dir, "copy");
    writeFileSync(copy, readFileSync(original), { mode: 0o755 });
    const child = body.start({ as: "root", command: [SANDBOX_NODE, FIXTURE, scenario], binds: [[copy, program, "rw"]] });
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const ended = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const deadline = Date.now() + 60_000;
    while (!existsSync(join(body.workspace, "ready")) && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 25));
    chmodSync(copy, 0o757);
    writeFileSync(join(body.workspace, "go"), "");
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const status = await ended;
    clearTimeout(timer);
    assert.is(status, 0, `${stdout}\n${stderr}`);
    return JSON.parse(stdout.split("\n").find((text) => text.startsWith("{")) ?? "{}") as T;
  } finally {
    body.cleanup();
  }
}

const writableLine = (program: string) => `clankie-agent-exec: refusing to execute ${program}: ${program} is writable by group or other (mode 757); install programs that root or the service run in a root-owned directory that only root can write (for example /usr/local/bin)`;

rootTest(test, "a program of a private job's chain made writable after the launch (setpriv 0757, which the per-job shim runs with SETUID and SETGID) is refused before each start (126, one line): a node-uid process that plants a program there gets nothing started; control: the same spawn before the change runs as the agent", async () => {
  const out = await writableAfterControl<{ control: { exitCode: number; stdout: string }; planted: { exitCode: number; stdout: string; stderr: string; started: boolean; refused: boolean }; ran: string }>("chain-rules", "/usr/bin/setpriv", "/usr/bin/setpriv");
  assert.equal({ exitCode: out.control.exitCode, stdout: out.control.stdout }, { exitCode: 0, stdout: String(IDS.agent) }, "control: before the change the spawn runs as the agent");
  // The per-job shim runs setpriv with SETUID and SETGID: when the spawner itself ran it, without its gate the planted program ran as node with CapEff 00000000000000c0, and its setuid(0) succeeded.
  assert.is(out.ran, "ENOENT", `the planted program ran: ${out.ran}`);
  assert.equal(
    { exitCode: out.planted.exitCode, started: out.planted.started, refused: out.planted.refused, stdout: out.planted.stdout, stderr: out.planted.stderr },
    { exitCode: 126, started: false, refused: true, stdout: "", stderr: writableLine("/usr/bin/setpriv") },
  );
});

rootTest(test, "the executable the spawner's grab starts for a private job, made writable after the launch (clankie-agent-exec 0757), is refused by the spawner before each start (126, one line); control: the same private job before the change runs as the agent", async () => {
  const out = await writableAfterControl<{ control: { exitCode: number; stdout: string }; after: { exitCode: number; stdout: string; stderr: string; started: boolean; refused: boolean } }>("exec-rules", "/usr/local/sbin/clankie-agent-exec", join(REPO, "dist/clankie-agent-exec"));
  assert.equal({ exitCode: out.control.exitCode, stdout: out.control.stdout }, { exitCode: 0, stdout: String(IDS.agent) }, "control: before the change the private job runs as the agent");
  assert.equal(
    { exitCode: out.after.exitCode, started: out.after.started, refused: out.after.refused, stdout: out.after.stdout, stderr: out.after.stderr },
    { exitCode: 126, started: false, refused: true, stdout: "", stderr: writableLine("/usr/local/sbin/clankie-agent-exec") },
  );
});

rootTest(test, "doctor reports a dead spawner: processes.spawner fails (no spawner runs, no agent work can start) with the fix to restart the body; control: the same doctor beside a live spawner passes it", () => {
  // The service is a shell that runs the audit as its child, as doctor does; it first kills the spawner (SIGKILL, as node may: same uid) and waits until no process runs its command line.
  const script = [
    "spawner() { for p in /proc/[0-9]*; do [ \"$(tr '\\0' ' ' < \"$p/cmdline\" 2>/dev/null)\" = 'clankie-agent-exec --spawner ' ] && echo \"${p#/proc/}\"; done; }",
    'if [ "$1" = kill ]; then kill -KILL $(spawner); while [ -n "$(spawner)" ]; do sleep 0.05; done; fi',
    "/usr/local/sbin/clankie-separate --self-check --json",
    "exit 0",
  ].join("\n");
  const audit = (mode: string): { status: string; summary: string; fix: string | null; found: { spawners: { pid: number }[] } } => {
    const body = new Body();
    try {
      const run = body.run({ as: "root", command: ["/bin/sh", "-c", script, "doctor", mode], timeoutMs: 120_000 });
      assert.is(run.status, 0, run.stderr);
      const doc = JSON.parse(run.stdout.slice(run.stdout.indexOf("{"))) as { mode: string; checks: { id: string; status: string; summary: string; fix: string | null; found: { spawners: { pid: number }[] } }[] };
      assert.is(doc.mode, "separated", run.stdout);
      return doc.checks.find((c) => c.id === "processes.spawner")!;
    } finally {
      body.cleanup();
    }
  };
  const live = audit("control");
  assert.is(live.status, "pass", live.summary);
  assert.is(live.found.spawners.length, 1);
  assert.match(live.summary, /^one spawner \(pid \d+\) holds exactly SETUID, SETGID in every set, with NoNewPrivs$/);
  const dead = audit("kill");
  assert.equal(
    { status: dead.status, summary: dead.summary, fix: dead.fix, spawners: dead.found.spawners },
    { status: "fail", summary: "no spawner runs: no agent work can start (want exactly one)", fix: "restart the body: the root phase starts the one spawner beside the service (docs/launch.md)", spawners: [] },
  );
});

rootTest(test, "50 spawns at once: every one started and correct", () => {
  const r = launch("many");
  assert.is(r.status, 0, r.stderr);
  assert.is(r.out.ok, 50, JSON.stringify(r.out));
});

test.run();
