/*
 * Phase: the private jobs' root, PRIVATE_DIR (src/agent-exec/private-job.ts),
 * made fresh at every separated start, node:node 0711.
 *
 * What a previous run left there (leases its service did not release,
 * written by agent jobs) is first renamed aside under a root-only name in
 * /run, so that PRIVATE_DIR is never seen half removed, and then removed
 * without following a symbolic link (rmSync recursive lstats each entry and
 * unlinks a link itself). Nothing races the removal: at the entrypoint no
 * agent process runs yet (the container's processes all ended with it). /run
 * is root's, not a volume: the agent cannot squat the name, and a lease
 * cannot fill /state.
 */
import { chmodSync, chownSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import type { Identities } from "../accounts.ts";
import { PRIVATE_DIR } from "../constants.ts";
import { osCall, osFailure } from "../report.ts";

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns how many stale leases (directories named by a number) were
 * removed, or "read-only" when /run cannot be written (docker run
 * --read-only without a tmpfs on /run): the start goes on, and the shim
 * refuses private jobs, which have nowhere to live.
 */
export function resetPrivateRoot(ids: Identities): number | "read-only" {
  const parent = dirname(PRIVATE_DIR);
  const make = (path: string, mode: number): boolean => {
    try {
      mkdirSync(path, { mode });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EROFS") return false;
      throw osFailure("mkdir", path, error);
    }
  };
  if (!exists(parent) && !make(parent, 0o755)) return "read-only";
  let stale = 0;
  if (exists(PRIVATE_DIR)) {
    const aside = `${parent}/.clankie-private-stale-${process.pid}`;
    osCall("rename", PRIVATE_DIR, () => renameSync(PRIVATE_DIR, aside));
    try {
      // The lease directories, named by a number; a root with DAC_OVERRIDE lists it whatever its mode.
      stale = lstatSync(aside).isDirectory() ? osCall("readdir", aside, () => readdirSync(aside).filter((name) => /^\d{1,2}$/.test(name)).length) : 0;
    } finally {
      osCall("rm", aside, () => rmSync(aside, { recursive: true, force: true }));
    }
  }
  if (!make(PRIVATE_DIR, 0o700)) return "read-only";
  osCall("chown", PRIVATE_DIR, () => chownSync(PRIVATE_DIR, ids.service.uid, ids.service.gid));
  osCall("chmod", PRIVATE_DIR, () => chmodSync(PRIVATE_DIR, 0o711));
  return stale;
}
