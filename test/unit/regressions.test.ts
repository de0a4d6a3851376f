/*
 * Regressions found by review of the pure modules: each case failed before
 * its fix (see the commit that added this file).
 */
import { mkdtempSync, rmdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parseAgentExecArgs, parseEntrypointArgs } from "../../src/cli.ts";
import { EXIT } from "../../src/constants.ts";
import { serviceEnvironment } from "../../src/entrypoint/service-env.ts";
import { parseProcessStatus, parseStat } from "../../src/os/proc-status.ts";
import { agentExecArguments, buildEnvironment } from "../../src/system-exec.ts";
import { resolveCommand } from "../../src/exec/rules.ts";
import { imageIdentities } from "../helpers/identities.ts";
import { catchRefusal } from "../helpers/refusal.ts";

const test = suite("regressions");

test("--signal=NAME is accepted as the first argument", () => {
  assert.equal(parseAgentExecArgs(["--signal=TERM", "--pgid=5"]), { kind: "signal", signal: "SIGTERM", pgid: 5 });
});

test("every CLANKIE_* of the launcher is dropped, CLANKIE_BOUNDARY included", () => {
  const { env, dropped } = serviceEnvironment({ CLANKIE_BOUNDARY: "complete", CLANKIE_OTHER: "x", KEEP: "1" }, imageIdentities());
  assert.is(env.CLANKIE_BOUNDARY, undefined);
  assert.is(env.CLANKIE_OTHER, undefined);
  assert.equal(dropped, ["CLANKIE_BOUNDARY", "CLANKIE_OTHER"]);
  assert.is(env.KEEP, "1");
});

test("a code-loading variable cannot be named with --env (it would reach prlimit and setpriv, which hold SETUID)", () => {
  for (const name of ["LD_PRELOAD", "LD_AUDIT", "NODE_OPTIONS", "GCONV_PATH", "BASH_ENV"]) {
    const refusal = catchRefusal(() => parseAgentExecArgs(["--env", name, "--", "true"]));
    assert.is(refusal.exitCode, EXIT.usage, name);
    assert.is(refusal.message, `--env ${name}: variables that load code are never passed`);
  }
  assert.is(catchRefusal(() => agentExecArguments("true", [], { env: { LD_PRELOAD: "/x.so" } })).exitCode, EXIT.usage);
  assert.is(catchRefusal(() => buildEnvironment({ from: { LD_PRELOAD: "/x.so" }, pass: ["LD_PRELOAD"] })).exitCode, EXIT.usage);
});

test("inherited properties are not variables: --env constructor passes nothing", () => {
  const env = buildEnvironment({ from: {}, pass: ["constructor", "toString", "__proto__"] });
  assert.equal(env, { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" });
});

test("an empty service command is refused at parsing, with or without --", () => {
  assert.is(catchRefusal(() => parseEntrypointArgs([""])).exitCode, EXIT.usage);
  assert.is(catchRefusal(() => parseEntrypointArgs(["--", ""])).exitCode, EXIT.usage);
});

test("parseStat refuses text it cannot parse instead of returning NaN", () => {
  assert.throws(() => parseStat("garbage"), /malformed/);
  assert.equal(parseStat("42 (a b) c) S 1 42 42 0 -1"), { pid: 42, pgrp: 42, session: 42, ttyNr: 0 });
});

test("the process table counts threads, which RLIMIT_NPROC counts", () => {
  const status = ["Name:\tnode", "Threads:\t11", "PPid:\t1", "Uid:\t1001\t1001\t1001\t1001", "Gid:\t1001\t1001\t1001\t1001", "Groups:\t1001", "CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t00000000000000c0", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", ""].join("\n");
  const entry = parseProcessStatus(42, status);
  assert.is(entry.threads, 11);
  assert.is(entry.creds.uids[0], 1001);
  assert.is(parseProcessStatus(42, status.replace("Threads:\t11\n", "")).threads, 1);
});

test("resolveCommand works for absolute and bare names when the working directory was removed (docker exec, nsenter)", () => {
  const home = process.cwd();
  const gone = mkdtempSync(join(tmpdir(), "gone-"));
  process.chdir(gone);
  rmdirSync(gone);
  try {
    assert.throws(() => process.cwd(), /ENOENT/, "the control: the working directory is gone");
    assert.is(resolveCommand("/usr/bin/perl"), "/usr/bin/perl");
    assert.is(resolveCommand("perl"), "/usr/bin/perl");
  } finally {
    process.chdir(home);
  }
});

test.run();
