/*
 * Users and groups: node, clankie-agent and clankie-workspace present, ids
 * distinct, memberships right. The rules are the entrypoint's own
 * (resolveIdentities in src/accounts.ts, which refuses the first thing
 * wrong); this turns its verdict into a check. Pure.
 */
import { agentGroups, type Identities, resolveIdentities } from "../accounts.ts";
import { AGENT_USER, GROUP_FILE, PASSWD_FILE, SERVICE_USER, WORKSPACE_GROUP } from "../constants.ts";
import { Refusal } from "../report.ts";
import { type Check, fail, pass } from "./check.ts";

export interface AccountsResult {
  check: Check;
  ids: Identities | undefined;
}

export function checkAccounts(passwdText: string, groupText: string): AccountsResult {
  const id = "accounts";
  let ids: Identities;
  try {
    ids = resolveIdentities(passwdText, groupText);
  } catch (error) {
    if (error instanceof Refusal) {
      return { check: fail(id, error.message, { files: [PASSWD_FILE, GROUP_FILE], problem: error.message }, error.fix), ids: undefined };
    }
    throw error;
  }
  const found = {
    files: [PASSWD_FILE, GROUP_FILE],
    service: { name: ids.service.name, uid: ids.service.uid, gid: ids.service.gid, groups: ids.serviceGroups },
    agent: { name: ids.agent.name, uid: ids.agent.uid, gid: ids.agent.gid, groups: agentGroups(ids), home: ids.agent.home },
    workspaceGroup: { name: ids.workspaceGroup.name, gid: ids.workspaceGroup.gid, members: ids.workspaceGroup.members },
  };
  return {
    check: pass(
      id,
      `${SERVICE_USER} ${ids.service.uid}, ${AGENT_USER} ${ids.agent.uid}, group ${WORKSPACE_GROUP} ${ids.workspaceGroup.gid}: distinct, memberships as ADR 0272 requires`,
      found,
    ),
    ids,
  };
}
