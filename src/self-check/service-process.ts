/*
 * The judged process: its ids, every capability set decoded to names, and
 * NoNewPrivs, each against what the mode requires. Pure.
 *
 *   separated (and misconfigured, which means to be):
 *     uid and gid of node in all four slots, node's groups (with
 *     clankie-workspace), no capability in CapInh, CapPrm, CapEff, CapAmb
 *     or CapBnd (beyond ADR 0272: the spawner holds SETUID and SETGID,
 *     processes.spawner), NoNewPrivs 1 (the verification stage of the
 *     entrypoint checked the same before the service ran)
 *   single-uid (today's launch, --user node --cap-drop ALL):
 *     not root, no capability held; an empty bounding set and NoNewPrivs
 *     are recommended
 */
import type { Identities } from "../accounts.ts";
import { type CapabilityMask, maskOf, namesOf } from "../os/capabilities.ts";
import { ADR_LAUNCH_FLAGS, SPAWNER_CAPABILITIES } from "../constants.ts";
import type { ProcessCredentials } from "../os/proc-status.ts";
import { fail, pass, type Verdict, warn } from "./check.ts";
import type { Mode } from "./fact-types.ts";
import type { ProcessEntry } from "./process-table.ts";

type JudgedProcess = Pick<ProcessEntry, "pid" | "name" | "creds">;
/** What the spawner holds in every set: SETUID and SETGID (what ADR 0272 gave the service). */
export const SPAWNER_MASK = maskOf(SPAWNER_CAPABILITIES);
const LAUNCH_FIX = `start the container as ADR 0272 says (docker run ${ADR_LAUNCH_FLAGS.join(" ")}) with clankie-separate as the entrypoint, and do not change the service's credentials`;

/** A mask as /proc prints it, with 0x: the audit's JSON and the probe's report carry masks so. */
export function formatMask(mask: CapabilityMask): string {
  return `0x${mask.toString(16).padStart(16, "0")}`;
}

/** The five capability sets, by their names in /proc/<pid>/status. */
export function capabilitySets(creds: ProcessCredentials): Array<[string, CapabilityMask]> {
  return [["CapInh", creds.capInh], ["CapPrm", creds.capPrm], ["CapEff", creds.capEff], ["CapAmb", creds.capAmb], ["CapBnd", creds.capBnd]];
}

/** One capability set as the audit's lines show it: "CapEff setuid,setgid", or "CapEff none". */
export function showSet([name, mask]: [string, CapabilityMask]): string {
  return `${name} ${namesOf(mask).join(",") || "none"}`;
}

function sets(creds: ProcessCredentials): Record<string, { mask: string; names: string[] }> {
  return Object.fromEntries(capabilitySets(creds).map(([name, mask]) => [name, { mask: formatMask(mask), names: namesOf(mask) }]));
}

/** The same ids, whatever their order and repeats (the kernel lists groups as setgroups(2) was given them). */
export function sameSet(a: readonly number[], b: readonly number[]): boolean {
  const x = [...new Set(a)].sort((m, n) => m - n).join(",");
  const y = [...new Set(b)].sort((m, n) => m - n).join(",");
  return x === y;
}

export function judgeProcessIds(judged: JudgedProcess, ids: Identities | undefined, mode: Mode): Verdict {
  const { creds } = judged;
  const found: Record<string, unknown> = { pid: judged.pid, name: judged.name, uids: creds.uids, gids: creds.gids, groups: creds.groups };
  if (creds.uids.some((uid) => uid === 0) || creds.gids.some((gid) => gid === 0)) {
    return fail(`pid ${judged.pid} runs with uids ${creds.uids.join(",")} gids ${creds.gids.join(",")}: root`, found, LAUNCH_FIX);
  }
  if (mode === "single-uid") {
    const wrong = ids && creds.uids.some((uid) => uid !== ids.service.uid);
    if (wrong) return warn(`pid ${judged.pid} runs as uid ${creds.uids.join(",")}, not ${ids.service.name} (${ids.service.uid})`, found, `run the service as ${ids.service.name} (docker run --user ${ids.service.name})`);
    return pass(`pid ${judged.pid} runs as uid ${creds.uids[0]}, gid ${creds.gids[0]}, groups ${creds.groups.join(",") || "none"}`, found);
  }
  if (!ids) return fail(`cannot say which ids pid ${judged.pid} should have: the users and groups of ADR 0272 are not all defined (see accounts)`, found, "fix the accounts check first");
  const want = { uid: ids.service.uid, gid: ids.service.gid, groups: ids.serviceGroups };
  found.want = want;
  const wrong: string[] = [];
  if (creds.uids.some((uid) => uid !== want.uid)) wrong.push(`uids ${creds.uids.join(",")} (want ${want.uid} in all four)`);
  if (creds.gids.some((gid) => gid !== want.gid)) wrong.push(`gids ${creds.gids.join(",")} (want ${want.gid} in all four)`);
  if (!sameSet(creds.groups, want.groups)) wrong.push(`groups ${creds.groups.join(",") || "none"} (want ${want.groups.join(",")})`);
  if (wrong.length > 0) return fail(`pid ${judged.pid}: ${wrong.join("; ")}`, found, LAUNCH_FIX);
  return pass(`pid ${judged.pid} runs as ${ids.service.name}: uid ${want.uid}, gid ${want.gid}, groups ${want.groups.join(",")}`, found);
}

export function judgeCapabilities(judged: JudgedProcess, mode: Mode): Verdict {
  const { creds } = judged;
  const found: Record<string, unknown> = { pid: judged.pid, sets: sets(creds) };
  if (mode === "single-uid") {
    found.want = { CapInh: formatMask(0n), CapPrm: formatMask(0n), CapEff: formatMask(0n), CapAmb: formatMask(0n), CapBnd: `${formatMask(0n)} (recommended)` };
    const held = creds.capInh | creds.capPrm | creds.capEff | creds.capAmb;
    if (held !== 0n) return fail(`pid ${judged.pid} holds ${namesOf(held).join(", ")} in a single-uid body`, found, "launch with --cap-drop ALL (today's launch) or with the flags of ADR 0272");
    if (creds.capBnd !== 0n) {
      return warn(`pid ${judged.pid} holds no capability, but its bounding set keeps ${namesOf(creds.capBnd).join(", ")} for set-user-ID programs to regain`, found, "launch with --cap-drop ALL");
    }
    return pass(`pid ${judged.pid} holds no capability and its bounding set is empty`, found);
  }
  // Separated: the service holds nothing, the bounding set included; the spawner holds SETUID and SETGID (processes.spawner).
  const want = formatMask(0n);
  found.want = { CapInh: want, CapPrm: want, CapEff: want, CapAmb: want, CapBnd: want, names: [] };
  const wrong = capabilitySets(creds).filter(([, mask]) => formatMask(mask) !== want).map(showSet);
  if (wrong.length > 0) return fail(`pid ${judged.pid}: ${wrong.join("; ")} (want no capability in any set: the spawner starts agent work)`, found, LAUNCH_FIX);
  return pass(`pid ${judged.pid} holds no capability in any set, the bounding set included`, found);
}

export function judgeNoNewPrivs(judged: JudgedProcess, mode: Mode): Verdict {
  const found = { pid: judged.pid, noNewPrivs: judged.creds.noNewPrivs ? 1 : 0 };
  if (judged.creds.noNewPrivs) return pass(`pid ${judged.pid} has NoNewPrivs 1: set-user-ID bits and file capabilities cannot raise it or its children`, found);
  if (mode === "single-uid") return warn(`pid ${judged.pid} has NoNewPrivs 0 (recommended: 1)`, found, "add --security-opt no-new-privileges to docker run");
  return fail(`pid ${judged.pid} has NoNewPrivs 0: agent work could regain privileges through set-user-ID programs or file capabilities`, found, "add --security-opt no-new-privileges to docker run (Kubernetes: allowPrivilegeEscalation: false)");
}
