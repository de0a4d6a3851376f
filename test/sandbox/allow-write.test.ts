/*
 * An agent-writable path under /state lets agent work stop the next start
 * (issue 34, item 4). README's own example, allowWrite:
 * ["/state/run/worker-1"]: the service makes the directory agent-writable,
 * and spawnAgent and the shim now refuse the option (64, one line). The
 * control is the attack as the agent's uid alone, which is what the option
 * opened to a job (Landlock only narrows what the modes allow): a second hard
 * link to its own file there, after which the next start refuses (65).
 */
import { withControlRunner } from "../helpers/control-runner.ts";
import { chownSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { Body, IDS, inBody, SANDBOX_FIXTURES, SANDBOX_NODE } from "../helpers/sandbox.ts";

const test = suite("allow-write");

interface Attack {
  spawnAgent: { name: string; exitCode: number | null; message: string; fix: string | null } | "no throw";
  shim: { exitCode: number; stderr: string };
  afterRefusals: string[];
  control: { status: number | null; stderr: string; entries: string[]; links: number | null };
}

const WHAT = '"/state/run/worker-1" is under /state, which every start walks: agent work that may write there can stop the next start (a hard link, a deep tree)';
const FIX = "give the agent a directory outside /state (under /workspace, say), or under /state/agent";

rootTest(test, "README's allowWrite under /state: spawnAgent and the shim refuse it (64, one line); control: the agent's uid there plants a second hard link and the next start refuses (65)", () => {
  const body = new Body();
  chownSync(body.state, IDS.service, IDS.service);
  chownSync(body.workspace, IDS.service, IDS.service);
  inBody(body, () => {
    const run = body.run({ as: "root", direct: true, command: withControlRunner([SANDBOX_NODE, `${SANDBOX_FIXTURES}/allow-write.mjs`]), timeoutMs: 90_000 });
    assert.is(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const o = JSON.parse(run.stdout.split("\n").find((l) => l.startsWith("{"))!) as Attack;
    assert.equal(o.spawnAgent, { name: "Refusal", exitCode: 64, message: `allowWrite ${WHAT}`, fix: FIX }, JSON.stringify(o));
    assert.equal(o.shim, { exitCode: 64, stderr: `clankie-agent-exec: --allow-write ${WHAT}; ${FIX} (see clankie-agent-exec --help)` });
    assert.equal(o.afterRefusals, [], "nothing was written through either route");
    // The control: what the option would have let a job do.
    assert.equal(o.control, { status: 0, stderr: "", entries: ["own", "own-again"], links: 2 });
    const next = body.run({ as: "root", command: ["/bin/true"] });
    assert.is(next.status, 65, `the next start: ${next.stderr}`);
    assert.match(next.stderr, /^clankie-separate: \/state\/run\/worker-1\/own(-again)? is a hard link \(2 names\) to a file owned by uid 1001; /);
  });
});

test.run();
