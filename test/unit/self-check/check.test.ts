/* The helpers every judge uses. Pure, no privileges. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { bounded, cannotLook, failUnlessSingle, howItEnded, octal, saying } from "../../../src/self-check/check.ts";

const Common = suite("check helpers");

Common("a check that cannot look fails (or warns) with its reason; counts are bounded; modes are octal", () => {
  const failed = cannotLook("/state", "nope (EACCES)", "run as root");
  assert.equal([failed.status, failed.summary, failed.found], ["fail", "could not check /state: nope (EACCES)", { error: "nope (EACCES)" }]);
  assert.is(cannotLook("y", "z", "f", "warn").status, "warn");
  const many = Array.from({ length: 60 }, (_, i) => i);
  assert.equal(bounded(many), { count: 60, shown: many.slice(0, 50) });
  assert.is(octal(0o104755), "4755");
});

Common("a program's end: the capture's error first, then the signal, then the exit status", () => {
  assert.is(howItEnded({ status: null, signal: "SIGKILL", error: "ETIMEDOUT" }), "ETIMEDOUT");
  assert.is(howItEnded({ status: null, signal: "SIGSEGV" }), "killed by SIGSEGV");
  assert.is(howItEnded({ status: 2, signal: null }), "exit 2");
});

Common("fail where the separation is meant; in a single-uid body a warning with the note that says why and its own fix", () => {
  assert.equal(failUnlessSingle(false, "wrong", { a: 1 }, "restart", "single-uid"), { status: "fail", summary: "wrong", found: { a: 1 }, fix: "restart" });
  assert.equal(failUnlessSingle(true, "wrong", { a: 1 }, "restart", "single-uid", null), { status: "warn", summary: "wrong (single-uid)", found: { a: 1 }, fix: null });
  assert.equal(failUnlessSingle(true, "wrong", {}, "end them"), { status: "warn", summary: "wrong", found: {}, fix: "end them" });
});

Common("a program's first line on stderr follows what is said of it, trimmed; nothing when it said nothing", () => {
  assert.is(saying("setpriv: exit 1", Buffer.from("\nsetpriv: setresuid failed: Operation not permitted\nmore\n")), "setpriv: exit 1: setpriv: setresuid failed: Operation not permitted");
  assert.is(saying("setpriv: exit 1", Buffer.from(" \n")), "setpriv: exit 1");
});

Common.run();
