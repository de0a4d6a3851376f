/*
 * The entrypoint's own records, in a directory below /state that only the
 * service can read or write (so the agent cannot forge them): today the
 * /workspace layout marker, which lets later starts skip the walk of a
 * /workspace already migrated (src/entrypoint/workspace-layout.ts) and which
 * the audit reads (src/self-check/workspace.ts).
 */
import { lstatSync, readFileSync } from "node:fs";
import { STATE_DIR, STATE_MARKER_NAME } from "../constants.ts";
import { kindOf } from "../os/file-kind.ts";

/** The directory of the entrypoint's records, made (service-only, 0700) by the entrypoint's secureState phase. */
export const MARKER_DIR = `${STATE_DIR}/${STATE_MARKER_NAME}`;
export const WORKSPACE_MARKER = `${MARKER_DIR}/workspace-layout`;

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

/** The marker's text, or why it cannot be believed: not a regular file, too long, unreadable (the entrypoint then walks /workspace; the audit reports why). */
export function readMarkerText(): { text: string } | { error: string } {
  try {
    const st = lstatSync(WORKSPACE_MARKER);
    if (!st.isFile()) return { error: `${WORKSPACE_MARKER} is a ${kindOf(st)}` };
    if (st.size > 256) return { error: `${WORKSPACE_MARKER} is ${st.size} bytes` };
    return { text: readFileSync(WORKSPACE_MARKER, "latin1") };
  } catch (error) {
    return { error: `read ${WORKSPACE_MARKER}: ${(error as NodeJS.ErrnoException).code ?? String(error)}` };
  }
}
