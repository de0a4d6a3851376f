/* environment: code-loading variables, names only. Pure, no privileges. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { judgeEnvironment, codeLoadingNames } from "../../../src/self-check/environment.ts";

const Environment = suite("environment");

Environment("code-loading variables in the audit's or the service's environment fail; names only", () => {
  assert.equal(codeLoadingNames({ LD_PRELOAD: "/x.so", LD_AUDIT: "y", PATH: "/bin", NODE_OPTIONS: "--require z" }), ["LD_AUDIT", "LD_PRELOAD", "NODE_OPTIONS"]);
  const mine = judgeEnvironment({ LD_PRELOAD: "/x.so" }, { pid: 1, self: true, environ: { ok: true, value: {} } });
  assert.is(mine.status, "fail");
  assert.not.match(JSON.stringify(mine), /x\.so/);
  const theirs = judgeEnvironment({}, { pid: 14, self: false, environ: { ok: true, value: { GLIBC_TUNABLES: "x" } } });
  assert.is(theirs.status, "fail");
  assert.match(theirs.summary, /the service \(pid 14\) was started with GLIBC_TUNABLES/);
});

Environment("clean passes; an unreadable service environment warns", () => {
  assert.is(judgeEnvironment({ PATH: "/bin" }, { pid: 14, self: false, environ: { ok: true, value: { PATH: "/bin" } } }).status, "pass");
  assert.is(judgeEnvironment({}, { pid: 14, self: false, environ: { ok: false, error: "EACCES" } }).status, "warn");
});

Environment.run();
