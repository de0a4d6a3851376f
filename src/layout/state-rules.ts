/*
 * /state's rules as the audit judges by them (src/self-check/state.ts): each
 * entry's owner and mode by src/layout/state.ts's layout, and the entries
 * refused. The start applies the same layout in its perl walk
 * (src/perl/state-acl.pl), which the start's bundle carries instead of these
 * rules; test/unit/layout/state-acl.test.ts holds the two to the same modes.
 */
import type { Identities } from "../accounts.ts";
import { type Decision, DEPTH_LIMIT, type EntryView } from "./rules.ts";
import { STATE_LAYOUT, stateRefusals, type StateZone } from "./state.ts";

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
    if (entry.kind === "device") throw stateRefusals.device(entry.path);
    if (foreignHardLink(entry, uid)) throw stateRefusals.foreignHardLink(entry.path, entry.st.nlink, entry.st.uid);
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
