/* The document, its two forms, and the schema's agreement with the code. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { resolveIdentities } from "../../../src/accounts.ts";
import { type Check, fail as failed, pass as passed, type Verdict, warn as warned } from "../../../src/self-check/check.ts";
import { CHECKS } from "../../../src/self-check/checks.ts";
import { buildDocument, renderText, verdictLine } from "../../../src/self-check/render.ts";
import { DEFAULT_GROUP, DEFAULT_PASSWD } from "../../helpers/sandbox.ts";
import { REPO } from "../../helpers/paths.ts";

const ids = resolveIdentities(DEFAULT_PASSWD, DEFAULT_GROUP);
const CHECK_ORDER = CHECKS.map((spec) => spec.id);
const id = (name: string, verdict: Verdict): Check => ({ id: name, ...verdict });
const pass = (name: string, summary: string): Check => id(name, passed(summary));
const warn = (name: string, summary: string, found: Record<string, unknown>, fix: string): Check => id(name, warned(summary, found, fix));
const fail = (name: string, summary: string, found: Record<string, unknown>, fix: string): Check => id(name, failed(summary, found, fix));
function document(checks: Check[]) {
  return buildDocument({
    version: "0.1.0",
    mode: "separated",
    boundary: { label: "not a boundary yet: workers still run as node", declared: false, source: "x" },
    judged: { pid: 14, name: "node", uid: 1000, reason: "the service: pid 1" },
    auditor: { pid: 30, uid: 1000, capabilities: ["SETGID", "SETUID"], noNewPrivs: 1, relation: "descendant" },
    probe: false,
    checks,
  });
}

const Render = suite("render");

Render("ok and counts follow the statuses; checks stay in the order they were judged", () => {
  const doc = document([pass("mode", "m"), warn("boundary", "b", {}, "f"), pass("accounts", "a")]);
  assert.is(doc.ok, true);
  assert.equal(doc.counts, { pass: 2, warn: 1, fail: 0 });
  assert.equal(doc.checks.map((c) => c.id), ["mode", "boundary", "accounts"]);
  assert.is(document([fail("environment", "e", {}, "f")]).ok, false);
});

Render("text: failures first, then warnings, then passes, fixes on the first two, one verdict line last", () => {
  const doc = document([pass("mode", "separated"), warn("boundary", "not yet", {}, "route the seams"), fail("state.layout", "1 entry breaks\nthe contract", {}, "restart"), pass("accounts", "ok")]);
  assert.equal(renderText(doc).split("\n"), [
    "FAIL state.layout: 1 entry breaks the contract; fix: restart",
    "WARN boundary: not yet; fix: route the seams",
    "PASS mode: separated",
    "PASS accounts: ok",
    "verdict: FAILED: 1 failed, 1 warnings, 2 passed; separated; not a boundary yet: workers still run as node; judged pid 14 (node, uid 1000): the service: pid 1",
  ]);
  assert.match(verdictLine(document([pass("mode", "m")])), /^verdict: ok: 0 failed/);
});

const Schema = suite("schema");
const schema = JSON.parse(readFileSync(join(REPO, "docs/self-check.schema.json"), "utf8"));
const docs = readFileSync(join(REPO, "docs/self-check.md"), "utf8");

Schema("is draft 2020-12 and requires what buildDocument always writes", () => {
  assert.is(schema.$schema, "https://json-schema.org/draft/2020-12/schema");
  const doc = document([pass("mode", "m")]);
  assert.equal([...schema.required].sort(), Object.keys(doc).sort());
  assert.equal([...schema.$defs.check.required].sort(), Object.keys(doc.checks[0]!).sort());
  assert.equal(schema.$defs.check.properties.status.enum, ["pass", "warn", "fail"]);
  assert.equal(schema.properties.mode.enum, ["separated", "single-uid", "misconfigured"]);
});

Schema("every check id matches the schema's pattern and is documented", () => {
  const pattern = new RegExp(schema.$defs.check.properties.id.pattern, "u");
  for (const id of CHECK_ORDER) {
    assert.ok(pattern.test(id), id);
    assert.ok(docs.includes(`\`${id}\``), `docs/self-check.md documents ${id}`);
  }
});


Render.run();
Schema.run();
