// `node --import ./scripts/text-modules.mjs`: lets Node run src/ as build.mjs
// bundles it. src/**/*.pl is imported as text (a default export), as
// esbuild's text loader does for the executable; and the seccomp filters
// build.mjs defines (__CLANKIE_SECCOMP__, esbuild define) are assembled here,
// for every architecture the filter knows, as a global of the same name.
// For tests and benchmarks that run src/ directly; the executable carries
// both in its bundle and reads no file.
import { readFileSync } from "node:fs";
import { createRequire, registerHooks } from "node:module";
import { fileURLToPath } from "node:url";

registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith("file:") && url.endsWith(".pl")) {
      return { format: "module", source: `export default ${JSON.stringify(readFileSync(fileURLToPath(url), "utf8"))};`, shortCircuit: true };
    }
    return nextLoad(url, context);
  },
});

// Assembled on first use only: most test files never ask for a filter.
let seccomp;
Object.defineProperty(globalThis, "__CLANKIE_SECCOMP__", {
  get() {
    if (seccomp === undefined) {
      const { SECCOMP_ARCHES, seccompTable } = createRequire(import.meta.url)("../src/seccomp-filter.ts");
      seccomp = Object.assign({}, ...Object.keys(SECCOMP_ARCHES).map((arch) => seccompTable(arch)));
    }
    return seccomp;
  },
});
