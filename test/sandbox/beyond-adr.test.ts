/*
 * The demo's second table (test/fixtures/beyond-adr-service.mjs) as a test:
 * every row beyond ADR 0272 is attempted by agent work through the shim and
 * must be denied, and each attempt but the service's own succeeds for the
 * agent's uid alone (the control), so a denial is the confinement's.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { withControlRunner } from "../helpers/control-runner.ts";
import { rootTest } from "../helpers/privilege.ts";
import { inBody, SANDBOX_FIXTURES, SANDBOX_NODE } from "../helpers/sandbox.ts";
import { seededBody } from "../helpers/stand-in.ts";

const test = suite("beyond-adr");

interface Row {
  id: string;
  row: string;
  guard: string;
  outcome: "denied" | "possible";
  control: "denied" | "possible" | "-";
  ok: boolean;
}

rootTest(test, "beyond the ADR: every row of the demo's second table is denied to agent work and possible to the agent's uid alone", () => {
  inBody(seededBody(), (body) => {
    const run = body.run({ as: "root", direct: true, command: withControlRunner([SANDBOX_NODE, `${SANDBOX_FIXTURES}/beyond-adr-service.mjs`]), timeoutMs: 120_000 });
    const line = run.stdout.split("\n").find((l) => l.startsWith("{"));
    assert.ok(line, `no JSON from the service (exit ${run.status}): ${run.stdout}\n${run.stderr}`);
    const rows = (JSON.parse(line!) as { results: Row[] }).results;
    assert.ok(rows.length >= 13 && rows.some((r) => r.id === "private-token"), `${rows.length} rows`);
    const meaningless = rows.filter((r) => r.control === "denied").map((r) => r.id);
    assert.equal(meaningless, [], "these attempts fail for the agent's uid alone too: they prove nothing");
    const notHeld = rows.filter((r) => !r.ok).map((r) => `${r.id} (${r.guard})`);
    assert.equal(notHeld, [], "rows not held");
  });
});

test.run();
