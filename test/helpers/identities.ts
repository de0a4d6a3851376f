/*
 * The users and groups of the image (ADR 0272), as /etc/passwd and /etc/group
 * text, and the Identities that src/accounts.ts resolves from them.
 */
import { type Identities, resolveIdentities } from "../../src/accounts.ts";

export const PASSWD = [
  "root:x:0:0:root:/root:/bin/bash",
  "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
  "node:x:1000:1000::/home/node:/bin/sh",
  "clankie-agent:x:1001:1001::/state/agent:/usr/sbin/nologin",
  "",
].join("\n");

export const GROUP = [
  "root:x:0:",
  "daemon:x:1:",
  "node:x:1000:",
  "clankie-agent:x:1001:",
  "clankie-workspace:x:1002:node,clankie-agent",
  "",
].join("\n");

export function imageIdentities(): Identities {
  return resolveIdentities(PASSWD, GROUP);
}
