/*
 * git across the two uids in the launch sandbox, with real git: the agent's
 * git works in a repository the service created in /workspace (the agent's
 * uid alone is refused: "dubious ownership"), and the service's git still
 * refuses a repository the agent created (ADR 0272, Consequences), whatever
 * the agent wrote to make it trust it.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { inBody, SANDBOX_FIXTURES, SANDBOX_NODE } from "../helpers/sandbox.ts";
import { seededBody } from "../helpers/stand-in.ts";

const test = suite("git-trust");

interface Step {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

const DUBIOUS = /detected dubious ownership in repository at '\/workspace\/(service|agent)-repo'/;

rootTest(test, "git: the agent works in the service's repository and its own; the service's git refuses the agent's, whatever the agent wrote", () => {
  inBody(seededBody(), (body) => {
    const run = body.run({ as: "root", command: [SANDBOX_NODE, `${SANDBOX_FIXTURES}/git-trust-service.mjs`], timeoutMs: 120_000 });
    const line = run.stdout.split("\n").find((l) => l.startsWith("{"));
    assert.ok(line, `no JSON from the service (exit ${run.status}): ${run.stdout}\n${run.stderr}`);
    const s = (JSON.parse(line!) as { steps: Record<string, Step> }).steps;
    const ok = (id: string): Step => {
      assert.is(s[id]!.exitCode, 0, `${id}: ${JSON.stringify(s[id])}`);
      return s[id]!;
    };

    for (const id of ["serviceInit", "serviceCommit", "serviceAdd", "serviceCommit2"]) ok(id);
    assert.is(ok("serviceLogOwn").stdout, "readme\nby the service", "the service's git in its own repository");

    // The service's repository, as the agent.
    assert.is(ok("agentLog").stdout, "readme\nby the service", "the agent's git reads the service's repository");
    assert.is(s.uidAloneLog!.exitCode, 128, `the control: the agent's uid alone is refused (${JSON.stringify(s.uidAloneLog)})`);
    assert.match(s.uidAloneLog!.stderr, DUBIOUS);
    ok("agentStatus");
    assert.is(ok("agentCommit").stdout, "by the agent", "the agent commits in the service's repository");
    assert.is(ok("agentSubdir").stdout, "/workspace/service-repo", "and works from a directory below its top");
    assert.is(ok("agentServiceEntries").stdout, "named-by-the-service\nby the agent", "the service's --env entries come first and a reset there does not undo the trust");

    // The agent's repository, as the service.
    assert.is(ok("agentInit").stdout, "agent repo", "the agent's git in its own repository");
    assert.is(ok("agentWidenGlobal").stdout, "*", "the agent's own global config says safe.directory=*");
    ok("agentWidenRepo");
    ok("agentWidenWorkspace");
    assert.is.not(s.agentWidenSystem!.exitCode, 0, "/etc/gitconfig is out of the agent's reach");
    for (const id of ["serviceLogAgent", "serviceLogAgentHome"]) {
      assert.is(s[id]!.exitCode, 128, `${id}: the service's git refuses the agent's repository (${JSON.stringify(s[id])})`);
      assert.match(s[id]!.stderr, DUBIOUS);
    }
    assert.is(ok("serviceLogAgentTrusted").stdout, "agent repo", "the control: with the trust on its own command line the service's git reads it, so the refusal is git's ownership check");
  });
});

test.run();
