/*
 * Single-executable variants for the start-up benchmark, built into a temporary directory
 * with build.mjs's own steps (steps 2 and 3): a sea-config, the blob made by
 * the pinned Node 24, postject into a copy of the Node binary. The bundle is
 * the one build.mjs left in .build/bundle.cjs, the stripped Node its
 * .build/node. Every variant's file is named clankie-separate: the program
 * picks its role from basename(argv0), and hyperfine -N passes the full path.
 */
import { copyFileSync, chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { capture } from "./process.mjs";

export const FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

/*
 * useSnapshot runs the main script once at build time and needs it to name
 * the function to run at start-up (v8.startupSnapshot.setDeserializeMainFunction).
 * The bundle's last statement is main.ts's call of main(); wrapping exactly that
 * statement keeps every module-level definition in the snapshot and runs
 * main() with the real argv. If esbuild ever prints it differently, the
 * variant is reported as not built rather than guessed at.
 */
const MAIN_CALL = /try\{process\.exitCode=\w+\(process\.argv\.slice\(2\)\)\}catch\((\w+)\)\{process\.exitCode=\w+\(\1\)\}\s*$/;

export function snapshotEntry(bundle) {
  if (!MAIN_CALL.test(bundle)) return undefined;
  return bundle.replace(MAIN_CALL, (call) => `require("node:v8").startupSnapshot.setDeserializeMainFunction(()=>{${call}});\n`);
}

function buildOne({ dir, key, nodeBinary, postject, base, main, config, check = true }) {
  const out = join(dir, key);
  mkdirSync(out, { recursive: true });
  const seaConfig = { main, output: join(out, "sea-prep.blob"), disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache: false, execArgvExtension: "none", ...config };
  const configPath = join(out, "sea-config.json");
  writeFileSync(configPath, `${JSON.stringify(seaConfig, null, 2)}\n`);
  capture(nodeBinary, ["--experimental-sea-config", configPath]);
  const exe = join(out, "clankie-separate");
  copyFileSync(base, exe);
  chmodSync(exe, 0o755);
  capture(process.execPath, [postject, exe, "NODE_SEA_BLOB", seaConfig.output, "--sentinel-fuse", FUSE]);
  if (check) {
    const version = capture(exe, ["--version"]);
    if (!version.startsWith("clankie-separate ")) throw new Error(`${exe} --version printed ${JSON.stringify(version)}`);
  }
  return { key, exe, configPath, seaConfig, blobBytes: statSync(seaConfig.output).size, exeBytes: statSync(exe).size };
}

/** Builds the variants; returns them and what could not be built (with the reason). */
export function buildSeaVariants({ repo, dir, nodeBinary }) {
  const bundlePath = join(repo, ".build/bundle.cjs");
  const strippedNode = join(repo, ".build/node");
  const postject = join(repo, "node_modules/postject/dist/cli.js");
  const common = { dir, nodeBinary, postject };
  const variants = [];
  const missing = [];
  variants.push({ label: "useCodeCache false (stripped Node)", ...buildOne({ ...common, key: "codecache-off", base: strippedNode, main: bundlePath, config: { useCodeCache: false } }) });
  variants.push({ label: "useCodeCache true (stripped Node)", ...buildOne({ ...common, key: "codecache-on", base: strippedNode, main: bundlePath, config: { useCodeCache: true } }) });
  const entry = snapshotEntry(readFileSync(bundlePath, "utf8"));
  if (entry === undefined) {
    missing.push({ label: "useSnapshot true", reason: "the bundle does not end with main.ts's call of main(), so no snapshot entry could be made from it" });
  } else {
    const entryPath = join(dir, "snapshot-entry.cjs");
    writeFileSync(entryPath, entry);
    variants.push({ label: "useSnapshot true (stripped Node)", ...buildOne({ ...common, key: "snapshot", base: strippedNode, main: entryPath, config: { useSnapshot: true } }) });
  }
  const repoConfig = JSON.parse(readFileSync(join(repo, "sea-config.json"), "utf8"));
  variants.push({
    label: `useCodeCache ${Boolean(repoConfig.useCodeCache)} as in sea-config.json, unstripped Node`,
    ...buildOne({ ...common, key: "unstripped", base: nodeBinary, main: bundlePath, config: { useCodeCache: Boolean(repoConfig.useCodeCache) } }),
  });
  return { variants, missing, sizes: { unstrippedNode: statSync(nodeBinary).size, strippedNode: statSync(strippedNode).size } };
}

/**
 * A single executable whose main script is empty, from the same stripped
 * Node and the same SEA settings: the start-up no program in it can go below
 * (the agent spawn benchmark compares the shim with it). Returns the executable's path.
 */
export function buildEmptySea({ repo, dir, nodeBinary }) {
  mkdirSync(dir, { recursive: true });
  const main = join(dir, "empty.cjs");
  writeFileSync(main, "// an empty main script\n");
  const repoConfig = JSON.parse(readFileSync(join(repo, "sea-config.json"), "utf8"));
  const built = buildOne({
    dir,
    nodeBinary,
    postject: join(repo, "node_modules/postject/dist/cli.js"),
    key: "empty",
    base: join(repo, ".build/node"),
    main,
    config: { useCodeCache: Boolean(repoConfig.useCodeCache) },
    check: false,
  });
  const out = capture(built.exe, []);
  if (out !== "") throw new Error(`bench: the empty single executable printed ${JSON.stringify(out)}`);
  return built.exe;
}
