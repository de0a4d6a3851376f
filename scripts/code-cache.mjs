// Run by build.mjs with the pinned Node 24.20.0 (the V8 that will use it):
//   node --hash-seed=1 scripts/code-cache.mjs SOURCE NAME OUT eager|lazy
// writes V8's code cache of SOURCE, compiled as the single executable's main
// script compiles it (vm.Script, file name NAME), to OUT.
//
// eager: every function is compiled now (--no-lazy), so the role runs no
// compiler at all; lazy: what V8 compiles by itself (the top level, and the
// pre-parse data that spares it a second look at every other function).
// --hash-seed=1 makes the cache the same bytes on every build: V8 lays out
// what it serializes in hash order, so a random seed gives a cache that
// differs from build to build. A cache records V8's flags and is refused
// when they differ from the flags it is used with (V8's flag hash): both are
// set back to their defaults before the cache is written.
//
// NAME comes as an argument of its own, never cut from SOURCE's path: the
// cache holds the script's name, and a name cut with basename() is, inside
// V8, a view into the whole path string (a sliced string, which V8 makes of
// any substring of 13 characters or more), which the cache then carries
// whole. Each cache held the checkout's absolute path, and builds of one
// commit in two directories differed (test/cli/reproducible-build.test.ts).
import { readFileSync, writeFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { Script } from "node:vm";

const [source, name, out, mode] = process.argv.slice(2);
if (mode !== "eager" && mode !== "lazy") throw new Error(`code-cache: mode ${mode} is neither eager nor lazy`);
if (mode === "eager") setFlagsFromString("--no-lazy");
const script = new Script(readFileSync(source, "utf8"), { filename: name });
setFlagsFromString("--lazy");
setFlagsFromString("--hash-seed=0");
writeFileSync(out, script.createCachedData());
