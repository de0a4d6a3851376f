import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ACTIONS } from "../../fixtures/image/everyday-actions.ts";
import { collateralProblems, documentedCollateral, type EverydayResult, judgeEveryday, MODES, type Mode, NEEDED_DENIALS } from "../../image/helpers/everyday.ts";
import { REPO } from "../../helpers/paths.ts";

const run = (exitCode: number, stderr = "") => ({ exitCode, stderr });
const ok = run(0);

function result(id: string, control: ReturnType<typeof run>, modes: Partial<Record<Mode, ReturnType<typeof run>>>): EverydayResult {
  return { id, what: id, control, modes: { shim: ok, private: ok, "no-network": ok, ...modes } };
}

test("judgeEveryday: per mode, works; fails by design only where that mode lists it and with its rule's error; collateral otherwise; stale when listed and working", () => {
  const verdict = judgeEveryday([
    result("tar", ok, {}),
    // listed for no-network only: by design there, collateral in a plain job
    result("node-http", ok, { shim: run(1, "ECONNREFUSED"), "no-network": run(1, "Error: listen EAFNOSUPPORT: address family not supported 127.0.0.1") }),
    // listed for private, works there: the list is wrong
    result("mp-pool", ok, {}),
    // listed in every mode; in a private job it fails with another error than the rule's: collateral
    result("renice-self", ok, { shim: run(1, "renice: failed to set priority for 7 (process ID): Operation not permitted"), private: run(1, "renice: not found"), "no-network": run(1, "Operation not permitted") }),
    // the uid alone fails: not judged, whatever the modes do
    result("git-service-log", run(128), { private: run(1) }),
    result("ls-root", ok, { private: run(2, "ls: cannot open directory '/': Permission denied\nmore\nand more") }),
  ]);
  assert.is(verdict.meaningful, 5);
  assert.equal(verdict.modes.shim, { works: ["tar", "mp-pool", "ls-root"], byDesign: ["renice-self"], collateral: ["node-http"], collateralErrors: ["node-http (node-http): ECONNREFUSED"], stale: [] });
  assert.equal(verdict.modes.private, {
    works: ["tar", "node-http"],
    byDesign: [],
    collateral: ["renice-self", "ls-root"],
    collateralErrors: ["renice-self (renice-self): renice: not found", "ls-root (ls-root): ls: cannot open directory '/': Permission denied | more"],
    stale: ["mp-pool"],
  });
  assert.equal(verdict.modes["no-network"], { works: ["tar", "mp-pool", "ls-root"], byDesign: ["node-http", "renice-self"], collateral: [], collateralErrors: [], stale: [] });
  assert.is(verdict.table.length, 8);
  assert.match(verdict.table[2]!, /^node-http +works +COLLATERAL +works +by design/);
  assert.match(verdict.table[5]!, /^git-service-log +fails \(128\) +works\* +fails \(1\) +works\*/);
  assert.equal(verdict.summary, [
    "shim       3 work, 1 fail by design, 1 collateral (node-http)",
    "private    2 work, 0 fail by design, 2 collateral (renice-self, ls-root)",
    "no-network 3 work, 2 fail by design, 0 collateral",
  ]);
});

test("collateralProblems: stale listings, more than 2 collateral, undocumented collateral and a workaround that fails are each a problem", () => {
  const fine = judgeEveryday([result("proc-comm", ok, { shim: run(1), private: run(1), "no-network": run(1) }), result("prctl-name", ok, {})]);
  const documented = new Map([["proc-comm", "prctl-name"]]);
  assert.equal(collateralProblems(fine, documented), []);
  assert.equal(collateralProblems(fine, new Map()), MODES.map((m) => `${m}: collateral README's list does not document: proc-comm (proc-comm): exit 1`));
  const noWorkaround = judgeEveryday([result("proc-comm", ok, { shim: run(1) }), result("prctl-name", ok, { shim: run(1) })]);
  assert.equal(collateralProblems(noWorkaround, new Map([["proc-comm", "prctl-name"], ["prctl-name", "proc-comm"]])), [
    "shim: README's workaround for proc-comm, prctl-name, does not work in this mode",
    "shim: README's workaround for prctl-name, proc-comm, does not work in this mode",
  ]);
  const many = judgeEveryday(["a", "b", "c"].map((id) => result(id, ok, { private: run(1) })));
  assert.equal(collateralProblems(many, new Map([["a", "x"], ["b", "x"], ["c", "x"]])).slice(0, 1), ["private: 3 collateral, at most 2"]);
  const stale = judgeEveryday([result("mp-pool", ok, {})]);
  assert.equal(collateralProblems(stale, documented), ["private: mp-pool is listed as a denial the boundary needs, yet it works"]);
});

test("documentedCollateral: reads the markers of README's section on everyday work, and no others", () => {
  const readme = [
    "## Before",
    "<!-- everyday collateral: early; workaround: none -->",
    "### What changes for everyday agent work",
    "- **Renaming** <!-- everyday collateral: proc-comm; workaround: prctl-name --> is refused",
    "- more <!-- everyday collateral: b-1; workaround: c-2 -->",
    "### Next",
    "<!-- everyday collateral: late; workaround: none -->",
  ].join("\n");
  assert.equal([...documentedCollateral(readme)], [["proc-comm", "prctl-name"], ["b-1", "c-2"]]);
  assert.equal([...documentedCollateral("no section")], []);
});

test("the battery: ids unique; every listed denial and README marker names one of its actions; each rule says why", () => {
  const ids = ACTIONS.map((a) => a.id);
  assert.is(new Set(ids).size, ids.length, "unique ids");
  assert.ok(ids.length >= 90, `${ids.length} actions`);
  for (const mode of MODES) {
    for (const [id, rule] of Object.entries(NEEDED_DENIALS[mode])) {
      assert.ok(ids.includes(id), `${mode}: ${id} is an action`);
      assert.ok(rule.why.length > 60, `${mode}: ${id}'s rule`);
    }
  }
  const documented = documentedCollateral(readFileSync(join(REPO, "README.md"), "utf8"));
  assert.ok(documented.size > 0, "README documents the collateral it accepts");
  for (const [id, workaround] of documented) assert.ok(ids.includes(id) && ids.includes(workaround), `README's marker ${id} -> ${workaround} names actions`);
  // The actions are in the battery.
  for (const id of ["renice-self", "renice-child", "ionice-self", "taskset-self", "nice", "ionice-command", "taskset-command", "proc-comm", "prctl-name", "mp-pool", "mp-lock", "mp-queue", "mp-executor", "mp-process-pipe", "mp-manager", "across-tcp"]) {
    assert.ok(ids.includes(id), id);
  }
});

test("NEEDED_DENIALS: what the confinement must not take is listed in no mode; network and private rules stay in their mode", () => {
  for (const mode of MODES) {
    for (const id of ["ls-root", "glob-root", "find-root", "strace", "git-service-log", "tmux", "kill-own", "proc-comm", "renice-pgrp", "ionice-pgrp", "nice", "mp-process-pipe", "mp-manager", "own-job-unix"]) {
      assert.not.ok(id in NEEDED_DENIALS[mode], `${mode}: ${id}`);
    }
  }
  for (const id of ["node-http", "mp-pool", "tmp-file", "across-tcp", "mktemp-var-tmp"]) assert.not.ok(id in NEEDED_DENIALS.shim, `shim: ${id}`);
  for (const id of ["mp-pool", "tmp-file", "across-unix"]) assert.not.ok(id in NEEDED_DENIALS["no-network"], `no-network: ${id}`);
});

test.run();
