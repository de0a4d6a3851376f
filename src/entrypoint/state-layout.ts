/*
 * The /state contract (ADR 0272, "Mechanism"; issue 3 point 4):
 *   /state                node:node 0711 (traversable, not listable)
 *   /state/<everything>   owned by node, no group or other permission bits
 *   /state/install/...    owned by node, readable and traversable by all,
 *                         writable by node only (the agent may run the
 *                         release's tools, not change them)
 *   /state/agent          clankie-agent:clankie-agent 0700; its contents are
 *                         the agent's and are never walked with root's powers
 * Set-user-ID and set-group-ID bits are stripped everywhere.
 */
import { closeSync, constants, fchmodSync, fchownSync, fstatSync, lstatSync, mkdirSync, openSync } from "node:fs";
import type { Identities } from "../accounts.ts";
import { EXIT, STATE_AGENT_NAME, STATE_DIR, STATE_INSTALL_NAME, STATE_MARKER_NAME } from "../constants.ts";
import { osFailure, Refusal } from "../report.ts";
import { type Decision, type EntryView, kindOf, newWalkStats, walkTree, type WalkStats } from "./tree-walk.ts";

type StateZone = "top" | "private" | "release";

/** Mode rules, pure (unit-tested). */
export const stateModes = {
  top: (): number => 0o711,
  private: (mode: number): number => mode & 0o700,
  releaseDirectory: (): number => 0o755,
  releaseFile: (mode: number): number => (mode & 0o700) | 0o044 | (mode & 0o100 ? 0o011 : 0),
  agentHome: (): number => 0o700,
} as const;

/** A file another user owns that has more than one name: changing it would change a file elsewhere. */
function foreignHardLink(entry: EntryView, serviceUid: number): boolean {
  return entry.kind !== "directory" && entry.st.nlink > 1 && entry.st.uid !== serviceUid;
}

export function stateRules(ids: Identities) {
  const uid = ids.service.uid;
  const gid = ids.service.gid;
  return (entry: EntryView, zone: StateZone): Decision<StateZone> => {
    if (entry.depth === 0) return { action: "fix", uid, gid, mode: stateModes.top, descend: "top" };
    if (entry.kind === "device") {
      throw new Refusal(EXIT.dataRefused, `${entry.path} is a device node`, `remove it (rm ${JSON.stringify(entry.path)}) and start again`);
    }
    if (foreignHardLink(entry, uid)) {
      throw new Refusal(
        EXIT.dataRefused,
        `${entry.path} is a hard link (${entry.st.nlink} names) to a file owned by uid ${entry.st.uid}; taking it over would change that file everywhere`,
        `remove it (rm ${JSON.stringify(entry.path)}) and start again`,
      );
    }
    if (zone === "top" && entry.name.equals(Buffer.from(STATE_AGENT_NAME))) return { action: "prune" };
    const release = zone === "release" || (zone === "top" && entry.name.equals(Buffer.from(STATE_INSTALL_NAME)));
    if (release) {
      if (entry.kind === "directory") return { action: "fix", uid, gid, mode: stateModes.releaseDirectory, descend: "release" };
      return { action: "fix", uid, gid, mode: stateModes.releaseFile };
    }
    return { action: "fix", uid, gid, mode: stateModes.private, descend: entry.kind === "directory" ? "private" : undefined };
  };
}

/** Creates /state/agent if missing and gives its top to the agent; never walks inside. */
export function prepareAgentHome(ids: Identities, stats: WalkStats): void {
  const path = `${STATE_DIR}/${STATE_AGENT_NAME}`;
  const fix = `remove it (rm -rf ${path}) and start again: it is recreated empty`;
  let st;
  try {
    st = lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw osFailure("lstat", path, error);
    try {
      mkdirSync(path, 0o700);
    } catch (mkdirError) {
      throw osFailure("mkdir", path, mkdirError);
    }
    st = lstatSync(path);
  }
  stats.checked++;
  if (!st.isDirectory()) throw new Refusal(EXIT.dataRefused, `${path} is a ${kindOf(st)}, not a directory`, fix);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    throw osFailure("open", path, error);
  }
  try {
    const opened = fstatSync(fd);
    if (opened.ino !== st.ino || opened.dev !== st.dev) throw new Refusal(EXIT.dataRefused, `${path} changed while it was being taken over`, fix);
    let changed = false;
    if (opened.uid !== ids.agent.uid || opened.gid !== ids.agent.gid) {
      fchownSync(fd, ids.agent.uid, ids.agent.gid);
      changed = true;
    }
    if ((opened.mode & 0o7777) !== stateModes.agentHome()) {
      fchmodSync(fd, stateModes.agentHome());
      changed = true;
    }
    if (changed) stats.fixed++;
  } catch (error) {
    if (error instanceof Refusal) throw error;
    throw osFailure("fchown", path, error);
  } finally {
    closeSync(fd);
  }
}

/** Creates /state/.clankie-separate (service-only) for the entrypoint's own records. */
export function ensureMarkerDirectory(ids: Identities): void {
  const path = `${STATE_DIR}/${STATE_MARKER_NAME}`;
  try {
    mkdirSync(path, 0o700);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw osFailure("mkdir", path, error);
  }
  const st = lstatSync(path);
  if (!st.isDirectory()) throw new Refusal(EXIT.dataRefused, `${path} is a ${kindOf(st)}, not a directory`, `remove it (rm ${path}) and start again`);
  const fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    fchownSync(fd, ids.service.uid, ids.service.gid);
    fchmodSync(fd, 0o700);
  } catch (error) {
    throw osFailure("fchown", path, error);
  } finally {
    closeSync(fd);
  }
}

/** Phase: make /state service-only. */
export function secureState(ids: Identities): WalkStats {
  const stats = newWalkStats();
  walkTree(STATE_DIR, stateRules(ids), "top" as StateZone, stats);
  prepareAgentHome(ids, stats);
  return stats;
}
