/* Process credentials as /proc/<pid>/status gives them (src/os/proc-status.ts), for the unit tests of what judges them. */
import type { ProcessCredentials } from "../../src/os/proc-status.ts";

/** uid (and gid) in all four slots, the same mask in every capability set, NoNewPrivs unless told. */
export function creds(uid: number, caps: bigint, options: { nnp?: boolean; bnd?: bigint; groups?: number[] } = {}): ProcessCredentials {
  return { uids: [uid, uid, uid, uid], gids: [uid, uid, uid, uid], groups: options.groups ?? [uid], capInh: caps, capPrm: caps, capEff: caps, capAmb: caps, capBnd: options.bnd ?? caps, noNewPrivs: options.nnp ?? true };
}

/** The spawner after its drop (ADR 0272's service): node (1000) in clankie-workspace (1002), SETUID and SETGID (0xc0) in every set, NoNewPrivs. */
export const SERVICE_CREDENTIALS: ProcessCredentials = creds(1000, 0xc0n, { groups: [1000, 1002] });

/** The launch of ADR 0272: uid 0, the six capabilities (0x1cb), empty inheritable and ambient sets, NoNewPrivs. */
export const ADR_LAUNCH_CREDENTIALS: ProcessCredentials = { ...creds(0, 0x1cbn, { groups: [] }), capInh: 0n, capAmb: 0n };
