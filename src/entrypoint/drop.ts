/*
 * Phase: drop from root to the service uid. Pure argv builders, so that the
 * exact setpriv(1) command line is unit-tested without privileges.
 *
 * capabilities(7): when all of a process's uids become non-zero, the kernel
 * clears its permitted, effective and ambient sets unless keep-caps is set;
 * setpriv sets PR_SET_KEEPCAPS for --reuid and then raises the ambient set,
 * which survives execve(2) of a file without file capabilities. The bounding
 * set is shrunk while we still hold CAP_SETPCAP. setpriv exits 0 even when an
 * ambient raise failed, so the verification stage re-reads /proc/self/status.
 */
import type { Identities } from "../accounts.ts";
import { maskOf, setprivCapList } from "../capabilities.ts";
import { SERVICE_CAPABILITIES, TOOLS } from "../constants.ts";
import type { ExpectedCredentials } from "../proc-status.ts";

export const VERIFY_SERVICE_FLAG = "--verify-service";

export function serviceExpectation(ids: Identities): ExpectedCredentials {
  return serviceCredentials(ids.service.uid, ids.service.gid, ids.serviceGroups);
}

/** What the service must hold after the drop: its ids, SETUID+SETGID in every set, NoNewPrivs. */
export function serviceCredentials(uid: number, gid: number, groups: readonly number[]): ExpectedCredentials {
  const caps = maskOf(SERVICE_CAPABILITIES);
  return {
    uid,
    gid,
    groups,
    capInh: caps,
    capPrm: caps,
    capEff: caps,
    capAmb: caps,
    capBnd: caps,
    noNewPrivs: true,
  };
}

/** setpriv argv (without argv[0]) that becomes the service and runs `next`. */
export function setprivToServiceArgs(ids: Identities, next: readonly string[]): string[] {
  const caps = setprivCapList(SERVICE_CAPABILITIES);
  return [
    `--reuid=${ids.service.uid}`,
    `--regid=${ids.service.gid}`,
    `--groups=${ids.serviceGroups.join(",")}`,
    `--inh-caps=${caps}`,
    `--ambient-caps=${caps}`,
    `--bounding-set=${caps}`,
    "--",
    ...next,
  ];
}

/** The verification stage: this same executable, as the service, checking itself before the service command. */
export function verifyStageArgs(self: string, ids: Identities, command: readonly string[]): string[] {
  return [self, VERIFY_SERVICE_FLAG, `--uid=${ids.service.uid}`, `--gid=${ids.service.gid}`, `--groups=${ids.serviceGroups.join(",")}`, "--", ...command];
}

export const SETPRIV = TOOLS.setpriv;
