#!/usr/bin/env node
// npm run demo: the boundary at work on this machine, no Docker needed.
// Starts a body in the launch sandbox (the ADR's docker run flags reproduced
// with namespaces and setpriv), with a stand-in service and a realistic
// /state, and runs a scripted model through the shim: a fixed list of tool
// calls that attempts every row of ADR 0272's threat model as clankie-agent.
import { chownSync } from "node:fs";
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
  process.exitCode = run.status ?? 1;
} finally {
  body.cleanup();
}
