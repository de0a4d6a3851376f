/*
 * The /state contract (ADR 0272, "Mechanism"):
 *   /state                node:node 0711 (traversable, not listable)
 *   /state/<everything>   owned by node, no group or other permission bits
 *   /state/install        node:node 0755: the release root, open to all
 *   /state/install/...    owned by node, writable by node only; other may
 *                         read and execute what the group or other could
 *                         already, never what only the owner could (below)
 *   /state/agent          clankie-agent:clankie-agent 0700; its contents are
 *                         the agent's and are never walked with root's
 *                         powers; it may be a mount point of its own (a
 *                         volume or tmpfs that keeps the agent's files off
 *                         the service's filesystem)
 * Set-user-ID, set-group-ID and sticky bits are stripped everywhere.
 *
 * The release rule. The agent runs the release's tools, so the release must
 * be open to it; but a release also holds files its owner made private (npm
 * writes .npmrc, with its registry token, 0600), and opening those would hand
 * the agent the secret. The group's bits are the record of what was meant to
 * be shared: a release unpacked under umask 0022 is 0755/0644, one the
 * service writes under its umask 0007 is 0770/0660, and a file made private
 * has no group or other read at all. So other gets the union of the group's
 * and other's read and execute bits, and nothing of the owner's alone:
 * 0755 and 0770 become 0755, 0660 becomes 0644, 0600 and 0700 stay as they
 * are. Only the release root itself is always 0755.
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
  releaseRoot: (): number => 0o755,
  release: (mode: number): number => {
    const shared = ((mode >> 3) | mode) & 0o005;
    return (mode & 0o700) | (shared << 3) | shared;
  },
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
    // The agent's home is never walked: prepareAgentHome takes over its top,
    // whatever it is (a mount point of its own included) or refuses it.
    if (zone === "top" && entry.name.equals(Buffer.from(STATE_AGENT_NAME))) return { action: "prune" };
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
    if (zone === "top" && entry.name.equals(Buffer.from(STATE_INSTALL_NAME))) {
      if (entry.kind === "directory") return { action: "fix", uid, gid, mode: stateModes.releaseRoot, descend: "release" };
      return { action: "fix", uid, gid, mode: stateModes.release };
    }
    if (zone === "release") {
      return { action: "fix", uid, gid, mode: stateModes.release, descend: entry.kind === "directory" ? "release" : undefined };
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
