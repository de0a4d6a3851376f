/* The README's exit-code table says what --help says (src/help.ts EXIT_DESCRIPTIONS). */
import { readFileSync } from "node:fs";
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

test.run();
