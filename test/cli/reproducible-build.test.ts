/*
 * Reproducible builds (docs/security.md): two builds of the same source in
 * two checkouts at paths of different lengths give the same executable, byte
 * for byte. The image builds in /src, a developer anywhere: a build that
 * records where it ran gives each a different binary, and a published
 * checksum can then only be checked by building at the same path.
 *
 * Each checkout holds this worktree's files as they stand (git's tracked and
 * unignored files, uncommitted changes included) and hard links to its
 * node_modules; each is built by `node build.mjs` with the pinned Node, as
 * `npm run build` does. Two builds: about 20 s.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { NODE24, REPO } from "../helpers/paths.ts";

const test = suite("reproducible build");

/** Copies the files `git ls-files` names (tracked and unignored, as they are on disk) to `dir`, and hard-links node_modules. */
function checkout(dir: string): void {
  const listed = spawnSync("git", ["-C", REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], { encoding: "utf8" });
  assert.is(listed.status, 0, listed.stderr);
  for (const file of listed.stdout.split("\0").filter(Boolean)) {
    const from = join(REPO, file);
    if (!existsSync(from)) continue; // deleted in the worktree
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(from, join(dir, file));
    chmodSync(join(dir, file), lstatSync(from).mode & 0o777);
  }
  const linked = spawnSync("cp", ["-al", join(REPO, "node_modules"), join(dir, "node_modules")], { encoding: "utf8" });
  assert.is(linked.status, 0, linked.stderr);
}

function build(dir: string): void {
  const result = spawnSync(NODE24, [join(dir, "build.mjs")], { cwd: dir, encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  assert.is(result.status, 0, `build in ${dir} failed:\n${result.stdout}${result.stderr}`);
}

/** Where two files differ: how many bytes, the first offset, and the .build/ intermediates that differ too. */
function describeDifference(a: string, b: string): string {
  const left = readFileSync(join(a, "dist/clankie-separate"));
  const right = readFileSync(join(b, "dist/clankie-separate"));
  let count = 0;
  let first = -1;
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    if (left[i] !== right[i]) {
      count += 1;
      if (first < 0) first = i;
    }
  }
  const intermediates = readdirSync(join(a, ".build")).filter((name) => !readFileSync(join(a, ".build", name)).equals(readFileSync(join(b, ".build", name))));
  return `sizes ${left.length} and ${right.length}, ${count} differing bytes from offset ${first}; .build/ files that differ: ${intermediates.join(", ") || "none"}`;
}

test("two checkouts at paths of different lengths build byte-identical executables", () => {
  const top = mkdtempSync(join(tmpdir(), "clankie-repro-"));
  try {
    const short = join(top, "a");
    const long = join(top, "a-checkout-at-a-much-longer-path", "of", "the-same-source");
    for (const dir of [short, long]) {
      checkout(dir);
      build(dir);
    }
    const sums = [short, long].map((dir) => readFileSync(join(dir, "dist/SHA256SUMS"), "utf8"));
    const same = readFileSync(join(short, "dist/clankie-separate")).equals(readFileSync(join(long, "dist/clankie-separate")));
    assert.ok(same, `dist/clankie-separate differs between ${short} and ${long}: ${same ? "" : describeDifference(short, long)}`);
    assert.is(sums[1], sums[0]);
    const lib = (dir: string) => readdirSync(join(dir, "dist/lib"), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)).sort();
    assert.equal(lib(long), lib(short));
    assert.ok(lib(short).length > 2, `dist/lib holds ${lib(short).join(", ")}`);
    for (const file of lib(short)) assert.ok(readFileSync(join(short, file)).equals(readFileSync(join(long, file))), `${file} differs`);
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
});

test.run();
