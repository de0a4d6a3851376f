/*
 * Phase: the two drops from root to node, the spawner's and the service's.
 * Pure argv builders, so that the exact setpriv(1) command lines are
 * unit-tested without privileges.
 *
 * capabilities(7): when all of a process's uids become non-zero, the kernel
 * clears its permitted, effective and ambient sets unless keep-caps is set;
 * setpriv sets PR_SET_KEEPCAPS for --reuid and then raises the ambient set,
 * which survives execve(2) of a file without file capabilities. The bounding
 * set is shrunk while we still hold CAP_SETPCAP. setpriv exits 0 even when an
 * ambient raise failed, so the verification stage (src/stage/), in the
 * process setpriv became, re-reads /proc/self/status before the spawner or
 * the service runs.
 */
import type { Identities } from "../accounts.ts";
import { maskOf, setprivCapList } from "../os/capabilities.ts";
import { AGENT_EXEC_NAME, AGENT_EXEC_PATH, ENTRYPOINT_NAME, SPAWNER_CAPABILITIES, SERVICE_UMASK, SPAWNER_FLAG, TOOLS } from "../constants.ts";
import SPAWNER_PAIR from "../perl/spawner-pair.pl";
import { stageArgv } from "../stage/stage-argv.ts";

/** setpriv argv (without argv[0]) that becomes the spawner (node, SETUID and SETGID in every set: what ADR 0272 gave the service) and runs `next`. */
export function setprivToSpawnerArgs(ids: Identities, next: readonly string[]): string[] {
  const caps = setprivCapList(SPAWNER_CAPABILITIES);
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
 * The verification stage, as node: checks what the drop asked for (node's
 * ids and groups, `caps` in every set and as the whole bounding set,
 * NoNewPrivs), sets the service's umask (constants.ts, SERVICE_UMASK: what
 * it creates is never other's), then execs `line`.
 */
function verifyNodeStageArgs(ids: Identities, line: { path: string; argv: readonly string[] }, caps: bigint): string[] {
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

/** The verification stage with SETUID+SETGID (ADR 0272's service; now the resident spawner's drop), then `line`. */
export function verifyStageArgs(ids: Identities, line: { path: string; argv: readonly string[] }): string[] {
  return verifyNodeStageArgs(ids, line, maskOf(SPAWNER_CAPABILITIES));
}

/*
 * The service beside a resident spawner (src/agent-exec/spawner.ts; docs/
 * security.md, "The service holds no capability"): the root phase makes
 * both drops, because emptying a bounding set needs CAP_SETPCAP
 * (capabilities(7)), which node never holds. The spawner keeps what the
 * service kept under ADR 0272 (SETUID and SETGID in every set); the service
 * keeps nothing: setresuid(2) from root clears permitted and effective, the
 * empty inheritable and ambient sets leave nothing across execve(2), and the
 * bounding set is emptied while root still holds CAP_SETPCAP.
 */

/** setpriv argv (without argv[0]) that becomes the service with no capability in any set, the bounding set included, and runs `next`. */
export function setprivToCaplessServiceArgs(ids: Identities, next: readonly string[]): string[] {
  return [
    `--reuid=${ids.service.uid}`,
    `--regid=${ids.service.gid}`,
    `--groups=${ids.serviceGroups.join(",")}`,
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--bounding-set=-all",
    "--",
    ...next,
  ];
}

/** The verification stage for the capless service: 0 in every capability set and the bounding set, then `line` (the service command, or tini running it). */
export function verifyCaplessStageArgs(ids: Identities, line: { path: string; argv: readonly string[] }): string[] {
  return verifyNodeStageArgs(ids, line, 0n);
}

/** The spawner's command line after its drop: the executable under the shim's name, --spawner. */
export const SPAWNER_LINE = { path: AGENT_EXEC_PATH, argv: [AGENT_EXEC_NAME, SPAWNER_FLAG] } as const;

/**
 * perl's argv (without argv[0]) for the pair (src/perl/spawner-pair.pl): the
 * channel at `fd`, the spawner's environment and drop, then the service's
 * drop, which keeps perl's own environment.
 */
export function spawnerPairArgs(fd: number, spawnerEnv: Readonly<Record<string, string>>, spawner: readonly string[], service: readonly string[]): string[] {
  const env = Object.entries(spawnerEnv).map(([name, value]) => `${name}=${value}`);
  return ["-e", SPAWNER_PAIR, String(fd), String(env.length), ...env, String(spawner.length), ...spawner, ...service];
}
