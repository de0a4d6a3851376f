/* The start's removal of ACLs (src/entrypoint/state-acl.ts): what the walk's end means for the start. Pure. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { judgeStrip } from "../../../src/entrypoint/state-acl.ts";
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

test("a walk that ran to its end: how many entries lost their ACLs, and the first ones", () => {
  assert.equal(judgeStrip(ended("V\x0012\x000\0")), { stripped: 0, examples: [] });
  assert.equal(judgeStrip(ended("A\0/state\0\x0002\0V\x0012\x001\0")), { stripped: 1, examples: ["/state"] });
});

test("an entry changed under the walk refuses the start (65); a failed call is an OS error (71) with its call, path and errno", () => {
  const changed = refusal(() => judgeStrip(ended("X\0/state/d\0", 65)));
  assert.is(changed.exitCode, 65);
  assert.is(changed.message, "/state/d changed while its ACLs were being removed (another process is writing this tree)");
  const failed = refusal(() => judgeStrip(ended("P\0/state/f\0setxattr\x001\0", 71)));
  assert.ok(failed instanceof OsFailure);
  assert.is(failed.message, "setxattr /state/f: EPERM");
});

test("perl that did not finish, or printed what it should not, refuses the start: never a start that assumes no ACL", () => {
  for (const result of [ended("", null, { signal: "SIGKILL" }), ended("", 2, { stderr: Buffer.from("Can't locate x\n") }), ended("A\0/state\0\0\0"), ended("", null, { error: "ENOENT" })]) {
    const refused = refusal(() => judgeStrip(result));
    assert.is(refused.exitCode, 71, refused.message);
    assert.match(refused.message, /^the removal of ACLs under \/state/);
  }
  assert.match(refusal(() => judgeStrip(ended("Q\0"))).message, /printed what it should not \(the ACL walk printed an unknown record "Q"\)/);
});

test.run();
