/*
 * A refusal told apart from the job's own exit (issue 28), against the real
 * shim after an ADR launch: a job that exits 64, 75, 77, 126 or 127 by
 * itself is started and not refused, and cannot see or write the started
 * marker; each refusal of the shim (64, 127) and of its stage (77, 75, 127,
 * 126; a private job on a kernel without Landlock, 77) is not started and
 * carries its code and its one line. And the sample service of README.md's
 * API section (test/fixtures/sample-service.ts) runs as written.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { identitiesWithAgentUid, inBody, type LaunchOptions, SANDBOX_FIXTURES, SANDBOX_NODE, SANDBOX_REPO, unusedUid, type Body } from "../helpers/sandbox.ts";
import { judgeSampleService, SAMPLE_SERVICE } from "../helpers/sample-service.ts";
import { seededBody } from "../helpers/stand-in.ts";
import { WITHOUT_LANDLOCK } from "../helpers/seccomp-wrap.ts";

const test = suite("agent-refusal");

interface Outcome {
  exitCode: number | null;
  signal: string | null;
  started: boolean;
  refused: boolean;
  refusal: { code: number; line?: string } | null;
  stdout: string;
  rejected?: boolean;
  privateRelease?: { exitCode: number | null; stderr: string } | null;
}

function serviceJson<T>(body: Body, command: readonly string[], launch: Partial<LaunchOptions> = {}): T {
  const run = body.run({ as: "root", command, timeoutMs: 120_000, ...launch });
  const line = run.stdout.split("\n").find((l) => l.startsWith("{"));
  if (!line) throw new Error(`no JSON from the service (exit ${run.status}): ${run.stdout}\n${run.stderr}`);
  return JSON.parse(line) as T;
}

const refusalFixture = (mode: string): string[] => [SANDBOX_NODE, `${SANDBOX_FIXTURES}/agent-refusal.mjs`, mode];

/** A refusal as the service sees it: not started, the code, the one line. */
function assertRefused(o: Outcome | undefined, code: number, line: RegExp | undefined, what: string): void {
  assert.ok(o, what);
  assert.is(o!.started, false, `${what}: ${JSON.stringify(o)}`);
  assert.is(o!.refused, true, `${what}: ${JSON.stringify(o)}`);
  assert.is(o!.exitCode, code, `${what}: ${JSON.stringify(o)}`);
  assert.is(o!.refusal?.code, code, what);
  if (line === undefined) assert.is(o!.refusal?.line, undefined, what);
  else assert.match(o!.refusal?.line ?? "", line, what);
  assert.is(o!.stdout, "", `${what}: nothing ran`);
}

rootTest(test, "a job's own 64, 75, 77, 126, 127 are started and not refused, and the job never holds the marker; each refusal of the shim and its stage is not started, with its code and line", () => {
  // RLIMIT_NPROC counts every process of the uid on the host: the agent gets a uid nobody else runs here.
  inBody(seededBody(identitiesWithAgentUid(unusedUid())), (body) => {
    const r = serviceJson<Record<string, Outcome>>(body, refusalFixture("cases"));
    for (const code of [64, 75, 77, 126, 127]) {
      const own = r[`own-${code}`]!;
      assert.equal({ exitCode: own.exitCode, started: own.started, refused: own.refused, refusal: own.refusal, rejected: own.rejected }, { exitCode: code, started: true, refused: false, refusal: null, rejected: true }, `own ${code}: ${JSON.stringify(own)}`);
      assert.is(own.stdout, "", `own ${code}: the job neither saw nor wrote the marker`);
    }
    assert.equal({ started: r["own-0"]!.started, refused: r["own-0"]!.refused, exitCode: r["own-0"]!.exitCode }, { started: true, refused: false, exitCode: 0 });
    assertRefused(r["bad-keep-fd"], 64, /^clankie-agent-exec: --keep-fd 9: fd 9 is (not open|close-on-exec here .*); /, "the shim's usage refusal");
    assertRefused(r["not-in-path"], 127, /^clankie-agent-exec: .*no-such-command-here.*/, "the shim's not found");
    assertRefused(r.cwd, 77, /^clankie-agent-exec: the agent cannot enter \/nonexistent \(ENOENT\); /, "the stage's cwd refusal");
    assertRefused(r["bad-interpreter"], 127, /^clankie-agent-exec: cannot execute \/workspace\/refusal\/bad-interpreter: ENOENT; /, "the stage's failed exec (a missing #! interpreter)");
    assertRefused(r["service-only"], 126, /^clankie-agent-exec: cannot execute \/workspace\/refusal\/service-only: EACCES; /, "the stage's failed exec (not the agent's to run)");
    assertRefused(r.busy, 75, /^clankie-agent-exec: the agent uid already runs more than 2 tasks \(--nproc 2\); /, "the stage's busy refusal");
    assert.is(r.holder!.started, true, "the job that held the tasks ran");
    assert.is(r.holder!.signal, "SIGKILL");
    assertRefused(r["cwd-inherit"], 77, undefined, "stderr not kept: the code alone");
  });
});

rootTest(test, "a private job on a kernel without Landlock is refused (77, one line): not started", () => {
  inBody(seededBody(), (body) => {
    const r = serviceJson<{ private: Outcome }>(body, refusalFixture("private"), { wrap: WITHOUT_LANDLOCK });
    assertRefused(r.private, 77, /^clankie-agent-exec: private job: the kernel offers no Landlock \(ENOSYS\); /, "private job without Landlock");
    assert.equal(r.private.privateRelease, { exitCode: 0, stderr: "" }, `the stage refused it after its lease was taken: released (${JSON.stringify(r.private)})`);
  });
});

rootTest(test, "a private job refused after it took its lease (a cwd the agent cannot enter, 77) reports its release; one refused before it took one (64) carries no privateRelease", () => {
  inBody(seededBody(), (body) => {
    const r = serviceJson<{ private: Outcome; beforeLease: Outcome }>(body, refusalFixture("private-lease"));
    assertRefused(r.beforeLease, 64, /^clankie-agent-exec: --keep-fd 9: /, "the shim's usage refusal of a private job");
    assert.is(r.beforeLease.privateRelease, null, `refused before any lease: no release (${JSON.stringify(r.beforeLease)})`);
    assertRefused(r.private, 77, /^clankie-agent-exec: the agent cannot enter \/nonexistent \(ENOENT\); /, "a private job's cwd refusal");
    assert.equal(r.private.privateRelease, { exitCode: 0, stderr: "" }, JSON.stringify(r.private));
  });
});

rootTest(test, "the sample service of README's API section runs as written: streams lines, times out, stops with signalAgent, tells its job's 75 from a refusal", () => {
  inBody(seededBody(), (body) => {
    const run = body.run({ as: "root", command: [SANDBOX_NODE, `${SANDBOX_REPO}/${SAMPLE_SERVICE}`], timeoutMs: 120_000 });
    judgeSampleService(run.stdout, run.stderr, run.status);
  });
});

test.run();
