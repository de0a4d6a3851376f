/*
 * The private-job pool: clankie-private-0 .. -15 as /etc/group defines them,
 * by index. Each group present must be unique, have no members (only a
 * lease grants it, for one job) and a gid of its own: a member, or a gid
 * shared with an account's group, would give another process the key to a
 * private job's directory. A missing group only shrinks the pool. The root
 * start refuses a wrong pool, the audit fails it, a private job reads it; an
 * ordinary spawn never does (it holds no group of the pool).
 */
import { type Identities, unique } from "./accounts.ts";
import { EXIT, GROUP_FILE, PRIVATE_GROUP_PREFIX, PRIVATE_POOL_SIZE } from "./constants.ts";
import { Refusal } from "./report.ts";

export interface PrivateGroup {
  index: number;
  gid: number;
}

/** Identities with their pool (the audit's). */
export type PoolIdentities = Identities & { privateGroups: PrivateGroup[] };

/** The pool of `ids`' /etc/group (empty: no private jobs), refused whole when one group of it is wrong. */
export function privateGroupsOf(ids: Identities): PrivateGroup[] {
  const pool: PrivateGroup[] = [];
  const seen = new Set<number>([ids.service.gid, ids.agent.gid, ids.workspaceGroup.gid]);
  const named = ids.groups.filter((group) => group.name.startsWith(PRIVATE_GROUP_PREFIX));
  for (let index = 0; index < PRIVATE_POOL_SIZE; index++) {
    const name = `${PRIVATE_GROUP_PREFIX}${index}`;
    const group = unique(named, name, GROUP_FILE);
    if (!group) continue;
    if (group.members.length > 0) {
      throw new Refusal(EXIT.noUser, `group ${name} has members (${group.members.join(",")})`, `leave ${name} without members in ${GROUP_FILE}: only a private job's lease grants it`);
    }
    if (group.gid === 0 || seen.has(group.gid)) {
      throw new Refusal(EXIT.noUser, `group ${name} has gid ${group.gid}, which is not its own`, `give ${name} a gid of its own (the image uses ${1100 + index})`);
    }
    seen.add(group.gid);
    pool.push({ index, gid: group.gid });
  }
  return pool;
}

