// The text of a Perl program as the executable carries it: without its
// full-line comments and blank lines. perl compiles the stage on every agent
// spawn and every drop to the service (perl -e), and reading the comments is
// part of that: about 1 ms of CPU for the stage's 17 KB (docs/benchmarks.md,
// "Agent spawn"). Only whole lines go: a `#` after code, or in a string or a
// pattern, stays as it is, and the programs hold no here-document or POD,
// whose lines could start with `#`. The source files keep their comments.
// Used by build.mjs (esbuild's loader for .pl) and scripts/text-modules.mjs
// (tests and benchmarks), so both run the same text.
export function compactPerl(text) {
  if (/^(=[a-z]|__END__|__DATA__)|<<["'~A-Z_]/m.test(text)) throw new Error("compactPerl: POD, __END__ or a here-document: a whole-line comment cannot be told apart");
  return text
    .split("\n")
    .filter((line) => !/^\s*(#|$)/.test(line))
    .join("\n");
}
