/* The README's exit-code table says what --help says (src/help.ts EXIT_DESCRIPTIONS); docs/architecture.md names every file of src/. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { EXIT_DESCRIPTIONS } from "../../../src/help.ts";
import { REPO } from "../../helpers/paths.ts";

test("README's exit codes are the executable's, word for word (backticks aside)", () => {
  const readme = readFileSync(join(REPO, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Exit codes"));
  const rows = [...section.matchAll(/^\| (\d+) \| (.*) \|$/gm)].map((m) => [Number(m[1]), m[2]!.replaceAll("`", "")] as const);
  assert.equal(rows, EXIT_DESCRIPTIONS.map(([code, text]) => [code, text] as const));
});

test("docs/architecture.md names every file of src/, in the block of its directory; README leaves the layout to it", () => {
  const architecture = readFileSync(join(REPO, "docs/architecture.md"), "utf8");
  const files = readdirSync(join(REPO, "src"), { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
  assert.ok(files.length > 50, `read ${files.length} files`);
  const unnamed = files
    .map((entry) => ({ dir: entry.parentPath.slice(join(REPO, "src").length + 1), name: entry.name }))
    .filter(({ dir, name }) => {
      if (dir === "") return !architecture.includes(`src/${name}`);
      const block = architecture.indexOf(`src/${dir}/`);
      const next = architecture.slice(block + 1).search(/\n(?:\w+)? +src\//);
      return block < 0 || !architecture.slice(block, next < 0 ? undefined : block + 1 + next).includes(name);
    });
  assert.equal(unnamed, []);
  assert.not.match(readFileSync(join(REPO, "README.md"), "utf8"), /^## Layout/m);
});

test.run();
