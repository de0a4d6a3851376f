/*
 * The /workspace contract (issue 3 point 5): the top is node:clankie-workspace,
 * every directory is group clankie-workspace with group read/write/search and
 * set-group-ID (so new entries inherit the group), every file is group
 * clankie-workspace with group read/write. Owners below the top are kept:
 * what the agent made stays the agent's. Set-user-ID and set-group-ID bits of
 * files are stripped.
 *
 * The first separated start walks the tree; a marker in /state (which the
 * agent cannot write) records the layout version and the volume's identity,
 * so later starts check the top only.
 */
import { closeSync, constants, fchownSync, fsyncSync, lstatSync, openSync, readFileSync, renameSync, writeSync, type Stats } from "node:fs";
import type { Identities } from "../accounts.ts";
import { EXIT, STATE_DIR, STATE_MARKER_NAME, WORKSPACE_DIR, WORKSPACE_LAYOUT_VERSION } from "../constants.ts";
import { osFailure, Refusal } from "../report.ts";
import { type Decision, type EntryView, newWalkStats, walkTree, type WalkStats } from "./tree-walk.ts";

export const workspaceModes = {
  directory: (mode: number): number => (mode & 0o1777) | 0o2070,
  file: (mode: number): number => (mode & 0o777) | 0o060 | (mode & 0o100 ? 0o010 : 0),
  other: (mode: number): number => (mode & 0o777) | 0o060,
} as const;

export const WORKSPACE_MARKER = `${STATE_DIR}/${STATE_MARKER_NAME}/workspace-layout`;

export function workspaceRules(ids: Identities, stateDev: number) {
  const group = ids.workspaceGroup.gid;
  const owners = new Set([ids.service.uid, ids.agent.uid]);
  return (entry: EntryView): Decision<null> => {
    if (entry.depth === 0) return { action: "fix", uid: ids.service.uid, gid: group, mode: workspaceModes.directory, descend: null };
    if (entry.kind === "device") return { action: "skip", reason: "device node: left alone" };
    if (entry.kind === "symlink") return { action: "prune" }; // a symlink's group and mode mean nothing
    if (entry.kind !== "directory" && entry.st.nlink > 1 && (!owners.has(entry.st.uid) || entry.st.dev === stateDev)) {
      return { action: "skip", reason: `hard link (${entry.st.nlink} names) that may lead outside /workspace: left alone` };
    }
    if (entry.kind === "directory") return { action: "fix", uid: -1, gid: group, mode: workspaceModes.directory, descend: null };
    if (entry.kind === "file") return { action: "fix", uid: -1, gid: group, mode: workspaceModes.file };
    return { action: "fix", uid: -1, gid: group, mode: workspaceModes.other };
  };
}

export interface MarkerContent {
  version: number;
  dev: number;
  ino: number;
}

export function formatMarker(marker: MarkerContent): string {
  return `version=${marker.version} dev=${marker.dev} ino=${marker.ino}\n`;
}

export function parseMarker(text: string): MarkerContent | undefined {
  const match = /^version=(\d+) dev=(\d+) ino=(\d+)\n$/.exec(text);
  if (!match) return undefined;
  return { version: Number(match[1]), dev: Number(match[2]), ino: Number(match[3]) };
}

function readMarker(): MarkerContent | undefined {
  try {
    const st = lstatSync(WORKSPACE_MARKER);
    if (!st.isFile() || st.size > 256) return undefined;
    return parseMarker(readFileSync(WORKSPACE_MARKER, "latin1"));
  } catch {
    return undefined;
  }
}

/** Writes the marker atomically (write, fsync, rename), owned by the service, in a service-only directory. */
function writeMarker(ids: Identities, marker: MarkerContent): void {
  const dir = `${STATE_DIR}/${STATE_MARKER_NAME}`;
  let dirSt: Stats;
  try {
    dirSt = lstatSync(dir);
  } catch {
    throw new Refusal(EXIT.dataRefused, `${dir} is missing after /state was secured`, "start again");
  }
  if (!dirSt.isDirectory()) throw new Refusal(EXIT.dataRefused, `${dir} is not a directory`, `remove it (rm -rf ${dir}) and start again`);
  const temporary = `${WORKSPACE_MARKER}.${process.pid}`;
  let fd: number;
  try {
    fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    throw osFailure("open", temporary, error);
  }
  try {
    writeSync(fd, formatMarker(marker));
    fchownSync(fd, ids.service.uid, ids.service.gid);
    fsyncSync(fd);
  } catch (error) {
    throw osFailure("write", temporary, error);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temporary, WORKSPACE_MARKER);
  } catch (error) {
    throw osFailure("rename", WORKSPACE_MARKER, error);
  }
}

export interface WorkspaceResult {
  walked: boolean;
  stats: WalkStats;
}

/** Phase: give /workspace the shared group; walk it only when the marker is missing or stale. */
export function shareWorkspace(ids: Identities, stateDev: number, ensureMarkerDir: () => void): WorkspaceResult {
  let top: Stats;
  try {
    top = lstatSync(WORKSPACE_DIR);
  } catch (error) {
    throw osFailure("lstat", WORKSPACE_DIR, error);
  }
  if (!top.isDirectory()) {
    throw new Refusal(EXIT.dataRefused, `${WORKSPACE_DIR} is not a directory`, `mount a volume (a directory) at ${WORKSPACE_DIR}`);
  }
  // chmod(2) clears S_ISGID unless the caller is in the file's group or holds
  // CAP_FSETID, which the launch does not grant: join the group first. The
  // final groups are set by setpriv at the drop.
  try {
    process.setgroups!([ids.workspaceGroup.gid]);
  } catch (error) {
    throw osFailure("setgroups", String(ids.workspaceGroup.gid), error);
  }
  const marker = readMarker();
  const current = marker !== undefined && marker.version === WORKSPACE_LAYOUT_VERSION && marker.dev === top.dev && marker.ino === top.ino;
  const rules = workspaceRules(ids, stateDev);
  const stats = newWalkStats();
  if (current) {
    // Check and fix the top only (depth 0: no descent).
    walkTree(WORKSPACE_DIR, (entry) => {
      const decision = rules(entry);
      return decision.action === "fix" ? { ...decision, descend: undefined } : decision;
    }, null, stats);
    return { walked: false, stats };
  }
  walkTree(WORKSPACE_DIR, rules, null, stats);
  ensureMarkerDir();
  writeMarker(ids, { version: WORKSPACE_LAYOUT_VERSION, dev: top.dev, ino: top.ino });
  return { walked: true, stats };
}
