/*
 * Tests that need root (namespaces, setpriv, chown) or a Docker engine.
 * Without root they are skipped loudly and counted as skipped, never passed.
 */
import type { Test } from "uvu";

export const IS_ROOT = process.geteuid?.() === 0;

export function rootTest<T>(suite: Test<T>, name: string, fn: Parameters<Test<T>>[1]): void {
  if (IS_ROOT) {
    suite(name, fn);
  } else {
    process.stderr.write(`SKIPPED (needs root): ${name}\n`);
    suite.skip(name, fn);
  }
}
