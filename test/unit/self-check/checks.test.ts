/*
 * The list of checks (src/self-check/checks.ts) is the one place a check
 * exists: docs/self-check.md documents every id of it, in its order, as
 * test/unit/project/docs.test.ts does for the exit codes; the schema's pattern takes
 * every id; and a fact that could not be read becomes the check's own
 * "could not check", never a pass and never a crash.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { CHECKS, runCheck, runChecks } from "../../../src/self-check/checks.ts";
import type { Facts } from "../../../src/self-check/facts.ts";
import { REPO } from "../../helpers/paths.ts";

const List = suite("the list of checks");
const ids = CHECKS.map((spec) => spec.id);
const docs = readFileSync(join(REPO, "docs/self-check.md"), "utf8");
const schema = JSON.parse(readFileSync(join(REPO, "docs/self-check.schema.json"), "utf8"));

List("docs/self-check.md's check tables name every id of the list, no other, in the list's order", () => {
  const section = docs.slice(docs.indexOf("## Checks"), docs.indexOf("## `--probe`"));
  const rows = [...section.matchAll(/^\| `([a-z.-]+)` \|/gm)].map((m) => m[1]);
  assert.equal(rows, ids);
});

List("ids are unique and match the schema's pattern", () => {
  assert.is(new Set(ids).size, ids.length);
  const pattern = new RegExp(schema.$defs.check.properties.id.pattern, "u");
  for (const id of ids) assert.ok(pattern.test(id), id);
  assert.is(schema.$defs.check.properties.id.enum, undefined, "the schema lists no ids of its own to keep in step");
});

List("an id is written once in src/self-check: as the list's entry, or in the table it spreads", () => {
  const dir = join(REPO, "src/self-check");
  const text = readdirSync(dir).map((file) => readFileSync(join(dir, file), "utf8")).join("\n");
  for (const id of ids) {
    const attempt = id.startsWith("probe.") && !text.includes(`"${id}"`);
    const written = attempt ? `id: "${id.slice("probe.".length)}"` : `"${id}"`;
    // An attempt's own id is the probe's protocol (probe-agent.ts); its check is the entry of probe.ts's table.
    const where = attempt ? readFileSync(join(dir, "probe.ts"), "utf8") : text;
    const count = where.split(id.includes(".") || attempt ? written : `id: ${written}`).length - 1;
    assert.is(count, 1, `${id}: ${written} written ${count} times`);
  }
});

const Fallback = suite("a fact that could not be read");
const missing = (error: string, fix: string) => ({ ok: false as const, error, fix });

Fallback("the check says it could not look, with the fact's reason and fix; fail, or warn where the check says so", () => {
  const facts = { mounts: missing("read /proc/self/mountinfo: ENOENT", "mount /proc in the container"), mode: { ok: true, value: { mode: "separated" } } } as unknown as Facts;
  const byId = (id: string) => runCheck(CHECKS.find((spec) => spec.id === id)!, facts)!;
  assert.equal(byId("image.mounts"), { id: "image.mounts", status: "warn", summary: "could not check the mounts: read /proc/self/mountinfo: ENOENT", found: { error: "read /proc/self/mountinfo: ENOENT" }, fix: "mount /proc in the container" });
  const state = runCheck(CHECKS.find((spec) => spec.id === "state.layout")!, { ids: missing("the users and groups of ADR 0272 are not all defined (see accounts)", "fix the accounts check first") } as unknown as Facts)!;
  assert.equal([state.status, state.summary, state.fix], ["fail", "could not check /state: the users and groups of ADR 0272 are not all defined (see accounts)", "fix the accounts check first"]);
});

Fallback("a judge that throws fails its own check only; without --probe the probe's checks are absent", () => {
  const throwing = [{ id: "x", needs: [], judge: () => { throw new Error("boom"); } }, { id: "y", needs: [], judge: () => ({ status: "pass" as const, summary: "ok", found: {}, fix: null }) }];
  assert.equal(runChecks({} as Facts, throwing).map((c) => [c.id, c.status, c.summary]), [["x", "fail", "could not check x: boom"], ["y", "pass", "ok"]]);
  const probes = CHECKS.filter((spec) => spec.id.startsWith("probe"));
  const facts = { probe: { ok: true, value: undefined }, ids: missing("no", "fix"), self: { ok: true, value: {} }, confinement: { ok: true, value: {} } } as unknown as Facts;
  assert.equal(runChecks(facts, probes), []);
});

List.run();
Fallback.run();
