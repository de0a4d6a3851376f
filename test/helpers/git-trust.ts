/*
 * The verdict on test/fixtures/git-trust-service.mjs, shared by the sandbox
 * and the image test: the agent's git works in the service's repository
 * (the agent's uid alone is refused), and the service's git refuses the
 * agent's repository whatever the agent wrote (with the service's own trust
 * on its command line it reads it: the refusal is git's ownership check).
 */
import * as assert from "uvu/assert";

export interface GitStep {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

/** Parses the fixture's JSON line and checks every step. */
export function checkGitTrust(stdout: string, stderr: string, workspace: string): Record<string, GitStep> {
  const line = stdout.split("\n").find((l) => l.startsWith("{"));
  assert.ok(line, `no JSON from the service: ${stdout}\n${stderr}`);
  const s = (JSON.parse(line!) as { steps: Record<string, GitStep> }).steps;
  const ok = (id: string): GitStep => {
    assert.is(s[id]!.exitCode, 0, `${id}: ${JSON.stringify(s[id])}`);
    return s[id]!;
  };
  const dubious = (id: string, repo: string): void => {
    assert.is(s[id]!.exitCode, 128, `${id}: refused (${JSON.stringify(s[id])})`);
    assert.ok(s[id]!.stderr.includes(`detected dubious ownership in repository at '${workspace}/${repo}'`), `${id}: ${s[id]!.stderr}`);
  };

  for (const id of ["serviceInit", "serviceCommit", "serviceAdd", "serviceCommit2"]) ok(id);
  assert.is(ok("serviceLogOwn").stdout, "readme\nby the service", "the service's git in its own repository");

  // The service's repository, as the agent; the control: the agent's uid alone is refused.
  assert.is(ok("agentLog").stdout, "readme\nby the service", "the agent's git reads the service's repository");
  dubious("uidAloneLog", "service-repo");
  ok("agentStatus");
  assert.is(ok("agentCommit").stdout, "by the agent", "the agent commits in the service's repository");
  assert.is(ok("agentSubdir").stdout, `${workspace}/service-repo`, "and works from a directory below its top");
  assert.is(ok("agentServiceEntries").stdout, "named-by-the-service\nby the agent", "the service's --env entries come first and a reset there does not undo the trust");

  // The agent's repository, as the service.
  assert.is(ok("agentInit").stdout, "agent repo", "the agent's git in its own repository");
  assert.is(ok("agentWidenGlobal").stdout, "*", "the agent's own global config says safe.directory=*");
  ok("agentWidenRepo");
  ok("agentWidenWorkspace");
  assert.is.not(s.agentWidenSystem!.exitCode, 0, "/etc/gitconfig is out of the agent's reach");
  dubious("serviceLogAgent", "agent-repo");
  dubious("serviceLogAgentHome", "agent-repo");
  assert.is(ok("serviceLogAgentTrusted").stdout, "agent repo", "the control: with the trust on its own command line the service's git reads it");
  return s;
}
