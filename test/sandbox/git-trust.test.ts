/*
 * git across the two uids in the launch sandbox, with real git: the agent's
 * git works in a repository the service created in /workspace (the agent's
 * uid alone is refused: "dubious ownership"), and the service's git still
 * refuses a repository the agent created (ADR 0272, Consequences), whatever
 * the agent wrote to make it trust it.
 */
import { withControlRunner } from "../helpers/control-runner.ts";
import { suite } from "uvu";
import { checkGitTrust } from "../helpers/git-trust.ts";
import { rootTest } from "../helpers/privilege.ts";
import { inBody, SANDBOX_FIXTURES, SANDBOX_NODE } from "../helpers/sandbox.ts";
import { seededBody } from "../helpers/stand-in.ts";

const test = suite("git-trust");

rootTest(test, "git: the agent works in the service's repository and its own; the service's git refuses the agent's, whatever the agent wrote", () => {
  inBody(seededBody(), (body) => {
    const run = body.run({ as: "root", direct: true, command: withControlRunner([SANDBOX_NODE, `${SANDBOX_FIXTURES}/git-trust-service.mjs`]), timeoutMs: 120_000 });
    checkGitTrust(run.stdout, run.stderr, "/workspace");
  });
});

test.run();
