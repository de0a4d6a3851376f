/*
 * The body's volumes, read and written on the host through the volume's own
 * directory: a digest of a tree (names, owners, modes, sizes, contents), a
 * large /state for the interrupted walk, and the /state contract of ADR 0272
 * checked entry by entry.
 */
import { createHash } from "node:crypto";
import { chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

/** sha256 over every entry below `root` (except `skip`, relative names): the judge of "nothing changed". */
export function treeDigest(root: string, skip: readonly string[] = []): string {
  const hash = createHash("sha256");
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      if (skip.includes(relative(root, full))) continue;
      const st = lstatSync(full);
      hash.update(`${relative(root, full)} ${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.size}\n`);
      if (st.isDirectory()) walk(full);
      else if (st.isFile()) hash.update(readFileSync(full));
    }
  };
  const top = lstatSync(root);
  hash.update(`. ${top.mode.toString(8)} ${top.uid}:${top.gid}\n`);
  walk(root);
  return hash.digest("hex");
}

/**
 * Adds `dirs` x `files` files under <state>/telemetry/batches, as today's body
 * writes them: owned by node, umask 022 (files 0644, directories 0755), so
 * that the root phase must change every one of them.
 */
export function seedLargeTree(state: string, dirs: number, files: number, uid: number, gid: number): string[] {
  const batches = join(state, "telemetry/batches");
  mkdirSync(batches, { recursive: true, mode: 0o755 });
  chownSync(batches, uid, gid);
  const samples: string[] = [];
  const body = '{"metric":1}\n';
  for (let d = 0; d < dirs; d++) {
    const dir = join(batches, `b${String(d).padStart(4, "0")}`);
    mkdirSync(dir, { mode: 0o755 });
    chownSync(dir, uid, gid);
    for (let f = 0; f < files; f++) {
      const file = join(dir, `e${String(f).padStart(4, "0")}.json`);
      writeFileSync(file, body, { mode: 0o644 });
      chownSync(file, uid, gid);
    }
    samples.push(join(dir, "e0000.json"));
  }
  return samples;
}

export interface LayoutCount {
  entries: number;
  wrong: string[];
}

/**
 * Checks the /state contract (src/entrypoint/state-layout.ts) on every entry:
 * the top node 0711; /state/agent the agent's, 0700, not entered; the release
 * owned by node and readable by all, writable by node only; everything else
 * owned by node with no group or other bits; no setuid or setgid bit anywhere.
 */
/**
 * `agentHomeMounted`: the launch mounted a filesystem of its own at
 * /state/agent (RECOMMENDED_FLAGS' tmpfs); the volume then holds only the
 * engine's mount point there, which the entrypoint never saw, and the home
 * itself is judged inside the running body (doctor: state.agent-home).
 */
export function checkStateLayout(state: string, ids: { service: number; agent: number }, options: { agentHomeMounted?: boolean } = {}): LayoutCount {
  const wrong: string[] = [];
  let entries = 0;
  const note = (path: string, what: string): void => {
    if (wrong.length < 20) wrong.push(`${relative(state, path) || "."}: ${what}`);
  };
  const top = lstatSync(state);
  if (top.uid !== ids.service || (top.mode & 0o7777) !== 0o711) note(state, `top ${top.uid} ${(top.mode & 0o7777).toString(8)}`);
  const agent = lstatSync(join(state, "agent"));
  if (options.agentHomeMounted) {
    if (!agent.isDirectory()) note(join(state, "agent"), "agent home mount point is not a directory");
  } else if (agent.uid !== ids.agent || agent.gid !== ids.agent || (agent.mode & 0o7777) !== 0o700) {
    note(join(state, "agent"), `agent home ${agent.uid}:${agent.gid} ${(agent.mode & 0o7777).toString(8)}`);
  }
  const walk = (dir: string, release: boolean): void => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (dir === state && name === "agent") continue;
      const inRelease = release || (dir === state && name === "install");
      const st = lstatSync(full);
      entries++;
      const mode = st.mode & 0o7777;
      if (st.uid !== ids.service || st.gid !== ids.service) note(full, `owner ${st.uid}:${st.gid}`);
      if (mode & 0o6000) note(full, `setuid/setgid ${mode.toString(8)}`);
      if (inRelease) {
        if (mode & 0o022) note(full, `release entry writable by others ${mode.toString(8)}`);
        if (!st.isSymbolicLink() && (mode & 0o044) !== 0o044) note(full, `release entry not readable by all ${mode.toString(8)}`);
      } else if (!st.isSymbolicLink() && mode & 0o077) {
        note(full, `private entry with group/other bits ${mode.toString(8)}`);
      }
      if (st.isDirectory()) walk(full, inRelease);
    }
  };
  walk(state, false);
  return { entries, wrong };
}

/** How many of these files have lost their group and other bits (the root phase reached them). */
export function countPrivate(files: readonly string[]): number {
  let count = 0;
  for (const file of files) if ((lstatSync(file).mode & 0o077) === 0) count++;
  return count;
}

/** Every regular file below `dir`. */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (path: string): void => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) out.push(full);
    }
  };
  walk(dir);
  return out;
}
