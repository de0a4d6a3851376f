/*
 * docs/launch.md's Kubernetes manifest against its complete docker run
 * command, flag by flag: the same user, capabilities, NoNewPrivs, read-only
 * root, mounts (each Docker tmpfs a memory emptyDir of the same size) and
 * memory limit. The image test runs the manifest (item k8s); this checks,
 * without root or an engine, that it still says what the docker recipe says
 * and that its placeholders can be filled in.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ROOT_CAPABILITIES } from "../../../src/constants.ts";
import { REPO } from "../../helpers/paths.ts";
import { claimNames, fillManifest, manifestFromDocs, memoryEmptyDirs, memoryLimit } from "../../image/helpers/kube.ts";

const DOCS = readFileSync(join(REPO, "docs/launch.md"), "utf8");
const MANIFEST = manifestFromDocs(DOCS);
/** Docker's size suffixes (--tmpfs size=, --memory). */
const DOCKER_SUFFIX: Record<string, number> = { k: 2 ** 10, m: 2 ** 20, g: 2 ** 30 };

/** The docs' complete `docker run -d --name body-OWNER` command, one flag per element. */
function dockerCommand(): string[] {
  const block = /^```\n(docker run -d --name body-OWNER[\s\S]*?)^```$/m.exec(DOCS)?.[1];
  if (!block) throw new Error("docs/launch.md has no complete docker run command");
  return block.replace(/\\\n/g, " ").trim().split(/\s+/);
}

function flagValues(argv: readonly string[], flag: string): string[] {
  return argv.flatMap((arg, i) => (argv[i - 1] === flag ? [arg] : []));
}

function dockerBytes(size: string): number {
  const m = /^(\d+)([kmg])$/.exec(size);
  if (!m) throw new Error(`not a Docker size: ${size}`);
  return Number(m[1]) * DOCKER_SUFFIX[m[2]!]!;
}

function yamlList(key: string): string[] {
  const m = new RegExp(`^\\s+${key}: \\[([^\\]]*)\\]$`, "m").exec(MANIFEST);
  if (!m) throw new Error(`the manifest has no ${key} list`);
  return m[1]!.split(",").map((s) => JSON.parse(s.trim()) as string);
}

test("the manifest is a Pod the image test can fill in: image, service command, body name, a hostPath", () => {
  const filled = fillManifest(MANIFEST, { image: "localhost/clankie-separate:t", args: ["node", "/opt/clankie/s.mjs"], owner: "t1", hostPath: { path: "/repo", mountPath: "/opt/clankie" } });
  assert.match(filled, /^kind: Pod$/m);
  assert.match(filled, /^ {6}image: "localhost\/clankie-separate:t"$/m);
  assert.match(filled, /^ {6}args: \["node","\/opt\/clankie\/s.mjs"\]$/m);
  assert.match(filled, /^ {4}- \{ name: service, hostPath: \{ path: "\/repo", type: Directory \} \}$/m);
  assert.not.match(filled, /\bOWNER\b|IMAGE|SERVICE-COMMAND/);
  assert.equal(claimNames(filled), ["body-t1-state", "body-t1-workspace"]);
});

test("the manifest says what the docker recipe says: root, the six capabilities, NoNewPrivs, read-only root", () => {
  const argv = dockerCommand();
  assert.equal(flagValues(argv, "--user"), ["0:0"]);
  assert.match(MANIFEST, /^\s+runAsUser: 0$/m);
  assert.match(MANIFEST, /^\s+runAsGroup: 0$/m);
  assert.equal(flagValues(argv, "--cap-drop"), ["ALL"]);
  assert.equal(yamlList("drop"), ["ALL"]);
  assert.equal(flagValues(argv, "--cap-add"), [...ROOT_CAPABILITIES]);
  assert.equal(yamlList("add"), [...ROOT_CAPABILITIES]);
  assert.equal(flagValues(argv, "--security-opt"), ["no-new-privileges"]);
  assert.match(MANIFEST, /^\s+allowPrivilegeEscalation: false\b/m);
  assert.ok(argv.includes("--read-only"));
  assert.match(MANIFEST, /^\s+readOnlyRootFilesystem: true$/m);
  assert.not.match(MANIFEST, /shareProcessNamespace: true|privileged: true|fsGroup:|supplementalGroups:/);
  assert.not.ok(argv.includes("--init"), "no runtime init");
});

test("the manifest mounts what the docker recipe mounts: each tmpfs a memory emptyDir of the same size; the same memory limit", () => {
  const argv = dockerCommand();
  const tmpfs = flagValues(argv, "--tmpfs").map((spec) => {
    const [target, options] = spec.split(":") as [string, string];
    const size = /(?:^|,)size=(\w+)/.exec(options)?.[1];
    if (!size) throw new Error(`--tmpfs ${spec} has no size`);
    return { target, bytes: dockerBytes(size) };
  });
  const volumes = flagValues(argv, "-v").map((spec) => spec.split(":")[1]!);
  const mounts = new Map([...MANIFEST.matchAll(/^\s+- \{ name: ([\w-]+), mountPath: (\S+) \}$/gm)].map((m) => [m[2]!, m[1]!]));
  assert.equal([...mounts.keys()].sort(), [...tmpfs.map((t) => t.target), ...volumes].sort(), "the same mount points");
  const emptyDirs = new Map(memoryEmptyDirs(MANIFEST).map((d) => [d.name, d.sizeBytes]));
  for (const { target, bytes } of tmpfs) assert.is(emptyDirs.get(mounts.get(target)!), bytes, `${target}: a memory emptyDir of the tmpfs's size`);
  assert.equal(claimNames(MANIFEST), volumes.map((v) => `body-OWNER-${v.slice(1)}`), "each volume a claim");
  assert.equal(flagValues(argv, "--memory").map(dockerBytes), [memoryLimit(MANIFEST)]);
});

test.run();
