/* Mode rules (src/layout/) checked against tables of octal pairs. */
import * as assert from "uvu/assert";

export const octal = (mode: number): string => mode.toString(8).padStart(4, "0");

/** `pairs`: "FROM>TO" octal modes separated by spaces; each FROM must become TO under `rule`. */
export function assertModes(rule: (mode: number) => number, pairs: string): void {
  for (const pair of pairs.trim().split(/\s+/)) {
    const [from, to] = pair.split(">").map((text) => parseInt(text, 8)) as [number, number];
    assert.is(octal(rule(from)), octal(to), `${octal(from)} -> ${octal(to)}`);
  }
}
