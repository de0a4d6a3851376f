/* The start's walk of /state (src/entrypoint/state-acl.ts): what the walk's end means for the start. Pure. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { judgeWalk } from "../../../src/entrypoint/state-acl.ts";
import type { CaptureResult } from "../../../src/exec/capture.ts";
import { OsFailure, Refusal } from "../../../src/report.ts";

const test = suite("entrypoint state-acl");

const ended = (stdout: string, status: number | null = 0, more: Partial<CaptureResult> = {}): CaptureResult => ({ path: "/usr/bin/perl", status, signal: null, stdout: Buffer.from(stdout, "latin1"), stderr: Buffer.alloc(0), ...more });

function refusal(fn: () => unknown): Refusal | OsFailure {
  try {
    fn();
  } catch (error) {
    if (error instanceof Refusal || error instanceof OsFailure) return error;
    throw error;
  }
  throw new Error("no refusal");
}

test("a walk that ran to its end: what it checked, fixed and left alone, how many entries lost their ACLs, and the first ones", () => {
  const none = { checked: 12, fixed: 0, skipped: 0, skippedExamples: [] };
  assert.equal(judgeWalk(ended("V\x0012\x000\x0012\x000\x000\0")), { ...none, stripped: 0, examples: [] });
  assert.equal(judgeWalk(ended("A\0/state\0\x0002\0V\x0012\x001\x0012\x001\x000\0")), { ...none, fixed: 1, stripped: 1, examples: ["/state"] });
  const deep = `/state/${"d/".repeat(100)}d`;
  assert.equal(judgeWalk(ended(`S\0/state/m\0mount\0S\0${deep}\0deep\0V\x0012\x000\x0010\x000\x007\0`)).skippedExamples, [
    "/state/m (another filesystem is mounted here; it was not entered)",
    `${deep.slice(0, 120)}... (4096 levels deep: nothing below it was walked)`,
  ]);
});

test("a device node or a hard link to another uid's file refuses the start (65), as /state's rules word it", () => {
  const device = refusal(() => judgeWalk(ended("D\0/state/null\0", 65)));
  assert.is(device.exitCode, 65);
  assert.is(device.message, "/state/null is a device node");
  const link = refusal(() => judgeWalk(ended("H\0/state/h\x002\x000\0", 65)));
  assert.is(link.exitCode, 65);
  assert.is(link.message, "/state/h is a hard link (2 names) to a file owned by uid 0; taking it over would change that file everywhere");
});

test("an entry changed under the walk refuses the start (65); a failed call is an OS error (71) with its call, path and errno", () => {
  const changed = refusal(() => judgeWalk(ended("X\0/state/d\0", 65)));
  assert.is(changed.exitCode, 65);
  assert.is(changed.message, "/state/d changed while it was being taken over (another process is writing this tree)");
  const failed = refusal(() => judgeWalk(ended("P\0/state/f\0setxattr\x001\0", 71)));
  assert.ok(failed instanceof OsFailure);
  assert.is(failed.message, "setxattr /state/f: EPERM");
});

test("perl that did not finish, or printed what it should not, refuses the start: never a start that assumes no ACL", () => {
  for (const result of [ended("", null, { signal: "SIGKILL" }), ended("", 2, { stderr: Buffer.from("Can't locate x\n") }), ended("A\0/state\0\0\0"), ended("", null, { error: "ENOENT" })]) {
    const refused = refusal(() => judgeWalk(result));
    assert.is(refused.exitCode, 71, refused.message);
    assert.match(refused.message, /^the walk of \/state/);
  }
  assert.match(refusal(() => judgeWalk(ended("Q\0"))).message, /printed what it should not \(the ACL walk printed an unknown record "Q"\)/);
});

test.run();
