/*
 * Phase secureState: /state made service-only by the contract of
 * src/layout/state.ts (the walk: state-acl.ts), and the agent's home
 * (/state/agent) given to the agent without walking into it.
 */
import { closeSync, lstatSync, mkdirSync } from "node:fs";
import type { Identities } from "../accounts.ts";
import { AGENT_HOME, EXIT, STATE_DIR } from "../constants.ts";
import { MARKER_DIR } from "../layout/marker.ts";
import { stateModes } from "../layout/state.ts";
import { kindOf } from "../os/file-kind.ts";
import { osCall, osFailure, Refusal } from "../report.ts";
import { applyByFd, openDirectoryAt } from "./tree-walk.ts";
import { type StateWalkResult, walkState } from "./state-acl.ts";

/**
 * Makes `path` a directory owned by uid:gid with `mode` (creating it when
 * missing), through the walk's own fd helpers: an fd opened with O_NOFOLLOW
 * and checked to be the directory lstat saw. A planted symlink, file or
 * swapped entry is refused with `fix`, never followed. Returns whether
 * anything changed.
 */
function takeOverDirectory(path: string, want: { uid: number; gid: number; mode: number }, fix: string): boolean {
  try {
    mkdirSync(path, want.mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw osFailure("mkdir", path, error);
  }
  const st = osCall("lstat", path, () => lstatSync(path));
  if (!st.isDirectory()) throw new Refusal(EXIT.dataRefused, `${path} is a ${kindOf(st)}, not a directory`, fix);
  const { fd, st: opened } = openDirectoryAt(path, path, st, () => new Refusal(EXIT.dataRefused, `${path} changed while it was being taken over`, fix));
  try {
    return applyByFd(fd, opened, want.uid, want.gid, want.mode, { path });
  } finally {
    closeSync(fd);
  }
}

/**
 * Phase: make /state service-only, the agent's home the agent's, and the
 * entrypoint's records directory (once). The walk runs at every start: on
 * a /state that fits it changes nothing.
 */
export async function secureState(ids: Identities): Promise<StateWalkResult> {
  const stats = await walkState(ids);
  // The agent's home: created if missing, its top given to the agent, never walked inside (a mount of its own included).
  stats.checked++;
  const home = { uid: ids.agent.uid, gid: ids.agent.gid, mode: stateModes.agentHome() };
  if (takeOverDirectory(AGENT_HOME, home, `remove it (rm -rf ${AGENT_HOME}) and start again: it is recreated empty`)) stats.fixed++;
  // The entrypoint's records directory (src/layout/marker.ts), service-only.
  takeOverDirectory(MARKER_DIR, { uid: ids.service.uid, gid: ids.service.gid, mode: 0o700 }, `remove it (rm ${MARKER_DIR}) and start again`);
  return stats;
}
