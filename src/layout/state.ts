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
import type { Decision, EntryView } from "./rules.ts";

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
