/*
 * Users and groups: node, clankie-agent and clankie-workspace present, ids
 * distinct, memberships right. The rules are the entrypoint's own
 * (resolveIdentities in src/accounts.ts and the private-job pool's
 * privateGroupsOf in src/private-groups.ts, which refuse the first thing
 * wrong); this turns its verdict into a check. Pure.
 */
import { agentGroups, type Identities, resolveIdentities } from "../accounts.ts";
import { type PoolIdentities, privateGroupsOf } from "../private-groups.ts";
import { AGENT_USER, GROUP_FILE, PASSWD_FILE, SERVICE_USER, WORKSPACE_GROUP } from "../constants.ts";
import { Refusal } from "../report.ts";
import { fail, pass, type Verdict } from "./check.ts";

/** The identities, or the entrypoint's refusal of the files: resolved once, for the ids fact and for this check. */
export function resolveAccounts(passwdText: string, groupText: string): PoolIdentities | Refusal {
  try {
    const ids = resolveIdentities(passwdText, groupText);
    return { ...ids, privateGroups: privateGroupsOf(ids) };
  } catch (error) {
    if (error instanceof Refusal) return error;
    throw error;
  }
}

export function judgeAccounts(ids: Identities | Refusal): Verdict {
  if (ids instanceof Refusal) return fail(ids.message, { files: [PASSWD_FILE, GROUP_FILE], problem: ids.message }, ids.fix);
  const found = {
    files: [PASSWD_FILE, GROUP_FILE],
    service: { name: ids.service.name, uid: ids.service.uid, gid: ids.service.gid, groups: ids.serviceGroups },
    agent: { name: ids.agent.name, uid: ids.agent.uid, gid: ids.agent.gid, groups: agentGroups(ids), home: ids.agent.home },
    workspaceGroup: { name: ids.workspaceGroup.name, gid: ids.workspaceGroup.gid, members: ids.workspaceGroup.members },
  };
  return pass(`${SERVICE_USER} ${ids.service.uid}, ${AGENT_USER} ${ids.agent.uid}, group ${WORKSPACE_GROUP} ${ids.workspaceGroup.gid}: distinct, memberships as ADR 0272 requires`, found);
}
