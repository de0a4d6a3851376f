/*
 * The image's build stage runs `node build.mjs` in the Docker context, which
 * .dockerignore reduces to an allowlist. A file build.mjs reads that the
 * allowlist leaves out stops the default build (SEA=build), and only that
 * build: SEA=prebuilt and every local build still work. The code-cache and
 * text-module scripts were left out so. This reads every repository path
 * build.mjs names (`join(root, "...")`) and checks that the context holds it.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { REPO } from "../../helpers/paths.ts";

/** Whether .dockerignore's allowlist (`*`, then `!path` and `!dir/` lines) sends `path` to the build. */
export function inContext(dockerignore: string, path: string): boolean {
  const lines = dockerignore.split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"));
  assert.is(lines[0], "*", ".dockerignore starts by leaving everything out");
  return lines.slice(1).some((line) => {
    assert.ok(line.startsWith("!") && !/[*?[]/.test(line), `.dockerignore line ${line}: only !PATH lines are understood here`);
    const kept = line.slice(1);
    return kept.endsWith("/") ? path.startsWith(kept) : path === kept;
  });
}

test("inContext: a listed file, a file under a listed directory; not a sibling, not a prefix of a name", () => {
  const ignore = "# c\n*\n!build.mjs\n!src/\n";
  assert.ok(inContext(ignore, "build.mjs"));
  assert.ok(inContext(ignore, "src/stage/stage.ts"));
  assert.not.ok(inContext(ignore, "scripts/code-cache.mjs"));
  assert.not.ok(inContext(ignore, "build.mjs.bak"));
  assert.not.ok(inContext(ignore, "srcx/a.ts"));
});

test("every file build.mjs names is in the Docker context (node_modules comes from npm ci, .build and dist are its output)", () => {
  const build = readFileSync(join(REPO, "build.mjs"), "utf8");
  const named = [...new Set([...build.matchAll(/join\(root, "([^"]+)"\)/g)].map((m) => m[1]!))];
  const inputs = named.filter((path) => !/^(node_modules|\.build|dist)(\/|$)/.test(path));
  assert.ok(inputs.includes("scripts/code-cache.mjs") && inputs.includes("src/system-exec.ts"), `read ${inputs.join(", ")}`);
  for (const path of inputs) assert.ok(existsSync(join(REPO, path)), `build.mjs names ${path}, which does not exist`);
  const dockerignore = readFileSync(join(REPO, ".dockerignore"), "utf8");
  assert.equal(inputs.filter((path) => !inContext(dockerignore, path)), []);
});

test.run();
