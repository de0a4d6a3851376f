/*
 * Phase stripStateAcls: every POSIX ACL below /state removed, so that the
 * mode bits the walk judges are all the access there is
 * (src/layout/state-acl.ts says why and how). It runs at every start, before
 * the walk: the walk reads no ACL, so a /state that fits by its modes may
 * still hide one (a default ACL the single-uid era's agent set on /state
 * makes every file the service writes later readable by the agent's named
 * entry).
 */
import { readFileSync } from "node:fs";
import type { Identities } from "../accounts.ts";
import { STATE_DIR, EXIT } from "../constants.ts";
import type { CaptureResult } from "../exec/capture.ts";
import { parseAclWalk, startStateAclWalk } from "../layout/state-acl.ts";
import { parseMountinfo } from "../os/mountinfo.ts";
import { osCall, OsFailure, Refusal } from "../report.ts";

export interface AclResult {
  /** Entries whose ACLs were removed. */
  stripped: number;
  /** A few of them, for the summary line. */
  examples: string[];
}

/** Pure: what the walk's end says, or the refusal it calls for. */
export function judgeStrip(result: CaptureResult, root: string = STATE_DIR): AclResult {
  let walk;
  try {
    walk = parseAclWalk(result.stdout);
  } catch (error) {
    walk = undefined;
    if (result.status === 0) throw new Refusal(EXIT.osError, `the removal of ACLs under ${root} printed what it should not (${(error as Error).message})`, "report this as a bug of clankie-separate");
  }
  if (walk?.changed !== undefined) {
    throw new Refusal(EXIT.dataRefused, `${walk.changed} changed while its ACLs were being removed (another process is writing this tree)`, "stop every other container that mounts this volume, then start again");
  }
  const problem = walk?.problems[0];
  if (problem) throw new OsFailure(problem.syscall, problem.path, problem.code);
  if (result.error !== undefined || result.status !== 0 || !walk?.complete) {
    const how = result.error ?? (result.signal ? `killed by ${result.signal}` : `exit ${result.status}`);
    const said = result.stderr.toString("latin1").trim().split("\n")[0];
    throw new Refusal(EXIT.osError, `the removal of ACLs under ${root} (perl) failed: ${how}${said ? `: ${said}` : ""}`, "check that /usr/bin/perl is the distribution's perl-base and start again");
  }
  return { stripped: walk.stripped, examples: walk.found.map((f) => f.path) };
}

/** Phase: remove every ACL below `root` (read-only where there is none); mount points below it are left alone, named by their bytes. */
export async function stripStateAcls(ids: Identities, root: string = STATE_DIR): Promise<AclResult> {
  const mountinfo = osCall("read", "/proc/self/mountinfo", () => readFileSync("/proc/self/mountinfo", "latin1"));
  const points = parseMountinfo(mountinfo).map((m) => m.point).filter((point) => point.startsWith(`${root}/`));
  return judgeStrip(await startStateAclWalk("strip", root, ids.service.uid, points), root);
}
