/*
 * The package's types as a service gets them: a project of its own with
 * clankie-separate in its node_modules (types from dist/lib, as the package's
 * exports name them, not src/), type-checking the sample service of README's
 * API section and test/unit/project/api-types.ts with skipLibCheck off. The
 * repository's own tsc run maps the package name to src/ (tsconfig.json
 * paths), so this is what checks the declarations the build ships.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { NODE24, REPO } from "../helpers/paths.ts";
import { SAMPLE_SERVICE } from "../helpers/sample-service.ts";

const test = suite("package-types");

test("a service's own project type-checks the sample service and the API's type test against dist/lib's declarations, no cast", () => {
  const dir = mkdtempSync(join(tmpdir(), "clankie-consumer-"));
  try {
    const modules = join(dir, "node_modules");
    mkdirSync(join(modules, "@types"), { recursive: true });
    symlinkSync(join(REPO, "node_modules/@types/node"), join(modules, "@types/node"));
    for (const name of readdirSync(join(REPO, "node_modules"))) {
      if (!name.startsWith(".") && name !== "@types") symlinkSync(join(REPO, "node_modules", name), join(modules, name));
    }
    symlinkSync(REPO, join(modules, "clankie-separate"));
    writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { target: "es2023", module: "nodenext", moduleResolution: "nodenext", strict: true, noEmit: true, skipLibCheck: false, types: ["node"] }, include: ["*.ts"] }));
    copyFileSync(join(REPO, SAMPLE_SERVICE), join(dir, "sample-service.ts"));
    copyFileSync(join(REPO, "test/unit/project/api-types.ts"), join(dir, "api-types.ts"));
    const tsc = spawnSync(NODE24, [join(REPO, "node_modules/typescript/bin/tsc"), "-p", dir, "--traceResolution"], { encoding: "utf8", cwd: dir, maxBuffer: 64 << 20 });
    const errors = tsc.stdout.split("\n").filter((line) => /error TS\d+/.test(line));
    assert.equal(errors, [], "tsc found errors");
    assert.is(tsc.status, 0, tsc.stderr);
    assert.match(tsc.stdout, /Module name 'clankie-separate\/system-exec' was successfully resolved to '[^']*\/dist\/lib\/system-exec\.d\.ts'/, "the shipped declarations, not src/");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
