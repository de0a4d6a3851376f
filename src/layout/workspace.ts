/*
 * The /workspace contract: the top is node:clankie-workspace,
 * every directory is group clankie-workspace with group read/write/search and
 * set-group-ID (so new entries inherit the group), every file is group
 * clankie-workspace with group read/write. Owners below the top are kept:
 * what the agent made stays the agent's. Set-user-ID and set-group-ID bits of
 * files are stripped. The entrypoint applies it (src/entrypoint/
 * workspace-layout.ts); the audit judges by it (src/self-check/workspace.ts).
 */
import type { Identities } from "../accounts.ts";
import type { Decision, EntryView } from "./rules.ts";

export const workspaceModes = {
  directory: (mode: number): number => (mode & 0o1777) | 0o2070,
  file: (mode: number): number => (mode & 0o777) | 0o060 | (mode & 0o100 ? 0o010 : 0),
  other: (mode: number): number => (mode & 0o777) | 0o060,
} as const;

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
