import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ACTIONS } from "../../fixtures/image/everyday-actions.ts";
import type { EverydayResult, Mode } from "../../image/helpers/everyday.ts";
import { BUILDS_THAT_WORK, buildProblems, JVM_DEFAULT } from "../../image/helpers/everyday-builds.ts";
import { documentedCollateral } from "../../image/helpers/everyday.ts";
import { REPO } from "../../helpers/paths.ts";

const run = (exitCode: number, stderr = "") => ({ exitCode, stderr });
const ok = run(0);
const REFUSED = run(1, "Tmp: java.nio.file.AccessDeniedException: /tmp/ev-1234567.tmp");

function result(id: string, control: ReturnType<typeof run>, modes: Partial<Record<Mode, ReturnType<typeof run>>>): EverydayResult {
  return { id, what: id, control, modes: { shim: ok, private: ok, "no-network": ok, ...modes } };
}
const asStated = (): EverydayResult[] => [...BUILDS_THAT_WORK.map((id) => result(id, ok, {})), result(JVM_DEFAULT, ok, { private: REFUSED })];

test("buildProblems: none when every build works in every mode and the JVM's default /tmp is refused in a private job only", () => {
  assert.equal(buildProblems(asStated()), []);
});

test("buildProblems: a build failing in a mode, or as the uid alone (which judgeEveryday would skip as not judged), is a problem", () => {
  const results = asStated();
  results[0] = result("pip-wheel", ok, { private: run(1, "OSError: [Errno 18] Invalid cross-device link") });
  results[2] = result("cargo-workspace", run(127, "cargo: command not found"), { shim: run(127), private: run(127), "no-network": run(127) });
  assert.equal(buildProblems(results), [
    "pip-wheel in private: works, got exit 1: OSError: [Errno 18] Invalid cross-device link",
    "cargo-workspace as the uid alone (the control): works, got exit 127: cargo: command not found",
    "cargo-workspace in shim: works, got exit 127",
    "cargo-workspace in private: works, got exit 127",
    "cargo-workspace in no-network: works, got exit 127",
  ]);
});

test("buildProblems: the JVM's default temporary file must work in a plain job and be refused /tmp in a private job, not fail otherwise", () => {
  const results = asStated();
  results[5] = result(JVM_DEFAULT, ok, { private: ok, shim: REFUSED });
  assert.equal(buildProblems(results), ["jvm-tempfile in shim: works, got exit 1: Tmp: java.nio.file.AccessDeniedException: /tmp/ev-1234567.tmp", "jvm-tempfile in private: refused /tmp (AccessDeniedException), got exit 0"]);
  results[5] = result(JVM_DEFAULT, ok, { private: run(1, "Error: Could not find or load main class Tmp") });
  assert.equal(buildProblems(results), ["jvm-tempfile in private: refused /tmp (AccessDeniedException), got exit 1: Error: Could not find or load main class Tmp"]);
  assert.equal(buildProblems(results.slice(0, 5)), ["jvm-tempfile: not in the battery's results"]);
});

test("the battery holds the builds, and README documents the JVM's /tmp in a private job as collateral with a workaround the battery runs", () => {
  const ids = ACTIONS.map((a) => a.id);
  for (const id of [...BUILDS_THAT_WORK, JVM_DEFAULT]) assert.ok(ids.includes(id), id);
  const documented = documentedCollateral(readFileSync(join(REPO, "README.md"), "utf8"));
  assert.is(documented.get(JVM_DEFAULT), "jvm-tempfile-tmpdir");
});

test.run();
