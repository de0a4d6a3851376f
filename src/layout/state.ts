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
import type { Identities } from "../accounts.ts";
import { EXIT, STATE_AGENT_NAME, STATE_INSTALL_NAME } from "../constants.ts";
import { Refusal } from "../report.ts";
import { type Decision, DEPTH_LIMIT, type EntryView } from "./rules.ts";

export type StateZone = "top" | "private" | "release";

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

/**
 * The layout as data, which stateRules (the walk's and the audit's judge)
 * reads: the rules are stated once, here. (A read-only find(1) scan of a
 * restart, which stated them a second time as find expressions, was removed:
 * docs/architecture.md, "The restart scan, removed".)
 */
export const STATE_LAYOUT = {
  /** /state itself. */
  top: stateModes.top,
  /** The one top-level name left to someone else: the agent's home (secureState takes over its top). */
  pruned: STATE_AGENT_NAME,
  /** The release root, a top-level name: a directory there is exactly `root`, every entry in it (and a non-directory there) `below`. */
  release: { name: STATE_INSTALL_NAME, root: stateModes.releaseRoot, below: stateModes.release },
  /** Every other entry. */
  private: stateModes.private,
} as const;

/** Which part of the layout a top-level name of /state is in. */
export function topLevelZone(name: Buffer): "pruned" | "release" | "private" {
  if (name.equals(Buffer.from(STATE_LAYOUT.pruned))) return "pruned";
  if (name.equals(Buffer.from(STATE_LAYOUT.release.name))) return "release";
  return "private";
}

/** A file another user owns that has more than one name: changing it would change a file elsewhere. */
function foreignHardLink(entry: EntryView, serviceUid: number): boolean {
  return entry.kind !== "directory" && entry.st.nlink > 1 && entry.st.uid !== serviceUid;
}

export function stateRules(ids: Identities) {
  const uid = ids.service.uid;
  const gid = ids.service.gid;
  return (entry: EntryView, zone: StateZone): Decision<StateZone> => {
    if (entry.depth === 0) return { action: "fix", uid, gid, mode: STATE_LAYOUT.top, descend: "top" };
    const top = zone === "top" ? topLevelZone(entry.name) : undefined;
    // The agent's home is never walked: secureState takes over its top,
    // whatever it is (a mount point of its own included) or refuses it.
    if (top === "pruned") return { action: "prune" };
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
    // Nothing below it is walked: closed (the private zone's rule, in the release too), whatever lies below stays out of the agent's reach.
    if (entry.kind === "directory" && entry.depth >= DEPTH_LIMIT) return { action: "fix", uid, gid, mode: STATE_LAYOUT.private };
    if (top === "release") {
      if (entry.kind === "directory") return { action: "fix", uid, gid, mode: STATE_LAYOUT.release.root, descend: "release" };
      return { action: "fix", uid, gid, mode: STATE_LAYOUT.release.below };
    }
    if (zone === "release") {
      return { action: "fix", uid, gid, mode: STATE_LAYOUT.release.below, descend: entry.kind === "directory" ? "release" : undefined };
    }
    return { action: "fix", uid, gid, mode: STATE_LAYOUT.private, descend: entry.kind === "directory" ? "private" : undefined };
  };
}
