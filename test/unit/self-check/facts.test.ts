/*
 * The snapshot's helpers: a reader that throws becomes the fact's error with
 * its fix (a refusal brings its own), and a program that failed is said in
 * one line. The readers themselves run in test/sandbox/self-check.test.ts.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Refusal } from "../../../src/report.ts";
import { attempt, captureFailure, failedCall, known, readable } from "../../../src/self-check/facts.ts";

const Facts = suite("facts");

Facts("a reader's value, or its error with the fix: the caller's, or the refusal's own", () => {
  assert.equal(attempt("fix it", () => 7), known(7));
  const failed = attempt("run the audit as root", () => {
    throw Object.assign(new Error("EACCES: permission denied, lstat '/state'"), { code: "EACCES" });
  });
  assert.equal(failed, { ok: false, error: "EACCES: permission denied, lstat '/state' (EACCES)", fix: "run the audit as root" });
  const refused = attempt("run the audit as root", () => {
    throw new Refusal(65, "/state/dev is a device node", "remove it");
  });
  assert.equal(refused, { ok: false, error: "/state/dev is a device node", fix: "remove it" });
});

Facts("a read that carries its error: as the call and its errno code, or as the error gives it, with the code for the judge", () => {
  const denied = () => {
    throw Object.assign(new Error("EACCES: permission denied, open '/proc/1/environ'"), { code: "EACCES" });
  };
  assert.equal(readable(() => 7), { ok: true, value: 7 });
  assert.equal(readable(denied, failedCall("read", "/proc/1/environ")), { ok: false, error: "read /proc/1/environ: EACCES", code: "EACCES" });
  assert.equal(readable(denied), { ok: false, error: "EACCES: permission denied, open '/proc/1/environ' (EACCES)", code: "EACCES" });
});

Facts("a program that failed: how it ended and the first line it said", () => {
  const base = { path: "/usr/bin/perl", status: 2, signal: null, stderr: Buffer.from("Can't locate x\nmore\n") };
  assert.is(captureFailure(base), "/usr/bin/perl failed (exit 2): Can't locate x");
  assert.is(captureFailure({ ...base, status: null, signal: "SIGKILL", stderr: Buffer.alloc(0), error: "ETIMEDOUT" }), "/usr/bin/perl failed (ETIMEDOUT)");
  assert.is(captureFailure({ ...base, status: null, signal: "SIGSEGV", stderr: Buffer.alloc(0) }), "/usr/bin/perl failed (killed by SIGSEGV)");
});

Facts.run();
