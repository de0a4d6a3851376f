/*
 * A layout rule turned into a find(1) expression that is true exactly for
 * the entries the rule would change. The entrypoint's restart scan
 * (src/entrypoint/state-scan.ts) runs it: find lists what breaks the rules,
 * and anything listed sends the start to the safe walk.
 *
 * Mode rules are functions (src/layout/state.ts). They are not restated here:
 * an entry fits a mode rule when the rule keeps its mode as it is, and the
 * set of such modes is found by asking the function about all 4,096 values
 * of the twelve permission bits. That set is then written as find -perm
 * tests (find(1): `-perm -BITS` all of BITS set, `-perm /BITS` any set).
 */

/** The twelve permission bits of st_mode (inode(7)): set-user-ID, set-group-ID, sticky, and rwx for owner, group, other. */
const ALL_BITS = 0o7777;

const octal = (bits: number): string => bits.toString(8).padStart(4, "0");

/** The modes a rule keeps as they are. */
export function modesKept(rule: (mode: number) => number): number[] {
  const kept: number[] = [];
  for (let mode = 0; mode <= ALL_BITS; mode++) if (rule(mode) === mode) kept.push(mode);
  return kept;
}

/**
 * The bits whose value decides whether a mode is kept: a bit does not
 * matter when flipping it never moves a mode in or out of the kept set.
 */
function bitsThatMatter(kept: ReadonlySet<number>): number {
  let matter = 0;
  for (let bit = 1; bit <= ALL_BITS; bit <<= 1) {
    for (let mode = 0; mode <= ALL_BITS; mode++) {
      if (kept.has(mode) !== kept.has(mode ^ bit)) {
        matter |= bit;
        break;
      }
    }
  }
  return matter;
}

/**
 * find arguments (one parenthesised expression) true for an entry whose
 * mode `rule` would change. The kept set is the union, over the values its
 * deciding bits take in it, of "these bits set, the other deciding bits
 * clear": exact, since every other bit is free.
 */
export function modeChangedExpression(rule: (mode: number) => number): string[] {
  const kept = new Set(modesKept(rule));
  if (kept.size === 0) return ["-true"];
  const matter = bitsThatMatter(kept);
  if (matter === 0) return ["-false"]; // every mode is kept
  const values = [...new Set([...kept].map((mode) => mode & matter))].sort((a, b) => a - b);
  const alternatives = values.map((value) => {
    const terms: string[] = [];
    if (value !== 0) terms.push("-perm", `-${octal(value)}`);
    // `-perm /0` would match every file (find(1)): only name the clear bits when there are some.
    const clear = matter & ~value;
    if (clear !== 0) terms.push("!", "-perm", `/${octal(clear)}`);
    return terms;
  });
  // One alternative "no deciding bit set": its negation is a single test.
  if (alternatives.length === 1 && values[0] === 0) return ["-perm", `/${octal(matter)}`];
  return ["!", "(", ...alternatives.flatMap((terms, i) => (i === 0 ? terms : ["-o", ...terms])), ")"];
}

/** Escapes a literal path for find's -path, whose pattern is a shell glob (fnmatch(3)). */
export function literalPattern(path: string): string {
  return path.replace(/[\\*?[\]]/g, (c) => `\\${c}`);
}
