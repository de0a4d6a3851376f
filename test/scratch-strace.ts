import { chownSync, mkdirSync, writeFileSync, readFileSync } from "node:fs";
import { Body, IDS } from "./helpers/sandbox.ts";
const body = new Body();
chownSync(body.state, IDS.service, IDS.service);
chownSync(body.workspace, IDS.service, IDS.service);
const r = body.run({ as: "root", command: ["/bin/sh", "-c", "cd /workspace && /usr/bin/strace -f -r -o /workspace/trace.txt /usr/local/sbin/clankie-agent-exec -- /bin/true; echo rc=$?"] });
console.log(r.stdout, r.stderr);
console.log(readFileSync(`${body.workspace}/trace.txt`, "utf8"));
body.cleanup();
