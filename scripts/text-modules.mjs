// `node --import ./scripts/text-modules.mjs`: lets Node import src/**/*.pl as
// text (a default export), as esbuild's text loader does for the executable.
// For tests and benchmarks that run src/ directly; the executable carries the
// text in its bundle and reads no file.
import { readFileSync } from "node:fs";
import { registerHooks } from "node:module";
import { fileURLToPath } from "node:url";

registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith("file:") && url.endsWith(".pl")) {
      return { format: "module", source: `export default ${JSON.stringify(readFileSync(fileURLToPath(url), "utf8"))};`, shortCircuit: true };
    }
    return nextLoad(url, context);
  },
});
