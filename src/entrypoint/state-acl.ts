/*
 * The /state walk of the start: one perl walk (src/layout/state-acl.ts) that
 * makes every entry what the layout (src/layout/state.ts) wants, its owner,
 * its mode and no ACL (an ACL removed before its mode is judged: the mode
 * bits are all the access there is after it). It runs at every start; on a /state that fits it
 * changes nothing. A default ACL the single-uid era's agent set on /state
 * would make every file the service writes later readable by the agent's
 * named entry, so the ACLs are read on every entry, at every start.
 */
import { lstatSync, readFileSync } from "node:fs";
import type { Identities } from "../accounts.ts";
import { STATE_DIR, EXIT } from "../constants.ts";
import type { CaptureResult } from "../exec/capture.ts";
import { DEPTH_LIMIT } from "../layout/rules.ts";
import { stateRefusals } from "../layout/state.ts";
import { parseAclWalk, startStateAclWalk } from "../layout/state-acl.ts";
import { kindOf } from "../os/file-kind.ts";
import { parseMountinfo } from "../os/mountinfo.ts";
import { osCall, OsFailure, Refusal } from "../report.ts";
import { shortened } from "./tree-walk.ts";

export interface StateWalkResult {
  checked: number;
  fixed: number;
  skipped: number;
  /** A few of the skipped entries, for the warning line. */
  skippedExamples: string[];
  /** Entries whose ACLs were removed, and a few of them. */
  stripped: number;
  examples: string[];
}

/** Pure: what the walk's end says, or the refusal it calls for. */
export function judgeWalk(result: CaptureResult, root: string = STATE_DIR): StateWalkResult {
  let walk;
  try {
    walk = parseAclWalk(result.stdout);
  } catch (error) {
    walk = undefined;
    if (result.status === 0) throw new Refusal(EXIT.osError, `the walk of ${root} printed what it should not (${(error as Error).message})`, "report this as a bug of clankie-separate");
  }
  if (walk?.changed !== undefined) {
    throw new Refusal(EXIT.dataRefused, `${walk.changed} changed while it was being taken over (another process is writing this tree)`, "stop every other container that mounts this volume, then start again");
  }
  const refused = walk?.refused;
  if (refused) throw "device" in refused ? stateRefusals.device(refused.path) : stateRefusals.foreignHardLink(refused.path, refused.links, refused.uid);
  const problem = walk?.problems[0];
  if (problem) throw new OsFailure(problem.syscall, problem.path, problem.code);
  if (result.error !== undefined || result.status !== 0 || !walk?.complete) {
    const how = result.error ?? (result.signal ? `killed by ${result.signal}` : `exit ${result.status}`);
    const said = result.stderr.toString("latin1").trim().split("\n")[0];
    throw new Refusal(EXIT.osError, `the walk of ${root} (perl) failed: ${how}${said ? `: ${said}` : ""}`, "check that /usr/bin/perl is the distribution's perl-base and start again");
  }
  const why = { mount: "another filesystem is mounted here; it was not entered", deep: `${DEPTH_LIMIT} levels deep: nothing below it was walked` };
  return {
    checked: walk.checked,
    fixed: walk.fixed,
    skipped: walk.skipped,
    skippedExamples: walk.left.map((left) => `${left.why === "deep" ? shortened(left.path) : left.path} (${why[left.why]})`),
    stripped: walk.stripped,
    examples: walk.found.map((f) => f.path),
  };
}

/** Phase: make `root` the layout's (mount points below it are left alone, named by their bytes). */
export async function walkState(ids: Identities, root: string = STATE_DIR): Promise<StateWalkResult> {
  const st = osCall("lstat", root, () => lstatSync(root));
  if (!st.isDirectory()) throw new Refusal(EXIT.dataRefused, `${root} is a ${kindOf(st)}, not a directory`, `mount a volume (a directory) at ${root}`);
  const mountinfo = osCall("read", "/proc/self/mountinfo", () => readFileSync("/proc/self/mountinfo", "latin1"));
  const points = parseMountinfo(mountinfo).map((m) => m.point).filter((point) => point.startsWith(`${root}/`));
  return judgeWalk(await startStateAclWalk("fix", root, { uid: ids.service.uid, gid: ids.service.gid }, points), root);
}
