#!/usr/bin/env node
// npm run demo: the boundary at work on this machine, no Docker needed.
// Starts a body in the launch sandbox (the ADR's docker run flags reproduced
// with namespaces and setpriv), with a stand-in service and a realistic
// /state, and runs a scripted model through the shim: a fixed list of tool
// calls that attempts every row of ADR 0272's threat model as clankie-agent,
// then the rows beyond the ADR (what the uid alone does not guard), each
// beside its control: the same attempt by the agent's uid alone.
import { chownSync } from "node:fs";
import { withControlRunner } from "../test/helpers/control-runner.ts";
import { Body, IDS, SANDBOX_FIXTURES, SANDBOX_NODE } from "../test/helpers/sandbox.ts";

if (process.geteuid?.() !== 0) {
  process.stderr.write("demo: needs root (it starts the body as root, as the launcher would); run it as root\n");
  process.exit(77);
}
const service = [SANDBOX_NODE, `${SANDBOX_FIXTURES}/stand-in-service.mjs`];
const body = new Body();
try {
  chownSync(body.state, IDS.service, IDS.service);
  chownSync(body.workspace, IDS.service, IDS.service);
  process.stdout.write("1. Today's body (--user node): the service seeds /state as node.\n");
  const seeded = body.run({ as: "node", command: [...service, "seed"] });
  if (seeded.status !== 0) throw new Error(seeded.stderr);
  process.stdout.write("2. The ADR launch (--user 0:0, six capabilities, no-new-privileges): clankie-separate takes over.\n");
  process.stdout.write("3. The service runs the scripted model through clankie-agent-exec.\n\n");
  const run = body.run({ as: "root", command: [...service, "model"] });
  process.stdout.write(run.stderr);
  process.stdout.write("\n4. Beyond the ADR: the same service starts job B and tries what the uid alone does not guard.\n\n");
  // Each row's control (the agent's uid alone) is started by the launch's root side: the service holds no capability (README, "Tests and benchmarks").
  const beyond = body.run({ as: "root", direct: true, command: withControlRunner([SANDBOX_NODE, `${SANDBOX_FIXTURES}/beyond-adr-service.mjs`]), timeoutMs: 120_000 });
  process.stdout.write(beyond.stderr.split("\n").filter((line) => !line.startsWith("clankie-separate: separated:")).join("\n"));
  process.exitCode = run.status === 0 && beyond.status === 0 ? 0 : 1;
} finally {
  body.cleanup();
}
