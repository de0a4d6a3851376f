// Run by build.mjs with the pinned Node 24.20.0 (the V8 that will use it):
//   node --hash-seed=1 scripts/code-cache.mjs SOURCE OUT eager|lazy
// writes V8's code cache of SOURCE, compiled as the single executable's main
// script compiles it (vm.Script, same file name), to OUT.
//
// eager: every function is compiled now (--no-lazy), so the role runs no
// compiler at all; lazy: what V8 compiles by itself (the top level, and the
// pre-parse data that spares it a second look at every other function).
// --hash-seed=1 makes the cache the same bytes on every build: V8 lays out
// what it serializes in hash order, so a random seed gives a cache that
// differs from build to build. A cache records V8's flags and is refused
// when they differ from the flags it is used with (V8's flag hash): both are
// set back to their defaults before the cache is written.
import { readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { setFlagsFromString } from "node:v8";
import { Script } from "node:vm";

const [source, out, mode] = process.argv.slice(2);
if (mode !== "eager" && mode !== "lazy") throw new Error(`code-cache: mode ${mode} is neither eager nor lazy`);
if (mode === "eager") setFlagsFromString("--no-lazy");
const script = new Script(readFileSync(source, "utf8"), { filename: basename(source) });
setFlagsFromString("--lazy");
setFlagsFromString("--hash-seed=0");
writeFileSync(out, script.createCachedData());
