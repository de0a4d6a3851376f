import { spawn } from "node:child_process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { FIRST_MARKER_FD, readMarker, refusalOf, startOutcome, stdioWithMarker } from "../../../src/service/agent-start.ts";
import { reportedRelease } from "../../../src/service/private-release.ts";

const test = suite("agent-start");

test("the marker goes at fd 17, or the first fd after the service's own stdio; execa's spreading of stdio is kept", () => {
  assert.is(FIRST_MARKER_FD, 17);
  const ignored = Array(14).fill(undefined);
  assert.equal(stdioWithMarker({}), { stdio: [undefined, undefined, undefined, ...ignored, "pipe"], fd: 17 });
  assert.equal(stdioWithMarker({ stdin: "ignore", stderr: "inherit" }), { stdio: ["ignore", undefined, "inherit", ...ignored, "pipe"], fd: 17 });
  assert.equal(stdioWithMarker({ stdio: "inherit" }), { stdio: ["inherit", "inherit", "inherit", ...ignored, "pipe"], fd: 17 });
  // A service that hands fd 20 to the agent (keepFds: [20]) keeps it; the marker follows it.
  const kept = ["ignore", "pipe", "pipe", ...Array(17).fill("ignore"), 99];
  const withKept = stdioWithMarker({ stdio: kept });
  assert.is(withKept.fd, 21);
  assert.equal(withKept.stdio, [...kept, "pipe"]);
});

test("started is exactly \"S\"; a refusal is a status without a start, with the last line of stderr", () => {
  assert.equal(startOutcome("S", { exitCode: 75, stderr: "job says busy" }), { started: true, refused: false }, "the command's own 75");
  const line = "clankie-agent-exec: every private-job group is leased; try again when agent work has ended";
  assert.equal(startOutcome("", { exitCode: 75, stderr: `${line}\n` }), { started: false, refused: true, refusal: { code: 75, line } });
  assert.equal(startOutcome("SF", { exitCode: 127, stderr: ["", "clankie-agent-exec: cannot execute /x: ENOENT; check"] }), { started: false, refused: true, refusal: { code: 127, line: "clankie-agent-exec: cannot execute /x: ENOENT; check" } });
  assert.equal(startOutcome("", { exitCode: 77, stderr: new TextEncoder().encode("a\nb\n") }), { started: false, refused: true, refusal: { code: 77, line: "b" } });
  assert.equal(startOutcome("", { exitCode: 64, stderr: undefined }), { started: false, refused: true, refusal: { code: 64, line: undefined } }, "stderr not piped: the code alone");
  assert.equal(startOutcome("", { exitCode: undefined, signal: "SIGTERM" }), { started: false, refused: false }, "stopped before it started: no refusal");
  assert.equal(startOutcome("", { exitCode: undefined }), { started: false, refused: false }, "never spawned (execa's own failure)");
});

test("refusalOf reads a result or an error, and nothing else", () => {
  const refusal = { code: 77, line: "x" };
  assert.equal(refusalOf({ started: false, refused: true, refusal }), refusal);
  assert.is(refusalOf({ started: true, refused: false, exitCode: 77 }), undefined);
  assert.is(refusalOf(Object.assign(new Error("e"), { refused: true, refusal })), refusal);
  assert.is(refusalOf(undefined), undefined);
  assert.is(refusalOf("refused"), undefined);
});

test("readMarker reads to the end: the bytes a child wrote on the pipe, \"\" for none or no stream", async () => {
  const child = spawn("/bin/sh", ["-c", "printf S >&3; printf F >&3"], { stdio: ["ignore", "ignore", "ignore", "pipe"] });
  assert.is(await readMarker(child.stdio[3] as NodeJS.ReadableStream as never), "SF");
  const silent = spawn("/bin/true", [], { stdio: ["ignore", "ignore", "ignore", "pipe"] });
  assert.is(await readMarker(silent.stdio[3] as never), "");
  assert.is(await readMarker(undefined), "");
});

test("a private job's release: a job that never started and held no lease (65) reports none; a started job reports every release, a 65 too", () => {
  const none = { exitCode: 65, stderr: "clankie-agent-exec: no private lease is recorded for job 42; pass the pid of a job started with --private-job (spawnAgent's child.pid)\n" };
  assert.is(reportedRelease(false, none), undefined, "refused before its lease: no release");
  assert.is(reportedRelease(undefined, none), undefined, "never spawned");
  assert.equal(reportedRelease(true, none), none, "started, and its lease went missing: worth seeing");
  const released = { exitCode: 0, stderr: "" };
  assert.equal(reportedRelease(false, released), released, "refused after its lease was taken (a cwd, a command not found): released");
  const held = { exitCode: 75, stderr: "clankie-agent-exec: a process still holds group 1100 ...\n" };
  assert.equal(reportedRelease(false, held), held);
});

test.run();
