/* The audit's flags (clankie-separate --self-check [--json] [--probe]), and the document from a snapshot: the judged process and the auditor as the facts say, the checks in the list's order, ok from the statuses. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { CHECKS } from "../../../src/self-check/checks.ts";
import { type Facts, known } from "../../../src/self-check/facts.ts";
import { documentOf, parseSelfCheckArgs } from "../../../src/self-check/run.ts";
import { type Accepts, assertRefusal, type Refuses } from "../../helpers/refusal.ts";
import { creds, C0 } from "../../helpers/self-check-fixtures.ts";

const Run = suite("run");
const missing = { ok: false as const, error: "not read here", fix: "read it" };
const service = { pid: 14, ppid: 1, name: "node", creds: creds(1000, C0, { groups: [1000, 1002] }) };
const audit = { pid: 30, ppid: 14, name: "MainThread", creds: creds(1000, C0), seccomp: { mode: "2", filters: 1 } };
const facts = new Proxy(
  {
    self: known(audit),
    judged: known({ entry: service, reason: "the service: pid 14", self: false, environ: { ok: true, value: {} }, relation: "descendant" }),
    mode: known({ mode: "separated", reasons: [], marker: "1" }),
    boundary: known({ label: "not a boundary yet: workers still run as node", declared: false, source: "s" }),
    probe: known(undefined),
  } as Record<string, unknown>,
  { get: (target, name: string) => target[name] ?? missing },
) as unknown as Facts;

Run("a snapshot with most facts unread: every check of the list is there, in order, none passes on a fact it did not have", () => {
  const doc = documentOf(facts, false);
  assert.equal(doc.judged, { pid: 14, name: "node", uid: 1000, reason: "the service: pid 14" });
  assert.equal(doc.auditor, { pid: 30, uid: 1000, capabilities: ["SETGID", "SETUID"], noNewPrivs: 1, relation: "descendant" });
  const ids = doc.checks.map((c) => c.id);
  assert.equal(ids, CHECKS.map((spec) => spec.id).filter((id) => !id.startsWith("probe")));
  for (const check of doc.checks.filter((c) => c.found.error === "not read here")) assert.is.not(check.status, "pass", check.id);
  assert.is(doc.ok, false);
  assert.is(doc.counts.pass + doc.counts.warn + doc.counts.fail, ids.length);
});

Run.run();

const selfCheck = suite("parseSelfCheckArgs");
const SEP = (fix: string): string => `${fix} (see clankie-separate --help)`;

const SELF_CHECK_ACCEPTS: Accepts<{ json: boolean; probe: boolean }>[] = [
  { argv: [], want: { json: false, probe: false } },
  { argv: ["--json"], want: { json: true, probe: false } },
  { argv: ["--probe"], want: { json: false, probe: true } },
  { argv: ["--probe", "--json", "--json"], want: { json: true, probe: true } },
];

for (const { argv, want } of SELF_CHECK_ACCEPTS) {
  selfCheck(`accepts --self-check ${JSON.stringify(argv)}`, () => {
    assert.equal(parseSelfCheckArgs(argv), want);
  });
}

const SELF_CHECK_REFUSES: Refuses[] = [
  { argv: ["--jsonx"], what: 'unknown --self-check option "--jsonx"', fix: SEP("use --json and --probe only") },
  { argv: ["--json=1"], what: 'unknown --self-check option "--json=1"', fix: SEP("use --json and --probe only") },
  { argv: ["--", "node"], what: 'unknown --self-check option "--"', fix: SEP("use --json and --probe only") },
];

for (const { argv, what, fix } of SELF_CHECK_REFUSES) {
  selfCheck(`refuses --self-check ${JSON.stringify(argv)}`, () => {
    assertRefusal(() => parseSelfCheckArgs(argv), { exitCode: 64, what, fix });
  });
}

selfCheck.run();
