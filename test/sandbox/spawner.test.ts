/*
 * The resident spawner beside a capless service (src/agent-exec/spawner.ts,
 * src/service/spawner-client.ts), after a real ADR launch in the launch
 * sandbox: what the service holds, the spawner killed mid-job, the service
 * killed mid-job, another node process and a job reaching for the channel,
 * and a burst of 50. Judged by /proc and the exit statuses.
 */
import { chownSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { Body, IDS, SANDBOX_FIXTURES, SANDBOX_NODE } from "../helpers/sandbox.ts";

const test = suite("spawner");
const FIXTURE = `${SANDBOX_FIXTURES}/spawner-service.mjs`;

function launch(scenario: string): { status: number | null; out: Record<string, unknown>; stderr: string } {
  const body = new Body();
  try {
    chownSync(body.state, IDS.service, IDS.service);
    chownSync(body.workspace, IDS.service, IDS.service);
    const run = body.run({ as: "root", command: [SANDBOX_NODE, FIXTURE, scenario], timeoutMs: 120_000 });
    const line = run.stdout.split("\n").find((text) => text.startsWith("{")) ?? "{}";
    return { status: run.status, out: JSON.parse(line) as Record<string, unknown>, stderr: run.stderr };
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

rootTest(test, "the spawner killed mid-job: the job's promise and the next spawn end with one line (71), and the body exits 71", () => {
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

rootTest(test, "the service killed mid-job: the spawner ends the job's group and exits", () => {
  const body = new Body();
  try {
    chownSync(body.state, IDS.service, IDS.service);
    chownSync(body.workspace, IDS.service, IDS.service);
    const run = body.run({ as: "root", direct: true, command: ["/usr/bin/perl", `${SANDBOX_FIXTURES}/spawner-harness.pl`, SANDBOX_NODE, FIXTURE, "service-killed"], timeoutMs: 60_000 });
    assert.is(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const out = JSON.parse(run.stdout) as { serviceSignal: number; job: number; jobGone: number; spawnerGone: number };
    assert.is(out.serviceSignal, 9, run.stdout);
    assert.is(out.jobGone, 1, `the job ${out.job} still runs`);
    assert.is(out.spawnerGone, 1, "the spawner still runs");
  } finally {
    body.cleanup();
  }
});

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

rootTest(test, "a job that reaches for the channel: no fd of it, no /proc path to it, and no signal to the spawner", () => {
  const r = launch("job-reaches");
  assert.is(r.status, 0, r.stderr);
  const result = r.out.result as { exitCode: number; stdout: string };
  assert.is(result.exitCode, 0, JSON.stringify(result));
  const [fds, ...rest] = result.stdout.split("\n");
  assert.is(fds!.trim(), "0 1 2 3", "ls's own directory fd beside 0-2");
  assert.equal(rest, ["service-fd3=1", "spawner-fds=2", "spawner-signal=1"], result.stdout);
});

rootTest(test, "50 spawns at once: every one started and correct", () => {
  const r = launch("many");
  assert.is(r.status, 0, r.stderr);
  assert.is(r.out.ok, 50, JSON.stringify(r.out));
});

test.run();
