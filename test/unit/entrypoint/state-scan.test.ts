/*
 * The restart scan (find, src/entrypoint/state-scan.ts) and the walk
 * (tree-walk.ts with stateRules) are two readers of one statement of the
 * rules (STATE_LAYOUT). These tests prove they agree: on a tree that fits,
 * the scan lists nothing and the walk changes nothing; with one deviation of
 * each kind, the scan lists exactly that entry and the walk changes it,
 * leaves it alone with a warning, or refuses the start. And on every mode of
 * the twelve permission bits, for each kind of entry, in each zone, what the
 * scan lists is exactly what the walk then changes.
 *
 * Real find, real chown/mknod (root); the scan is run to completion here
 * (the start stops at its first byte). Mount points need a mount namespace:
 * test/sandbox/entrypoint.test.ts covers them.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { TOOLS } from "../../../src/constants.ts";
import { judgeCapture, scanJobs, scanState } from "../../../src/entrypoint/state-scan.ts";
import { startCapture } from "../../../src/exec/capture.ts";
import { newWalkStats, walkTree } from "../../../src/entrypoint/tree-walk.ts";
import { modeChangedExpression, modesKept } from "../../../src/layout/find-expression.ts";
import { STATE_LAYOUT, stateRules, type StateZone } from "../../../src/layout/state.ts";
import { Refusal } from "../../../src/report.ts";
import { rootTest } from "../../helpers/privilege.ts";
import { imageIdentities } from "../../helpers/identities.ts";

const test = suite("state-scan");
const ids = imageIdentities();
const NODE = ids.service.uid;
const AGENT = ids.agent.uid;

/** Every entry below `root` (agent's home excluded, as both leave it), with owner and mode. */
function snapshot(root: string): Map<string, string> {
  const seen = new Map<string, string>();
  const visit = (dir: Buffer): void => {
    for (const name of readdirSync(dir, { encoding: "buffer" })) {
      const path = Buffer.concat([dir, Buffer.from("/"), name]);
      if (path.toString("latin1") === `${root}/${STATE_LAYOUT.pruned}`) continue;
      const st = lstatSync(path);
      seen.set(path.toString("latin1"), `${st.uid}:${st.gid}:${(st.mode & 0o7777).toString(8)}`);
      if (st.isDirectory()) visit(path);
    }
  };
  visit(Buffer.from(root));
  return seen;
}

/** What the scan lists, run to completion: paths as latin1 strings (bytes kept). */
function listed(root: string): string[] {
  const out: string[] = [];
  for (const job of scanJobs(ids, root)) {
    const run = spawnSync(TOOLS.find, job.args, { input: job.input, env: {}, cwd: "/", maxBuffer: 64 << 20 });
    assert.is(run.stderr.toString(), "", "find said nothing on stderr");
    assert.is(run.status, 0);
    out.push(...run.stdout.toString("latin1").split("\0").filter((p) => p !== ""));
  }
  return out.sort();
}

/** What the walk did: the entries it changed, the ones it left alone with a warning, or its refusal. */
function walked(root: string): { changed: string[]; skipped: number; refused?: string } {
  const before = snapshot(root);
  const stats = newWalkStats();
  let refused: string | undefined;
  try {
    walkTree(root, stateRules(ids), "top" as StateZone, stats);
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    refused = error.message;
  }
  const after = snapshot(root);
  const changed = [...before].filter(([path, was]) => after.get(path) !== was).map(([path]) => path).sort();
  return { changed, skipped: stats.skipped, refused };
}

/** A /state that fits: top 0711, a private tree, a release, the agent's home (whose inside nobody judges). */
function fittingState(): string {
  const root = mkdtempSync("/tmp/clankie-scan-");
  const dir = (path: string, mode: number, uid = NODE): void => {
    mkdirSync(join(root, path));
    chmodSync(join(root, path), mode);
    chownSync(join(root, path), uid, uid);
  };
  const file = (path: string, mode: number, uid = NODE): void => {
    writeFileSync(join(root, path), "x");
    chmodSync(join(root, path), mode);
    chownSync(join(root, path), uid, uid);
  };
  chmodSync(root, 0o711);
  chownSync(root, NODE, NODE);
  dir("data", 0o700);
  dir("data/sub", 0o500);
  file("data/sub/f", 0o600);
  file("top-file", 0o400);
  symlinkSync("/etc/shadow", join(root, "data/link"));
  spawnSync("chown", ["-h", `${NODE}:${NODE}`, join(root, "data/link")]);
  dir("install", 0o755);
  dir("install/bin", 0o755);
  file("install/bin/tool", 0o755);
  file("install/.npmrc", 0o600);
  dir("install/private", 0o700);
  file("install/readme", 0o644);
  dir("agent", 0o700, AGENT);
  file("agent/anything", 0o666, AGENT);
  return root;
}

function withState(fn: (root: string) => void | Promise<void>): () => Promise<void> {
  return async () => {
    const root = fittingState();
    try {
      await fn(root);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  };
}

rootTest(test, "a /state that fits: the scan lists nothing, says it fits, and the walk changes nothing", withState(async (root) => {
  assert.equal(listed(root), []);
  assert.equal(await scanState(ids, root), { fits: true });
  assert.equal(walked(root), { changed: [], skipped: 0, refused: undefined });
}));

/** One deviation each: what to do to the fitting tree, the entry the scan must list, and what the walk must do. */
const DEVIATIONS: [string, (root: string) => void, string, "changed" | "refused"][] = [
  ["owner (a private file root's)", (r) => chownSync(join(r, "data/sub/f"), 0, NODE), "data/sub/f", "changed"],
  ["group (a private directory)", (r) => chownSync(join(r, "data/sub"), NODE, 0), "data/sub", "changed"],
  ["group read on a private file", (r) => chmodSync(join(r, "data/sub/f"), 0o640), "data/sub/f", "changed"],
  ["other execute on a private directory", (r) => chmodSync(join(r, "data"), 0o701), "data", "changed"],
  ["set-user-ID on a private file", (r) => chmodSync(join(r, "top-file"), 0o4400), "top-file", "changed"],
  ["set-group-ID on a release directory", (r) => chmodSync(join(r, "install/bin"), 0o2755), "install/bin", "changed"],
  ["sticky bit on a private directory", (r) => chmodSync(join(r, "data/sub"), 0o1500), "data/sub", "changed"],
  ["group write in the release", (r) => chmodSync(join(r, "install/readme"), 0o664), "install/readme", "changed"],
  ["group read without other read in the release", (r) => chmodSync(join(r, "install/readme"), 0o640), "install/readme", "changed"],
  ["the release root not 0755", (r) => chmodSync(join(r, "install"), 0o711), "install", "changed"],
  ["the release root a file of a release mode", (r) => {
    rmSync(join(r, "install"), { recursive: true });
    writeFileSync(join(r, "install"), "x", { mode: 0o660 });
    chmodSync(join(r, "install"), 0o660);
    chownSync(join(r, "install"), NODE, NODE);
  }, "install", "changed"],
  ["a symlink's owner", (r) => spawnSync("chown", ["-h", "0:0", join(r, "data/link")]), "data/link", "changed"],
  ["a FIFO with group bits", (r) => {
    spawnSync("mkfifo", ["-m", "0660", join(r, "data/fifo")]);
    chownSync(join(r, "data/fifo"), NODE, NODE);
  }, "data/fifo", "changed"],
  ["a device node (even node's, 0600)", (r) => {
    spawnSync("mknod", ["-m", "0600", join(r, "data/null"), "c", "1", "3"]);
    chownSync(join(r, "data/null"), NODE, NODE);
  }, "data/null", "refused"],
  ["a hard link to another user's file (two names)", (r) => {
    writeFileSync(join(r, "data/foreign"), "x", { mode: 0o600 });
    chmodSync(join(r, "data/foreign"), 0o600);
    chownSync(join(r, "data/foreign"), AGENT, AGENT);
    linkSync(join(r, "data/foreign"), join(r, "data/sub/foreign-link"));
  }, "data/foreign data/sub/foreign-link", "refused"],
  ["a name with a newline and bytes that are not UTF-8", (r) => {
    const name = Buffer.concat([Buffer.from(join(r, "data/odd\nname-")), Buffer.from([0xff, 0xfe])]);
    writeFileSync(name, "x", { mode: 0o644 });
    chmodSync(name, 0o644);
    chownSync(name, NODE, NODE);
  }, "data/odd\nname-\xff\xfe", "changed"],
  ["a deviation 300 levels down", (r) => {
    let path = join(r, "data");
    for (let i = 0; i < 300; i++) {
      path = join(path, "d");
      mkdirSync(path, 0o700);
      chownSync(path, NODE, NODE);
    }
    writeFileSync(join(path, "deep"), "x", { mode: 0o666 });
    chmodSync(join(path, "deep"), 0o666);
    chownSync(join(path, "deep"), NODE, NODE);
  }, `data/${"d/".repeat(300)}deep`, "changed"],
];

for (const [what, deviate, entry, outcome] of DEVIATIONS) {
  rootTest(test, `one deviation, ${what}: the scan lists exactly it and the walk ${outcome === "changed" ? "changes it" : "refuses the start"}`, withState(async (root) => {
    deviate(root);
    const expected = entry.split(" ").map((e) => `${root}/${e}`).sort();
    // A hard link to another user's file: both names are listed (both are that user's).
    assert.equal(listed(root), expected);
    const verdict = await scanState(ids, root);
    assert.is(verdict.fits, false);
    const walk = walked(root);
    if (outcome === "changed") {
      assert.equal(walk.changed, expected, "the walk changed exactly what the scan listed");
      assert.is(walk.refused, undefined);
    } else {
      assert.ok(walk.refused, "the walk refused the start");
    }
  }));
}

rootTest(test, "a socket with other bits and a hard link of node's own (two names, fits): only the socket is listed and changed", withState(async (root) => {
  const path = join(root, "data/sock");
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(path, resolve));
  try {
    chmodSync(path, 0o755);
    chownSync(path, NODE, NODE);
    linkSync(join(root, "data/sub/f"), join(root, "data/f-again"));
    assert.equal(listed(root), [path]);
    assert.equal(walked(root).changed, [path]);
  } finally {
    server.close();
  }
}));

rootTest(test, "the agent's home is not scanned: whatever is inside, the scan lists nothing", withState(async (root) => {
  chmodSync(join(root, "agent/anything"), 0o4777);
  mkdirSync(join(root, "agent/dir"), 0o777);
  assert.equal(listed(root), []);
  assert.equal(await scanState(ids, root), { fits: true });
}));

rootTest(test, "/state itself not 0711: the start walks without scanning", withState(async (root) => {
  chmodSync(root, 0o755);
  assert.equal(await scanState(ids, root), { fits: false, reason: `${root} itself does not fit` });
}));

/** A program run the way the scan runs find (startCapture, maxBytes 0), judged the way the scan judges find. */
async function judged(command: string, args: string[], input?: Buffer): Promise<string | undefined> {
  return judgeCapture(await startCapture({ command, args, env: { LC_ALL: "C" }, input, maxBytes: 0, timeoutMs: 10_000 }));
}

rootTest(test, "a scanner that fails, complains, is killed or lists anything means the walk; only silence and status 0 mean it fits", withState(async (root) => {
  assert.is(await judged("/bin/true", []), undefined, "control: silent, status 0");
  assert.is(await judged("/bin/false", []), "the scan ended with status 1");
  assert.is(await judged("/bin/sh", ["-c", "kill -9 $$"]), "the scan ended with SIGKILL");
  assert.is(await judged("/bin/sh", ["-c", "echo listed"]), "the scan listed an entry to change or reported a problem");
  assert.is(await judged("/bin/sh", ["-c", "echo warning >&2"]), "the scan listed an entry to change or reported a problem");
  // find itself, on a starting point removed after the top was read: "No such file or directory" on stderr.
  const gone = join(root, "gone");
  mkdirSync(gone, 0o700);
  chownSync(gone, NODE, NODE);
  const [job] = scanJobs(ids, root, 1);
  rmSync(gone, { recursive: true });
  assert.is(await judged(TOOLS.find, job!.args, job!.input), "the scan listed an entry to change or reported a problem");
  // The same job on the tree as it was read: silent.
  mkdirSync(gone, 0o700);
  chownSync(gone, NODE, NODE);
  assert.is(await judged(TOOLS.find, job!.args, job!.input), undefined);
}));

/*
 * Every mode of the twelve permission bits, as a file, a directory and a
 * FIFO, in the private zone and below the release root: the scan lists
 * exactly the entries the walk then changes. This is the proof that the
 * generated -perm tests and the rule functions agree everywhere, not only on
 * the cases above.
 */
rootTest(test, "every mode, every kind, both zones: the scan lists exactly what the walk changes", withState((root) => {
  for (const zone of ["data", "install"]) {
    for (const kind of ["file", "dir", "fifo"]) {
      const dir = join(root, zone, `all-${kind}`);
      mkdirSync(dir);
      chmodSync(dir, zone === "data" ? 0o700 : 0o755);
      chownSync(dir, NODE, NODE);
      const paths = Array.from({ length: 0o10000 }, (_, mode) => join(dir, mode.toString(8)));
      // One mkfifo for all 4,096 (Node has no mkfifo(3)).
      if (kind === "fifo") assert.is(spawnSync("mkfifo", paths).status, 0);
      paths.forEach((path, mode) => {
        if (kind === "file") writeFileSync(path, "");
        else if (kind === "dir") mkdirSync(path);
        chownSync(path, NODE, NODE);
        chmodSync(path, mode);
      });
    }
  }
  const list = listed(root);
  const walk = walked(root);
  assert.is(walk.refused, undefined);
  assert.ok(list.length > 3 * 4096, `the scan listed ${list.length}`);
  assert.equal(list, walk.changed);
}));

test("the generated -perm tests: private keeps only owner bits, the release root is exactly 0755", () => {
  assert.equal(modeChangedExpression(STATE_LAYOUT.private), ["-perm", "/7077"]);
  assert.equal(modeChangedExpression(STATE_LAYOUT.release.root), ["!", "(", "-perm", "-0755", "!", "-perm", "/7022", ")"]);
  assert.is(modesKept(STATE_LAYOUT.private).length, 8);
  assert.is(modesKept(STATE_LAYOUT.release.below).length, 32);
});

test.run();
