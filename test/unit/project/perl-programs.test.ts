/*
 * The Perl programs the executable carries (src/perl/*.pl and the stage's
 * src/stage/stage.pl, bundled as text): each compiles under `perl -c` as it
 * is passed to perl, placeholders filled; the stage's exit codes are the
 * EXIT values of src/constants.ts.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { REPO } from "../../helpers/paths.ts";
import { EXIT } from "../../../src/constants.ts";
import { STAGE_SOURCE } from "../../../src/stage/stage.ts";
import { stageSource } from "../../../src/stage/stage-source.ts";
import { IMAGE_SCAN_SCRIPT } from "../../../src/self-check/image-scan.ts";
import { CONFINEMENT_ATTEMPTS_SCRIPT } from "../../../src/self-check/probe-agent.ts";
import { STATE_ACL_SCRIPT } from "../../../src/layout/state-acl.ts";
import { READ_ONLY_WALK } from "../../../src/self-check/state.ts";
import SPAWN_GRAB from "../../../src/perl/spawn-grab.pl";
import SPAWNER_PAIR from "../../../src/perl/spawner-pair.pl";
import { ACCEPTOR_PROGRAM } from "../../../src/service/stream-acceptor.ts";
import { HOLDER_PROGRAM } from "../../../src/service/spawner-client.ts";
import { GRAB_PROGRAM } from "../../../src/agent-exec/spawner.ts";

const test = suite("perl programs");

const PROGRAMS: Record<string, { source: string; flags: string[] }> = {
  "stage/stage.pl": { source: STAGE_SOURCE, flags: ["-T", "-C0"] },
  "stage/stage.pl (arm64)": { source: stageSource("arm64"), flags: ["-T", "-C0"] },
  "stage/stage.pl (the service's alone, as the entrypoint carries it)": { source: stageSource(process.arch, ["service"]), flags: ["-T", "-C0"] },
  "perl/image-scan.pl": { source: IMAGE_SCAN_SCRIPT, flags: [] },
  "perl/state-acl.pl": { source: STATE_ACL_SCRIPT, flags: [] },
  "perl/state-audit.pl": { source: `${STATE_ACL_SCRIPT}\n${READ_ONLY_WALK.part}`, flags: [] },
  "perl/probe-confinement.pl": { source: CONFINEMENT_ATTEMPTS_SCRIPT, flags: [] },
  "perl/spawn-grab.pl": { source: SPAWN_GRAB, flags: ["-T", "-C0"] },
  "the spawner's grab with its stage (GRAB_PROGRAM, src/agent-exec/spawner.ts)": { source: GRAB_PROGRAM, flags: ["-T", "-C0"] },
  "perl/spawner-pair.pl": { source: SPAWNER_PAIR, flags: [] },
  "the service's holder (src/service/spawner-client.ts)": { source: HOLDER_PROGRAM, flags: [] },
  "the service's acceptor (src/service/stream-acceptor.ts)": { source: ACCEPTOR_PROGRAM, flags: [] },
};

test("every .pl file under src is one of the programs checked here", () => {
  const files = ["perl", "stage"].flatMap((dir) => readdirSync(join(REPO, "src", dir)).filter((f) => f.endsWith(".pl")).map((f) => `${dir}/${f}`));
  assert.equal(files.sort(), Object.keys(PROGRAMS).filter((name) => !name.includes(" ")).sort());
});

for (const [name, { source, flags }] of Object.entries(PROGRAMS)) {
  test(`${name}: perl -c accepts it, with no placeholder left`, () => {
    assert.not.match(source, /@[a-zA-Z_]+@/);
    const result = spawnSync("/usr/bin/perl", [...flags, "-c", "-e", source], { encoding: "utf8" });
    assert.is(result.stderr, "-e syntax OK\n");
    assert.is(result.status, 0);
  });
}

/** EXIT_VERIFY_FAILED -> verifyFailed. */
const exitKey = (perlName: string) => perlName.slice("EXIT_".length).toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

test("stage.pl: each exit code is a named literal equal to EXIT of src/constants.ts, and every exit uses one", () => {
  const text = readFileSync(join(REPO, "src/stage/stage.pl"), "utf8");
  const defined = [...text.matchAll(/^sub (EXIT_[A-Z_]+) \(\) \{ (\d+) \}$/gm)].map((m) => [m[1]!, Number(m[2])] as const);
  assert.ok(defined.length >= 8, `found ${defined.length} exit codes`);
  for (const [name, value] of defined) {
    const key = exitKey(name) as keyof typeof EXIT;
    assert.ok(key in EXIT, `${name}: no EXIT.${key} in src/constants.ts`);
    assert.is(value, EXIT[key], name);
  }
  const names = new Set(defined.map(([name]) => name));
  const used = [...text.matchAll(/\bEXIT_[A-Z_]+/g)].map((m) => m[0]);
  assert.equal(used.filter((name) => !names.has(name)), [], "every exit code used is defined");
  // No exit or refusal with a bare number: refuse(CODE, ...), exit CODE, or "$! == 2 ? A : B".
  const bare = text.split("\n").filter((line) => /\b(?:exit|refuse\()\s*\d/.test(line) && !line.startsWith("sub EXIT_"));
  assert.equal(bare, []);
});

test("stage.pl: a fix it shares with the TypeScript side is worded the same on both", () => {
  const text = readFileSync(join(REPO, "src/stage/stage.pl"), "utf8");
  const shared: [string, string][] = [
    ["check the command's path and permissions", "src/exec/rules.ts"],
    ["mount /proc in the container", "src/self-check/facts.ts"],
  ];
  for (const [fix, file] of shared) {
    assert.ok(text.includes(`"${fix}"`) || text.includes(`'${fix}'`), `stage.pl: ${fix}`);
    assert.ok(readFileSync(join(REPO, file), "utf8").includes(`"${fix}"`), `${file}: ${fix}`);
  }
});

test.run();
