/*
 * Single-executable variants for the start-up benchmark, built into a temporary directory
 * with build.mjs's own steps (steps 2 and 3): a sea-config, the blob made by
 * the pinned Node 24, postject into a copy of the Node binary. The bundle is
 * the one build.mjs left in .build/bundle.cjs, the stripped Node its
 * .build/node, their settings sea-config.json's but for the one each varies.
 * Every variant's file is named clankie-separate (or clankie-agent-exec): the
 * program picks its role from basename(argv0), and hyperfine -N passes the full path.
 */
import { copyFileSync, chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { capture } from "./process.mjs";

export const FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

/** sea-config.json as committed, with its paths made absolute (the variants are built elsewhere). */
export function repoSeaConfig(repo) {
  const config = JSON.parse(readFileSync(join(repo, "sea-config.json"), "utf8"));
  return { ...config, main: join(repo, config.main), assets: Object.fromEntries(Object.entries(config.assets ?? {}).map(([key, path]) => [key, join(repo, path)])) };
}

function buildOne({ repo, dir, key, nodeBinary, postject, base, name = "clankie-separate", config, check = true }) {
  const out = join(dir, key);
  mkdirSync(out, { recursive: true });
  const seaConfig = { ...repoSeaConfig(repo), output: join(out, "sea-prep.blob"), ...config };
  const configPath = join(out, "sea-config.json");
  writeFileSync(configPath, `${JSON.stringify(seaConfig, null, 2)}\n`);
  capture(nodeBinary, ["--experimental-sea-config", configPath]);
  const exe = join(out, name);
  copyFileSync(base, exe);
  chmodSync(exe, 0o755);
  capture(process.execPath, [postject, exe, "NODE_SEA_BLOB", seaConfig.output, "--sentinel-fuse", FUSE]);
  if (check) {
    const version = capture(exe, ["--version"]);
    if (!version.startsWith(`${name} `)) throw new Error(`${exe} --version printed ${JSON.stringify(version)}`);
  }
  return { key, exe, configPath, seaConfig, blobBytes: statSync(seaConfig.output).size, exeBytes: statSync(exe).size };
}

/** Start-up flags of sea-config.json beyond the one that keeps OpenSSL from reading a config file. */
const START_FLAGS = ["--disable-sigusr1", "--v8-pool-size=1"];

/** Builds the variants; returns them and what could not be built (with the reason). */
export function buildSeaVariants({ repo, dir, nodeBinary }) {
  const strippedNode = join(repo, ".build/node");
  const common = { repo, dir, nodeBinary, postject: join(repo, "node_modules/postject/dist/cli.js") };
  const repoConfig = repoSeaConfig(repo);
  const variants = [
    { label: "sea-config.json as committed (stripped Node)", ...buildOne({ ...common, key: "as-built", base: strippedNode, config: {} }) },
    {
      label: `without ${START_FLAGS.join(" ")}`,
      ...buildOne({ ...common, key: "no-start-flags", base: strippedNode, config: { execArgv: repoConfig.execArgv.filter((flag) => !START_FLAGS.includes(flag)) } }),
    },
    { label: "Node's own useCodeCache on top (not reproducible: its cache differs per build)", ...buildOne({ ...common, key: "node-code-cache", base: strippedNode, config: { useCodeCache: true } }) },
    { label: "sea-config.json as committed, unstripped Node", ...buildOne({ ...common, key: "unstripped", base: nodeBinary, config: {} }) },
  ];
  return { variants, missing: [], sizes: { unstrippedNode: statSync(nodeBinary).size, strippedNode: statSync(strippedNode).size } };
}

/**
 * The shim as it was before it had a bundle of its own: a single executable
 * whose main script holds every role's code (the four bundles build.mjs
 * makes, compiled at start-up, the shim's run), with sea-config.json's
 * flags. Named clankie-agent-exec.
 */
export function buildOneBundleShim({ repo, dir, nodeBinary }) {
  mkdirSync(dir, { recursive: true });
  const main = join(dir, "every-role.cjs");
  const bundle = (name) => readFileSync(join(repo, ".build", `${name}.cjs`), "utf8");
  // The spawner's bundle (clankie-agent-exec.cjs) runs only --spawner; a command line after -- is the private-job bundle's (build.mjs), so that one is called.
  writeFileSync(main, `${bundle("clankie-separate")};\n${bundle("clankie-self-check")};\n${bundle("clankie-agent-exec")};\n(${bundle("clankie-private-job")})(require, module, exports, __filename, __dirname);\n`);
  return buildOne({
    repo,
    dir,
    nodeBinary,
    postject: join(repo, "node_modules/postject/dist/cli.js"),
    key: "one-bundle",
    name: "clankie-agent-exec",
    base: join(repo, ".build/node"),
    config: { main },
    // Its --version is the audit bundle's, which the main script routes and this variant has no router for: the spawn run itself shows it works (hyperfine stops on a failing command).
    check: false,
  }).exe;
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
  const built = buildOne({
    repo,
    dir,
    nodeBinary,
    postject: join(repo, "node_modules/postject/dist/cli.js"),
    key: "empty",
    base: join(repo, ".build/node"),
    config: { main, assets: {} },
    check: false,
  });
  const out = capture(built.exe, []);
  if (out !== "") throw new Error(`bench: the empty single executable printed ${JSON.stringify(out)}`);
  return built.exe;
}
