/* The helpers every judge uses. Pure, no privileges. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { bounded, cannotLook, octal } from "../../../src/self-check/check.ts";

const Common = suite("check helpers");

Common("a check that cannot look fails (or warns) with its reason; counts are bounded; modes are octal", () => {
  const failed = cannotLook("/state", "nope (EACCES)", "run as root");
  assert.equal([failed.status, failed.summary, failed.found], ["fail", "could not check /state: nope (EACCES)", { error: "nope (EACCES)" }]);
  assert.is(cannotLook("y", "z", "f", "warn").status, "warn");
  assert.equal(bounded([1, 2, 3], 2), { count: 3, shown: [1, 2] });
  assert.is(octal(0o104755), "4755");
});

Common.run();
