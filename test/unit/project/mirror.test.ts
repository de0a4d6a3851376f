/*
 * Unit tests mirror src/ (as execa's do): test/unit/<path>.test.ts tests
 * src/<path>.ts, so the test of a module is found without searching, and a
 * test file whose module was renamed or removed fails here instead of
 * testing nothing in particular. Whole-project tests (docs, layering, the
 * exec boundary, the Perl programs, the demo's verdict) live in
 * test/unit/project/ and name no module.
 *
 * Every src module has its test file, except the ones below: each says why
 * and where it is tested instead. A new module needs a test file or a line
 * here.
 */
import { existsSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { REPO } from "../../helpers/paths.ts";

const UNIT = join(REPO, "test/unit");
const SRC = join(REPO, "src");

const BLACK_BOX = "a role's privileged entry: run as the built executable by test/sandbox and test/cli, where the kernel is the judge";
export const UNTESTED_ALONE: Record<string, string> = {
  "main.ts": BLACK_BOX,
  "agent-exec/main.ts": BLACK_BOX,
  "agent-exec/start.ts": BLACK_BOX,
  "service/spawner-client.ts": "the service's channel to the spawner and the job's holder: run against the real spawner by test/sandbox/spawner.test.ts, agent-exec, agent-stop and private-jobs",
  "agent-exec/setpriv-chain.ts": "the per-job shim's chain through setpriv, apart from plan.ts so that the spawner, whose grab makes the drop itself, does not carry it: tested in test/unit/agent-exec/plan.test.ts (agentChainArgv)",
  "stage/stage-argv.ts": "the stage's argv as a perl of its own, apart from stage.ts so that the spawner does not carry it: tested in test/unit/stage/stage.test.ts and protocol.test.ts (stageArgv)",
  "agent-exec/run-args.ts": "a command's options, apart from cli.ts so that the spawner does not carry the shim's other actions: tested in test/unit/agent-exec/cli.test.ts, through parseAgentExecArgs, and its parseStartedFd there too",
  "os/proc-stat.ts": "parseStat and readSession, apart from proc-status.ts so that the spawner does not load them: tested in test/unit/os/proc-status.test.ts",
  "exec/start-child.ts": "the spawner's child start (one spawn call behind the exec gate): exercised by every spawn in test/sandbox",
  "os/fd-line.ts": "one line out and back on a socket: exercised by the probe through the spawner, test/sandbox/self-check.test.ts",
  "agent-exec/private-start.ts": BLACK_BOX,
  "entrypoint/start.ts": BLACK_BOX,
  "spawner-protocol.ts": "types only: tsc holds both ends of the channel to them",
  "self-check/fact-types.ts": "types only: tsc checks them; project/layering.test.ts keeps them out of import circles",
  "stage/sections.ts": "the format of stage.pl's sections: stage/stage.test.ts and stage/stage-source.test.ts cut by it",
  "entrypoint/run.ts": BLACK_BOX,
  "entrypoint/state-layout.ts": "chown and chmod as root over a planted tree: test/sandbox/entrypoint.test.ts; its walk is layout/state-acl.ts's",
  "entrypoint/workspace-layout.ts": "chown and chmod as root: test/sandbox/entrypoint.test.ts; its rules are layout/workspace.ts's",
  "entrypoint/private-root.ts": "a root-owned rename and removal at start: test/sandbox/private-jobs.test.ts (the next start's cleanup)",
  "service/private-release.ts": "the release after a private job ends, through the real shim: test/sandbox/private-jobs.test.ts",
  "exec/replace.ts": "execve(2) replaces the test process; its gate is exec/rules.ts's (exec/rules.test.ts calls prepareExec)",
  "build-info.ts": "values esbuild defines at build time: test/cli/binary.test.ts reads --version",
  "embedded-bundle.ts": "reads the executable's own SEA note: test/cli/binary.test.ts compares --version's hash with the bundle",
  "constants.ts": "fixed values: project/docs.test.ts holds the exit codes to README",
  "help.ts": "text: test/cli/binary.test.ts checks that --help lists both roles, their options and every exit code",
  "layout/rules.ts": "the walk's per-entry rule type: entrypoint/tree-walk.test.ts",
  "os/errno.ts": "a lookup in Node's errno table: self-check/confinement.test.ts, image-scan.test.ts and layout/state-acl.test.ts read its names",
  "os/file-kind.ts": "lstat's kind: the walk's tests (entrypoint/tree-walk)",
};

function files(dir: string, suffix: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name), suffix).map((f) => `${entry.name}/${f}`) : entry.name.endsWith(suffix) && !entry.name.endsWith(".d.ts") ? [entry.name] : [],
  );
}

const tests = readdirSync(UNIT, { withFileTypes: true }).filter((e) => e.isDirectory() && e.name !== "project").flatMap((e) => files(join(UNIT, e.name), ".ts").map((f) => `${e.name}/${f}`));
const topTests = readdirSync(UNIT, { withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);
const modules = files(SRC, ".ts");

test("every unit test file outside project/ is <module>.test.ts of an existing src module", () => {
  const all = [...topTests, ...tests];
  assert.ok(all.length > 40, `read ${all.length} test files`);
  const stray = all.filter((file) => !file.endsWith(".test.ts") || !existsSync(join(SRC, file.replace(/\.test\.ts$/, ".ts"))));
  assert.equal(stray, [], `test/unit/${stray[0]} names no module of src/ (shared code belongs in test/helpers/)`);
});

test("every src module has its test file or a reason here; no reason outlives its module or its exception", () => {
  const missing = modules.filter((m) => !existsSync(join(UNIT, m.replace(/\.ts$/, ".test.ts"))) && !(m in UNTESTED_ALONE));
  assert.equal(missing, [], "add test/unit/<path>.test.ts or a line in UNTESTED_ALONE");
  const stale = Object.keys(UNTESTED_ALONE).filter((m) => !modules.includes(m) || existsSync(join(UNIT, m.replace(/\.ts$/, ".test.ts"))));
  assert.equal(stale, []);
});

test("project/ holds only whole-project tests: none of them is named after a module", () => {
  const project = files(join(UNIT, "project"), ".test.ts").map((f) => relative(".", f));
  assert.ok(project.includes("layering.test.ts"));
  assert.equal(project.filter((f) => existsSync(join(SRC, f.replace(/\.test\.ts$/, ".ts")))), []);
});

test.run();
