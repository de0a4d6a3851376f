/* The document from a snapshot: the judged process and the auditor as the facts say, the checks in the list's order, ok from the statuses. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { CHECKS } from "../../../src/self-check/checks.ts";
import { type Facts, known } from "../../../src/self-check/facts.ts";
import { documentOf } from "../../../src/self-check/run.ts";
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
