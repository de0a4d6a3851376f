/*
 * Phase: drop from root to the service uid. Pure argv builders, so that the
 * exact setpriv(1) command line is unit-tested without privileges.
 *
 * capabilities(7): when all of a process's uids become non-zero, the kernel
 * clears its permitted, effective and ambient sets unless keep-caps is set;
 * setpriv sets PR_SET_KEEPCAPS for --reuid and then raises the ambient set,
 * which survives execve(2) of a file without file capabilities. The bounding
 * set is shrunk while we still hold CAP_SETPCAP. setpriv exits 0 even when an
 * ambient raise failed, so the verification stage (src/stage/), in the
 * process setpriv became, re-reads /proc/self/status before the service runs.
 */
import type { Identities } from "../accounts.ts";
import { maskOf, setprivCapList } from "../os/capabilities.ts";
import { ENTRYPOINT_NAME, SERVICE_CAPABILITIES, SERVICE_UMASK, TOOLS } from "../constants.ts";
import { stageArgv } from "../stage/stage.ts";

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

/** Node is not built to be PID 1: tini reaps and forwards signals, as the service. */
export function serviceCommandLine(command: readonly string[], path: string, pid: number, tiniPresent: boolean): { path: string; argv: string[] } {
  if (!tiniPresent) return { path, argv: [...command] };
  return { path: TOOLS.tini, argv: pid === 1 ? ["tini", "--", ...command] : ["tini", "-s", "--", ...command] };
}

/**
 * The verification stage, as the service: checks what the drop asked for,
 * sets the service's umask (constants.ts, SERVICE_UMASK: what it creates is
 * never other's), then execs `line` (the service command, or tini running it).
 */
export function verifyStageArgs(ids: Identities, line: { path: string; argv: readonly string[] }): string[] {
  // What the drop asks for: the service's ids and groups, SETUID+SETGID in every set, NoNewPrivs.
  const caps = maskOf(SERVICE_CAPABILITIES);
  return stageArgv({
    program: ENTRYPOINT_NAME,
    role: "service",
    uid: ids.service.uid,
    gid: ids.service.gid,
    groups: ids.serviceGroups,
    caps: { inh: caps, prm: caps, eff: caps, amb: caps },
    bounding: caps,
    umask: SERVICE_UMASK,
    action: line,
  });
}

