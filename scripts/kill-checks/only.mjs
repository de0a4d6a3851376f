// `node --import ./scripts/kill-checks/only.mjs FILE.test.ts` with TEST_ONLY set
// to a JSON array of test names: every uvu test whose name is not among them
// is registered as skipped, so that scripts/kill-checks.mjs runs only the tests
// named for a check. A name no test of the file carries fails the run (it went
// stale), and so does one that names a test skipped for want of root.
import { registerHooks } from "node:module";

const WRAPPER = new URL("./uvu-only.mjs", import.meta.url).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === "uvu" && context.parentURL !== WRAPPER) return { url: WRAPPER, shortCircuit: true };
    return nextResolve(specifier, context);
  },
});
