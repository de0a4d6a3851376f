// uvu with only the tests TEST_ONLY names (see only.mjs).
import * as uvu from "uvu";

const only = JSON.parse(process.env.TEST_ONLY ?? "[]");
const ran = new Set();

function filtered(test) {
  return new Proxy(test, {
    apply(target, self, [name, fn]) {
      if (!only.includes(name)) return target.skip(name, fn);
      ran.add(name);
      return target(name, fn);
    },
  });
}

process.on("exit", () => {
  const missing = only.filter((name) => !ran.has(name));
  if (missing.length > 0) {
    process.stderr.write(`test-only: no test of this file runs under the name ${missing.map((n) => JSON.stringify(n)).join(", ")}\n`);
    process.exitCode = 1;
  }
});

export const suite = (...args) => filtered(uvu.suite(...args));
export const test = filtered(uvu.test);
export const exec = uvu.exec;
