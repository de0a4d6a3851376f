/*
 * Users and groups, read from /etc/passwd and /etc/group as files. NSS is not
 * consulted: its modules are shared libraries, and this code runs as root.
 */
import { readFileSync } from "node:fs";
import { AGENT_USER, EXIT, GROUP_FILE, PASSWD_FILE, SERVICE_USER, WORKSPACE_GROUP } from "./constants.ts";
import { parseId } from "./os/proc-status.ts";
import { osCall, Refusal } from "./report.ts";

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
  shell: string;
}

export interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

/** passwd(5). Lines that do not parse are skipped, as getpwnam(3) would. */
export function parsePasswd(text: string): PasswdEntry[] {
  const entries: PasswdEntry[] = [];
  for (const line of text.split("\n")) {
    const fields = line.split(":");
    if (fields.length !== 7 || fields[0] === "" || line.startsWith("+") || line.startsWith("-")) continue;
    const uid = parseId(fields[2]!);
    const gid = parseId(fields[3]!);
    if (uid === undefined || gid === undefined) continue;
    entries.push({ name: fields[0]!, uid, gid, home: fields[5]!, shell: fields[6]! });
  }
  return entries;
}

/** group(5). */
export function parseGroup(text: string): GroupEntry[] {
  const entries: GroupEntry[] = [];
  for (const line of text.split("\n")) {
    const fields = line.split(":");
    if (fields.length !== 4 || fields[0] === "" || line.startsWith("+") || line.startsWith("-")) continue;
    const gid = parseId(fields[2]!);
    if (gid === undefined) continue;
    entries.push({ name: fields[0]!, gid, members: fields[3]!.split(",").filter((m) => m !== "") });
  }
  return entries;
}

/** The supplementary groups of a user: its primary group and every group that lists it. */
export function groupsOf(user: PasswdEntry, groups: readonly GroupEntry[]): number[] {
  const ids = new Set<number>([user.gid]);
  for (const group of groups) if (group.members.includes(user.name)) ids.add(group.gid);
  return [...ids].sort((a, b) => a - b);
}

export interface Identities {
  service: PasswdEntry;
  serviceGroups: number[];
  agent: PasswdEntry;
  workspaceGroup: GroupEntry;
  /** Every group of /etc/group, as parsed: where the private-job pool is read from (src/private-groups.ts). */
  groups: readonly GroupEntry[];
}

function readDatabase(path: string): string {
  return osCall("read", path, () => readFileSync(path, "utf8"));
}

export function unique<T extends { name: string }>(entries: readonly T[], name: string, file: string): T | undefined {
  const matches = entries.filter((entry) => entry.name === name);
  if (matches.length > 1) {
    throw new Refusal(EXIT.noUser, `${file} defines ${name} ${matches.length} times`, `leave exactly one ${name} line in ${file}`);
  }
  return matches[0];
}

/** Resolves node, clankie-agent and clankie-workspace, refusing every inconsistency ADR 0272 rules out. */
export function resolveIdentities(passwdText: string, groupText: string): Identities {
  const users = parsePasswd(passwdText);
  const groups = parseGroup(groupText);
  const service = unique(users, SERVICE_USER, PASSWD_FILE);
  const agent = unique(users, AGENT_USER, PASSWD_FILE);
  const workspaceGroup = unique(groups, WORKSPACE_GROUP, GROUP_FILE);
  const imageFix = "rebuild the image from this project's Dockerfile, which creates it";
  if (!service) throw new Refusal(EXIT.noUser, `user ${SERVICE_USER} is missing from ${PASSWD_FILE}`, imageFix);
  if (!agent) throw new Refusal(EXIT.noUser, `user ${AGENT_USER} is missing from ${PASSWD_FILE}`, imageFix);
  if (!workspaceGroup) throw new Refusal(EXIT.noUser, `group ${WORKSPACE_GROUP} is missing from ${GROUP_FILE}`, imageFix);
  if (service.uid === 0 || service.gid === 0) {
    throw new Refusal(EXIT.noUser, `user ${SERVICE_USER} has uid ${service.uid} gid ${service.gid}`, `give ${SERVICE_USER} a non-zero uid and gid`);
  }
  if (agent.uid === 0 || agent.gid === 0) {
    throw new Refusal(EXIT.noUser, `user ${AGENT_USER} has uid ${agent.uid} gid ${agent.gid}`, `give ${AGENT_USER} a non-zero uid and gid of its own`);
  }
  if (agent.uid === service.uid) {
    throw new Refusal(EXIT.noUser, `user ${AGENT_USER} has the same uid as ${SERVICE_USER} (${agent.uid})`, `give ${AGENT_USER} a uid of its own (the image uses 1001)`);
  }
  if (agent.gid === service.gid) {
    throw new Refusal(EXIT.noUser, `user ${AGENT_USER} has the primary group of ${SERVICE_USER} (${agent.gid})`, `give ${AGENT_USER} a primary group of its own`);
  }
  if (workspaceGroup.gid === 0 || workspaceGroup.gid === service.gid || workspaceGroup.gid === agent.gid) {
    throw new Refusal(EXIT.noUser, `group ${WORKSPACE_GROUP} has gid ${workspaceGroup.gid}, which is not its own`, `give ${WORKSPACE_GROUP} a gid no user has as its primary group`);
  }
  if (!workspaceGroup.members.includes(SERVICE_USER)) {
    throw new Refusal(EXIT.noUser, `user ${SERVICE_USER} is not a member of ${WORKSPACE_GROUP}`, `run: usermod -aG ${WORKSPACE_GROUP} ${SERVICE_USER} in the image`);
  }
  const agentGroups = groupsOf(agent, groups);
  const foreign = agentGroups.filter((gid) => gid !== agent.gid && gid !== workspaceGroup.gid);
  if (foreign.length > 0) {
    throw new Refusal(EXIT.noUser, `user ${AGENT_USER} is a member of groups ${foreign.join(",")} besides its own and ${WORKSPACE_GROUP}`, `remove ${AGENT_USER} from those groups in ${GROUP_FILE}`);
  }
  const serviceGroups = groupsOf(service, groups);
  if (serviceGroups.includes(agent.gid)) {
    throw new Refusal(EXIT.noUser, `user ${SERVICE_USER} is a member of ${AGENT_USER}'s group`, `remove ${SERVICE_USER} from group ${agent.gid} in ${GROUP_FILE}`);
  }
  return { service, serviceGroups, agent, workspaceGroup, groups };
}

export function readIdentities(): Identities {
  return resolveIdentities(readDatabase(PASSWD_FILE), readDatabase(GROUP_FILE));
}

/**
 * What starting agent work needs of the identities: node's uid (the only
 * caller), the agent's uid and gid, and its groups (agentGroups). The
 * spawner knows no more of them: the root phase resolves them here and hands
 * them to it in CLANKIE_SPAWNER_IDS (formatAgentIds), so that no parser of
 * /etc/passwd or /etc/group runs with its capabilities.
 */
export interface AgentIds {
  service: number;
  uid: number;
  gid: number;
  groups: readonly number[];
}

export function agentIds(ids: Identities): AgentIds {
  return { service: ids.service.uid, uid: ids.agent.uid, gid: ids.agent.gid, groups: agentGroups(ids) };
}

/** CLANKIE_SPAWNER_IDS's value: "SERVICE:UID:GID:GROUP,GROUP" (the spawner's parseAgentIds reads it). */
export function formatAgentIds(ids: AgentIds): string {
  return `${ids.service}:${ids.uid}:${ids.gid}:${ids.groups.join(",")}`;
}

/** The agent's groups: its own and clankie-workspace (ADR 0272), as the shim sets them and the audit expects them. */
export function agentGroups(ids: Identities): number[] {
  return [...new Set([ids.agent.gid, ids.workspaceGroup.gid])].sort((a, b) => a - b);
}
