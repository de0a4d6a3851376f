import { chownSync } from "node:fs";
import { Body, IDS, SANDBOX_NODE } from "./helpers/sandbox.ts";
const body = new Body();
chownSync(body.state, IDS.service, IDS.service);
chownSync(body.workspace, IDS.service, IDS.service);
const run = body.run({ as: "root", command: [SANDBOX_NODE, "/opt/clankie/tmp/cost2.mjs"], timeoutMs: 600_000 });
console.log(run.status, run.stdout, run.stderr.slice(-2000));
body.cleanup();
