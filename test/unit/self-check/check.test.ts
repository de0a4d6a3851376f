/* The helpers every judge uses. Pure, no privileges. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { bounded, cannotLook, howItEnded, octal } from "../../../src/self-check/check.ts";

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

Common.run();
