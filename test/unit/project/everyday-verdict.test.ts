import { test } from "uvu";
import * as assert from "uvu/assert";
import { judgeEveryday, NEEDED_DENIALS } from "../../image/helpers/everyday.ts";

const run = (exitCode: number, stderr = "") => ({ exitCode, stderr });

test("judgeEveryday: an action that works as the uid alone and fails through the shim is broken unless listed", () => {
  const verdict = judgeEveryday([
    { id: "ls-root", what: "ls /", agent: run(2, "ls: cannot open directory '/': Permission denied"), control: run(0) },
    { id: "proc-comm", what: "rename itself", agent: run(1), control: run(0) },
    { id: "tar", what: "tar", agent: run(0), control: run(0) },
    { id: "git-service-log", what: "git log", agent: run(0), control: run(128) },
    { id: "nologin", what: "both fail", agent: run(1), control: run(1) },
  ]);
  assert.equal(verdict.broken, ["ls-root (ls /): ls: cannot open directory '/': Permission denied"]);
  assert.is(verdict.meaningful, 3);
  assert.is(verdict.table.length, 6);
});

test("NEEDED_DENIALS: each listed denial gives its reason, and the collateral the confinement must not take is not listed", () => {
  for (const [id, reason] of Object.entries(NEEDED_DENIALS)) assert.ok(reason.length > 40, id);
  for (const id of ["ls-root", "glob-root", "find-root", "strace", "mktemp-var-tmp", "git-service-log", "tmux", "kill-own"]) assert.not.ok(id in NEEDED_DENIALS, id);
});

test.run();
