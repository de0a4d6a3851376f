/*
 * /workspace: its top against the entrypoint's rule (workspaceRules at depth
 * 0: node:clankie-workspace, group read/write/search, set-group-ID so new
 * entries inherit the group), and the layout marker the entrypoint writes in
 * /state once it has walked the tree. The tree's modes are not judged: it
 * is the agent's to change, and the marker records that the entrypoint walked
 * it. Its directories' default ACLs are read (src/layout/state-acl.ts,
 * "defaults"): one the agent set on its own directory sets the modes of what
 * the service creates there, not the service's umask (docs/security.md).
 */
import type { Identities } from "../accounts.ts";
import { WORKSPACE_DIR, WORKSPACE_GROUP, WORKSPACE_LAYOUT_VERSION } from "../constants.ts";
import { parseMarker, WORKSPACE_MARKER } from "../layout/marker.ts";
import { workspaceRules } from "../layout/workspace.ts";
import { kindOf } from "../os/file-kind.ts";
import type { AclWalk } from "../layout/state-acl.ts";
import { bounded, cannotLook, fail, failUnlessSingle, octal, pass, plural, type Verdict, warn } from "./check.ts";
import type { Lstat, Mode } from "./fact-types.ts";

const RESTART_FIX = "restart the container (docker restart CONTAINER): the root entrypoint gives /workspace its group and walks it again when the marker is stale";
const SINGLE_UID_NOTE = "this body runs single-uid; the entrypoint applies it at the first start with the launch flags of ADR 0272";

/** A /workspace that cannot be looked at: no volume mounted there (single-uid warns). */
function unmounted(what: string, top: Lstat & { ok: false }, mode: Mode): Verdict {
  return cannotLook(what, top.error, `mount a volume at ${WORKSPACE_DIR}`, mode === "single-uid" ? "warn" : "fail");
}

/** Pure: the top of /workspace against the depth-0 rule. */
export function judgeWorkspaceTop(ids: Identities, lstat: Lstat, stateDev: number, mode: Mode): Verdict {
  if (!lstat.ok) return unmounted(WORKSPACE_DIR, lstat, mode);
  const top = lstat.value;
  const decision = workspaceRules(ids, stateDev)({ path: WORKSPACE_DIR, name: Buffer.from(WORKSPACE_DIR), kind: kindOf(top), st: top, depth: 0 });
  const current = top.mode & 0o7777;
  const found: Record<string, unknown> = { path: WORKSPACE_DIR, kind: kindOf(top), uid: top.uid, gid: top.gid, mode: octal(current) };
  if (decision.action !== "fix") return fail(`${WORKSPACE_DIR}: the entrypoint's rule does not apply`, found, RESTART_FIX);
  const want = { uid: decision.uid, gid: decision.gid, mode: octal(decision.mode ? decision.mode(current) : current) };
  found.want = want;
  const wrong: string[] = [];
  if (!top.isDirectory()) wrong.push(`it is a ${kindOf(top)}, not a directory`);
  if (top.uid !== want.uid) wrong.push(`owner ${top.uid}, want ${want.uid} (${ids.service.name})`);
  if (top.gid !== want.gid) wrong.push(`group ${top.gid}, want ${want.gid} (${WORKSPACE_GROUP})`);
  if (octal(current) !== want.mode) wrong.push(`mode ${octal(current)}, want ${want.mode} (group rwx and set-group-ID)`);
  if (wrong.length === 0) return pass(`${WORKSPACE_DIR} is ${ids.service.name}:${WORKSPACE_GROUP} ${want.mode}: shared with the agent, new entries inherit the group`, found);
  return failUnlessSingle(mode === "single-uid", `${WORKSPACE_DIR}: ${wrong.join("; ")}`, found, RESTART_FIX, SINGLE_UID_NOTE, null);
}

/** Pure: the marker's text (or why it could not be read) against the layout version and the volume's identity. */
export function judgeWorkspaceMarker(marker: { text: string } | { error: string }, lstat: Lstat, mode: Mode): Verdict {
  if (!lstat.ok) return unmounted("the layout marker", lstat, mode);
  const top = lstat.value;
  const found: Record<string, unknown> = { path: WORKSPACE_MARKER, wantVersion: WORKSPACE_LAYOUT_VERSION, workspace: { dev: top.dev, ino: top.ino } };
  const complain = (summary: string): Verdict => failUnlessSingle(mode === "single-uid", summary, found, RESTART_FIX, SINGLE_UID_NOTE, null);
  if ("error" in marker) {
    found.error = marker.error;
    return complain(`no readable layout marker: ${marker.error}`);
  }
  const parsed = parseMarker(marker.text);
  if (!parsed) {
    found.text = marker.text.slice(0, 200);
    return complain(`the layout marker is malformed`);
  }
  found.marker = parsed;
  if (parsed.version !== WORKSPACE_LAYOUT_VERSION) return complain(`layout marker version ${parsed.version}, want ${WORKSPACE_LAYOUT_VERSION}`);
  if (parsed.dev !== top.dev || parsed.ino !== top.ino) {
    return complain(`the layout marker names another volume (dev ${parsed.dev} ino ${parsed.ino}; /workspace is dev ${top.dev} ino ${top.ino})`);
  }
  return pass(`layout marker version ${parsed.version} names this /workspace volume: the entrypoint walked it`, found);
}

/** Pure: the directories below /workspace that carry a default ACL (a warning: the tree is the agent's, and so is such an ACL). */
export function judgeWorkspaceDefaults(walk: AclWalk): Verdict {
  const dirs = walk.found.filter((f) => f.default !== "").map((f) => f.path);
  const unread = walk.problems.map((p) => `${p.syscall} ${p.path}: ${p.code}`);
  const found = { root: WORKSPACE_DIR, visited: walk.visited, defaultAcls: bounded(dirs), unreadable: bounded(unread) };
  if (dirs.length > 0) {
    const shown = dirs.slice(0, 3).join("; ") + (dirs.length > 3 ? `; and ${dirs.length - 3} more` : "");
    return warn(
      `${plural(dirs.length, "directory", "directories")} below ${WORKSPACE_DIR} carr${dirs.length === 1 ? "ies" : "y"} a default ACL, which sets the modes of what the service creates there instead of its umask (0660 and 2770 do not hold there): ${shown}`,
      found,
      "where a mode must hold, have the service set it after creating the entry (fs.chmod), or write in a directory of its own; remove such an ACL with setfacl -k DIR (docs/security.md)",
    );
  }
  if (unread.length > 0) return warn(`could not read ${plural(unread.length, "directory", "directories")} below ${WORKSPACE_DIR}: ${unread.slice(0, 3).join("; ")}`, found, "run the audit as root (docker exec CONTAINER clankie-separate --self-check), which can read every entry");
  return pass(`no directory below ${WORKSPACE_DIR} carries a default ACL (${walk.visited} entries read)`, found);
}
