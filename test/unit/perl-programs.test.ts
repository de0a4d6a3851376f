/*
 * The Perl programs the executable carries (src/perl/*.pl, bundled as text):
 * each compiles under `perl -c` as it is passed to perl, placeholders filled.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { REPO } from "../helpers/paths.ts";
import { VERIFIER_SOURCE } from "../../src/verifier.ts";
import { IMAGE_SCAN_SCRIPT } from "../../src/self-check/image-scan.ts";
import { CONFINEMENT_ATTEMPTS_SCRIPT } from "../../src/self-check/probe-agent.ts";

const test = suite("perl programs");

const PROGRAMS: Record<string, { source: string; flags: string[] }> = {
  "verifier.pl": { source: VERIFIER_SOURCE, flags: ["-T", "-C0"] },
  "image-scan.pl": { source: IMAGE_SCAN_SCRIPT, flags: [] },
  "probe-confinement.pl": { source: CONFINEMENT_ATTEMPTS_SCRIPT, flags: [] },
};

test("every file in src/perl is one of the programs checked here", () => {
  assert.equal(readdirSync(join(REPO, "src/perl")).filter((f) => f.endsWith(".pl")).sort(), Object.keys(PROGRAMS).sort());
});

for (const [name, { source, flags }] of Object.entries(PROGRAMS)) {
  test(`${name}: perl -c accepts it, with no placeholder left`, () => {
    assert.not.match(source, /@[A-Z_]+@/);
    const result = spawnSync("/usr/bin/perl", [...flags, "-c", "-e", source], { encoding: "utf8" });
    assert.is(result.stderr, "-e syntax OK\n");
    assert.is(result.status, 0);
  });
}

test.run();
