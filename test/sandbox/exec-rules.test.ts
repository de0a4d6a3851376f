/*
 * The exec rules against the built executable in the launch sandbox: a
 * trusted service command whose #! interpreter the agent (or anyone but root
 * and the service) could have written is refused before anything changes.
 */
import { chmodSync, chownSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { Body, IDS } from "../helpers/sandbox.ts";
import { treeDigest } from "../helpers/tree.ts";

const test = suite("exec-rules");
const FIX = "name a #! interpreter installed in a root-owned directory that only root can write (for example /usr/bin)";

/** A body with a root-owned 0755 directory, bound read-only at /opt/trusted, holding a 0755 script. */
function bodyWithScript(interpreter: string): { body: Body; binds: [string, string, "ro"][] } {
  const body = new Body();
  chownSync(body.state, IDS.service, IDS.service);
  chownSync(body.workspace, IDS.service, IDS.service);
  const trusted = join(body.dir, "trusted");
  mkdirSync(trusted, { mode: 0o755 });
  chmodSync(trusted, 0o755);
  writeFileSync(join(trusted, "service.sh"), `#!${interpreter}\necho service ran as $(id -u)\n`, { mode: 0o755 });
  chmodSync(join(trusted, "service.sh"), 0o755);
  return { body, binds: [[trusted, "/opt/trusted", "ro"]] };
}

/** A file in /workspace as the agent leaves one: its own, group-writable. */
function plantTool(body: Body, mode: number, uid: number): void {
  const tool = join(body.workspace, "tool");
  writeFileSync(tool, "#!/bin/sh\nexec /bin/sh \"$@\"\n");
  chmodSync(tool, mode);
  chownSync(tool, uid, IDS.workspace);
}

const cases: [string, number, number, string, "root" | "node"][] = [
  ["owned by the agent", 0o755, IDS.agent, "/workspace/tool is owned by uid 1001, not 0 or 1000", "root"],
  ["writable by group", 0o775, IDS.service, "/workspace/tool is writable by group or other (mode 775)", "root"],
  ["writable by other", 0o757, IDS.service, "/workspace/tool is writable by group or other (mode 757)", "root"],
  // Today's launch (node) holds the interpreter to the same rule.
  ["owned by the agent, in today's launch", 0o755, IDS.agent, "/workspace/tool is owned by uid 1001, not 0 or 1000", "node"],
];
for (const [what, mode, uid, why, as] of cases) {
  rootTest(test, `a root-owned service script whose #! interpreter is ${what} is refused: exit 126, one line, nothing changed`, () => {
    const { body, binds } = bodyWithScript("/workspace/tool");
    try {
      plantTool(body, mode, uid);
      const before = treeDigest(body.dir);
      const run = body.run({ as, command: ["/opt/trusted/service.sh"], binds });
      assert.is(run.stderr, `clankie-separate: refusing to execute /opt/trusted/service.sh (#! /workspace/tool): ${why}; ${FIX}\n`);
      assert.is(run.status, 126);
      assert.is(run.stdout, "");
      assert.is(treeDigest(body.dir), before);
    } finally {
      body.cleanup();
    }
  });
}

rootTest(test, "control: the same script with a trusted interpreter runs as the service, in both launches", () => {
  const { body, binds } = bodyWithScript("/bin/sh");
  try {
    plantTool(body, 0o755, IDS.agent);
    for (const as of ["root", "node"] as const) {
      const run = body.run({ as, command: ["/opt/trusted/service.sh"], binds });
      assert.is(run.status, 0, run.stderr);
      assert.is(run.stdout, "service ran as 1000\n");
    }
  } finally {
    body.cleanup();
  }
});

test.run();
