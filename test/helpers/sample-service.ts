/*
 * The sample service of README.md's API section (test/fixtures/sample-service.ts)
 * and what its one JSON line must say, wherever it runs as the service: the
 * launch sandbox (test/sandbox/agent-refusal.test.ts) and the image (item 8b).
 */
import * as assert from "uvu/assert";

export const SAMPLE_SERVICE = "test/fixtures/sample-service.ts";

export interface SampleOutcome {
  lines: string[];
  ran: { exitCode: number; started: boolean; refused: boolean; refusal: unknown };
  slow: { timedOut: boolean; signal: string; started: boolean };
  stopped: { isTerminated: boolean; signal: string; started: boolean };
  refused: { exitCode: number; started: boolean; refusal: { code: number; line: string } | undefined; launchRefused: boolean };
}

/** Parses the service's JSON line and checks each of its four parts. */
export function judgeSampleService(stdout: string, stderr: string, status: number | null): SampleOutcome {
  const line = stdout.split("\n").find((l) => l.startsWith("{"));
  assert.ok(line, `the sample service printed its line (exit ${status}):\n${stdout}\n${stderr}`);
  const r = JSON.parse(line!) as SampleOutcome;
  assert.equal(r.lines, ["ONE", "TWO"], "streamed lines, each a string");
  assert.equal(r.ran, { exitCode: 75, started: true, refused: false, refusal: null }, "the job's own 75: started, no refusal");
  assert.equal(r.slow, { timedOut: true, signal: "SIGTERM", started: true }, "the timeout reached the job through the shim");
  assert.equal(r.stopped, { isTerminated: true, signal: "SIGTERM", started: true }, "signalAgent stopped the job");
  assert.is(r.refused.exitCode, 77);
  assert.is(r.refused.started, false, "the refusal: nothing ran");
  assert.is(r.refused.launchRefused, true, "refusalOf gives the shim's 77 (EXIT_CODES.launchRefused)");
  assert.match(r.refused.refusal?.line ?? "", /^clankie-agent-exec: the agent cannot enter \/nonexistent \(ENOENT\); /);
  assert.is(status, 0, stderr);
  return r;
}
