/*
 * The exec rules against the built executable in the launch sandbox: a
 * trusted service command whose #! interpreter the agent (or anyone but root
 * and the service) could have written is refused before anything changes;
 * and a program the service starts through systemExec holds no capability.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { Body, IDS, SANDBOX_NODE, SANDBOX_REPO } from "../helpers/sandbox.ts";
import { seededBody, serviceJson } from "../helpers/stand-in.ts";
import { treeDigest } from "../helpers/tree.ts";
import { type Children, judgeChildren } from "../helpers/service-children.ts";

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

rootTest(test, "a capture that drops capabilities (the audit's image scan) refuses a setpriv that others could write (126) before anything starts; control: closed, it runs", () => {
  const body = new Body();
  try {
    const setpriv = join(body.dir, "setpriv");
    writeFileSync(setpriv, readFileSync("/usr/bin/setpriv"));
    const capture = [
      `import { runCapture } from "${SANDBOX_REPO}/src/exec/capture.ts";`,
      "try { const r = runCapture({ command: \"/bin/true\", args: [], dropCapabilities: true }); console.log(`ran ${r.status}`); }",
      "catch (error) { console.log(`refused ${error.exitCode}: ${error.message}`); }",
    ].join("\n");
    const run = (mode: number) => {
      chmodSync(setpriv, mode);
      return body.run({ as: "root", direct: true, command: [SANDBOX_NODE, "--input-type=module", "-e", capture], binds: [[setpriv, "/usr/bin/setpriv", "ro"]] });
    };
    const writable = run(0o757);
    assert.is(writable.stdout, "refused 126: refusing to execute /usr/bin/setpriv: /usr/bin/setpriv is writable by group or other (mode 757)\n", writable.stderr);
    const control = run(0o755);
    assert.is(control.stdout, "ran 0\n", control.stderr);
  } finally {
    body.cleanup();
  }
});

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


/*
 * What a program the service starts holds (the verdict and its reasons:
 * test/helpers/service-children.ts).
 */
function childrenOfService(): Children {
  const body = seededBody();
  try {
    const run = serviceJson<Children>(body, ["children"]);
    assert.is(run.status, 0, run.stderr);
    return run.json;
  } finally {
    body.cleanup();
  }
}

rootTest(test, "no child of the service holds a capability or becomes root, by systemExec, child_process or plain execa; setuid(0)/setuid(1001) fail in the service; execa's node with a planted nodePath is refused; a raw request that hides a chain behind NUL-ended fields runs nothing; control: the spawner beside it holds SETUID+SETGID", () => {
  judgeChildren(childrenOfService());
});

rootTest(test, "systemExec and spawnAgent refuse execa's uid and gid options (under ADR 0272's shape the service's CAP_SETUID honoured uid: 0)", () => {
  const body = seededBody();
  try {
    const script = `import { systemExec, spawnAgent } from "/opt/clankie/dist/lib/system-exec.js";
const out = [];
for (const [fn, opts] of [[systemExec, { uid: 0 }], [systemExec, { gid: 0 }], [spawnAgent, { uid: 0 }]]) {
  try { await fn("/usr/bin/id", ["-u"], opts); out.push("ran"); } catch (e) { out.push(e.message); }
}
process.stdout.write(JSON.stringify(out) + "\\n");`;
    const run = body.run({ as: "root", command: [SANDBOX_NODE, "--input-type=module", "-e", script], timeoutMs: 60_000 });
    assert.is(run.status, 0, run.stderr);
    const out = JSON.parse(run.stdout) as string[];
    assert.is(out[0], "systemExec: the uid option is not accepted: this package sets no child's user from execa's options");
    assert.is(out[1], "systemExec: the gid option is not accepted: this package sets no child's group from execa's options");
    assert.is(out[2], "spawnAgent: the uid option is not accepted: this package sets no child's user from execa's options");
  } finally {
    body.cleanup();
  }
});

/*
 * A library ld.so preloads reports where it landed: the program's name and
 * its effective capabilities, on stderr.
 */
const PROBE_C = `#include <stdio.h>
#include <string.h>
__attribute__((constructor)) static void probe(void) {
  char comm[64] = "?", line[256], eff[64] = "?";
  FILE *f = fopen("/proc/self/comm", "r");
  if (f) { if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\\n")] = 0; fclose(f); }
  f = fopen("/proc/self/status", "r");
  if (f) { while (fgets(line, sizeof line, f)) if (strncmp(line, "CapEff:\\t", 8) == 0) { line[strcspn(line, "\\n")] = 0; strcpy(eff, line + 8); } fclose(f); }
  fprintf(stderr, "preloaded into %s CapEff=%s\\n", comm, eff);
}
`;

rootTest(test, "systemExec, runSelfCheck and spawnAgent refuse LD_PRELOAD in env (64): no library reaches setpriv or the audit; control: systemExec's own setpriv line started by plain execa with it loads the library into setpriv, which holds nothing (beyond ADR 0272 the service holds no capability to lend it)", () => {
  const body = seededBody();
  try {
    const lib = join(body.dir, "preload");
    mkdirSync(lib, { mode: 0o755 });
    writeFileSync(join(lib, "probe.c"), PROBE_C);
    const cc = spawnSync("cc", ["-shared", "-fPIC", "-o", join(lib, "probe.so"), join(lib, "probe.c")], { encoding: "utf8" });
    assert.is(cc.status, 0, cc.stderr);
    const script = `import { execa } from "/opt/clankie/node_modules/execa/index.js";
import { runSelfCheck, spawnAgent, systemExec } from "/opt/clankie/dist/lib/system-exec.js";
const env = { LD_PRELOAD: "/opt/preload/probe.so" };
const control = await execa("/usr/bin/setpriv", ["--inh-caps=-all", "--ambient-caps=-all", "--", "/bin/true"], { env, extendEnv: false, reject: false });
const out = { control: control.stderr };
const calls = {
  systemExec: () => systemExec("/bin/true", [], { env, reject: false }),
  runSelfCheck: () => runSelfCheck(["--json"], { env, reject: false }),
  spawnAgent: () => spawnAgent("/bin/true", [], { env, reject: false }),
};
for (const [name, call] of Object.entries(calls)) {
  try { out[name] = "ran: " + (await call()).stderr; } catch (e) { out[name] = e.message + " (" + e.exitCode + ")"; }
}
process.stdout.write(JSON.stringify(out) + "\\n");`;
    const run = body.run({ as: "root", command: [SANDBOX_NODE, "--input-type=module", "-e", script], binds: [[lib, "/opt/preload", "ro"]], timeoutMs: 60_000 });
    assert.is(run.status, 0, run.stderr);
    const out = JSON.parse(run.stdout) as Record<string, string>;
    // Under ADR 0272's shape setpriv held the service's SETUID+SETGID here (CapEff=00000000000000c0); the refusals below still keep code-loading names from every child.
    assert.is(out.control, "preloaded into setpriv CapEff=0000000000000000\npreloaded into true CapEff=0000000000000000");
    assert.is(out.systemExec, "LD_PRELOAD: variables that load code are never passed to a child (64)");
    assert.is(out.runSelfCheck, "LD_PRELOAD: variables that load code are never passed to a child (64)");
    assert.is(out.spawnAgent, "LD_PRELOAD: variables that load code are never passed to agent work (64)");
  } finally {
    body.cleanup();
  }
});

test.run();
