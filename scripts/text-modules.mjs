// `node --import ./scripts/text-modules.mjs`: lets Node run src/ as build.mjs
// bundles it. src/**/*.pl is imported as text (a default export), as
// esbuild's text loader does for the executable; and what build.mjs defines
// (esbuild define) is made here, as a global of the same name: the seccomp
// filters (__CLANKIE_SECCOMP__, for every architecture the filter knows), the
// stage's program with every role (__CLANKIE_STAGE__) and this architecture's
// system call numbers (__CLANKIE_SYSCALLS__).
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

// The stage's program and this architecture's numbers, likewise on first use.
const lazyGlobal = (name, make) => {
  let value;
  Object.defineProperty(globalThis, name, {
    get() {
      if (value === undefined) value = make(createRequire(import.meta.url));
      return value;
    },
  });
};
lazyGlobal("__CLANKIE_STAGE__", (require) => require("../src/stage/stage-source.ts").stageSource());
lazyGlobal("__CLANKIE_SYSCALLS__", (require) => require("../src/os/syscalls.ts").syscallNumbers());
