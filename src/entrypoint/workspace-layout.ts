/*
 * Phase shareWorkspace: /workspace given the shared group by the contract of
 * src/layout/workspace.ts. The first separated start walks the tree; a
 * marker in /state (which the agent cannot write, src/layout/marker.ts)
 * records the layout version and the volume's identity, so later starts
 * check the top only.
 */
import { closeSync, constants, fchownSync, fsyncSync, lstatSync, openSync, renameSync, writeSync } from "node:fs";
import type { Identities } from "../accounts.ts";
import { EXIT, WORKSPACE_DIR, WORKSPACE_LAYOUT_VERSION } from "../constants.ts";
import { osCall, osFailure, Refusal } from "../report.ts";
import { formatMarker, type MarkerContent, parseMarker, readMarkerText, WORKSPACE_MARKER } from "../layout/marker.ts";
import { workspaceRules } from "../layout/workspace.ts";
import { newWalkStats, walkTree, type WalkStats } from "./tree-walk.ts";

/**
 * Writes the marker atomically (write, fsync, rename), owned by the service,
 * in its service-only directory, which secureState has just taken over
 * (through a checked fd) on this start.
 */
function writeMarker(ids: Identities, marker: MarkerContent): void {
  const temporary = `${WORKSPACE_MARKER}.${process.pid}`;
  const fd = osCall("open", temporary, () => openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600));
  try {
    writeSync(fd, formatMarker(marker));
    fchownSync(fd, ids.service.uid, ids.service.gid);
    fsyncSync(fd);
  } catch (error) {
    throw osFailure("write", temporary, error);
  } finally {
    closeSync(fd);
  }
  osCall("rename", WORKSPACE_MARKER, () => renameSync(temporary, WORKSPACE_MARKER));
}

export interface WorkspaceResult {
  walked: boolean;
  stats: WalkStats;
}

/**
 * Phase: give /workspace the shared group; walk it only when the marker is
 * missing or stale. After joinWorkspaceGroup: chmod(2) keeps S_ISGID only
 * for a caller in the file's group (or with CAP_FSETID, which the launch
 * does not grant).
 */
export function shareWorkspace(ids: Identities, stateDev: number): WorkspaceResult {
  const top = osCall("lstat", WORKSPACE_DIR, () => lstatSync(WORKSPACE_DIR));
  if (!top.isDirectory()) {
    throw new Refusal(EXIT.dataRefused, `${WORKSPACE_DIR} is not a directory`, `mount a volume (a directory) at ${WORKSPACE_DIR}`);
  }
  const read = readMarkerText();
  const marker = "text" in read ? parseMarker(read.text) : undefined;
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
  writeMarker(ids, { version: WORKSPACE_LAYOUT_VERSION, dev: top.dev, ino: top.ino });
  return { walked: true, stats };
}

/**
 * Phase: root joins clankie-workspace, so that the walk's chmod(2) can set
 * S_ISGID on directories of that group (inode_init_owner/setattr_prepare:
 * the bit is cleared for a caller outside the group without CAP_FSETID).
 * The service's final groups are set by setpriv at the drop.
 */
export function joinWorkspaceGroup(ids: Identities): void {
  osCall("setgroups", String(ids.workspaceGroup.gid), () => process.setgroups!([ids.workspaceGroup.gid]));
}
