/*
 * The private-job pool (src/agent-exec/private-job.ts): the groups the image
 * defines, the root the entrypoint made (node's, 0711), and the leases in it,
 * each held or not by a live process (a process that has the lease's gid
 * among its groups: only a lease grants it). A lease no process holds is
 * one the service did not release; the shim takes it back when the pool is
 * exhausted, and the next start removes it. Pure.
 */
import type { PoolIdentities } from "../private-groups.ts";
import { PRIVATE_DIR, PRIVATE_POOL_SIZE } from "../constants.ts";
import type { ProcessEntry } from "./process-table.ts";
import { fail, octal, pass, plural, type Verdict, warn } from "./check.ts";
import type { Mode, PrivateRoot } from "./fact-types.ts";

export type { PrivateRoot };

const REBUILD = "rebuild the image from this project's Dockerfile, which creates clankie-private-0 .. -15";
const READ_ONLY_RUN = "add --tmpfs /run:rw,exec,nosuid,nodev,mode=755 to docker run (docs/launch.md), or restart through the root entrypoint, which makes it";
const RESTART = "restart the container through the root entrypoint (docker run --user 0:0 ..., docs/launch.md), which makes it at every start";

export function judgePrivateJobs(ids: PoolIdentities, root: PrivateRoot, table: readonly ProcessEntry[], mode: Mode, serviceUid: number): Verdict {
  const pool = ids.privateGroups;
  const held = new Set(table.flatMap((entry) => entry.creds.groups));
  const leases = root.ok
    ? root.value.leases.map((name) => {
        const group = pool.find((g) => String(g.index) === name);
        return { index: name, gid: group?.gid ?? null, held: group !== undefined && held.has(group.gid) };
      })
    : [];
  const found = {
    groups: pool.map((g) => ({ index: g.index, gid: g.gid })),
    root: root.ok ? { path: PRIVATE_DIR, uid: root.value.stats.uid, mode: octal(root.value.stats.mode & 0o7777), directory: root.value.stats.isDirectory() } : { path: PRIVATE_DIR, error: root.error },
    leases,
  };
  if (pool.length === 0) return warn(`no clankie-private-N group is defined: private jobs (--private-job) are refused`, found, REBUILD);
  if (mode !== "separated") return pass(`${plural(pool.length, "private-job group")}; private jobs need the separated launch`, found);
  // A read-only root without a tmpfs on /run: the start warned and went on.
  if (!root.ok && root.code === "ENOENT") return warn(`${PRIVATE_DIR} is missing (a read-only /run?): private jobs are refused`, found, READ_ONLY_RUN);
  if (!root.ok) return fail(`${PRIVATE_DIR} cannot be read (${root.error}): private jobs are refused`, found, RESTART);
  if (!root.value.stats.isDirectory() || root.value.stats.uid !== serviceUid || (root.value.stats.mode & 0o7777) !== 0o711) {
    return fail(`${PRIVATE_DIR} is not the service's directory with mode 0711 (uid ${root.value.stats.uid}, mode ${octal(root.value.stats.mode & 0o7777)})`, found, RESTART);
  }
  const stale = leases.filter((lease) => !lease.held).length;
  const summary = `${pool.length} of ${PRIVATE_POOL_SIZE} private-job groups; ${plural(leases.length, "lease")} in ${PRIVATE_DIR}${leases.length ? ` (${leases.map((l) => l.index).join(", ")})` : ""}${stale ? `, ${stale} held by no live process (taken back when the pool is exhausted, removed at the next start)` : ""}`;
  return pass(summary, found);
}
