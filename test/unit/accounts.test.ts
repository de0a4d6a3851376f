import { test } from "uvu";
import * as assert from "uvu/assert";
import { groupsOf, parseGroup, parsePasswd, resolveIdentities } from "../../src/accounts.ts";
import { EXIT } from "../../src/constants.ts";
import { assertRefusal } from "../helpers/refusal.ts";
import { GROUP, PASSWD } from "../helpers/identities.ts";

/* ------------------------------------------------------------- parsePasswd -- */

test("parsePasswd: name, uid, gid, home and shell of each valid line", () => {
  assert.equal(parsePasswd(PASSWD), [
    { name: "root", uid: 0, gid: 0, home: "/root", shell: "/bin/bash" },
    { name: "daemon", uid: 1, gid: 1, home: "/usr/sbin", shell: "/usr/sbin/nologin" },
    { name: "node", uid: 1000, gid: 1000, home: "/home/node", shell: "/bin/sh" },
    { name: "clankie-agent", uid: 1001, gid: 1001, home: "/state/agent", shell: "/usr/sbin/nologin" },
  ]);
});

test("parsePasswd: skips lines getpwnam(3) would not return", () => {
  const skipped = [
    "",
    "# a comment",
    "node:x:1000:1000::/home/node", // 6 fields
    "node:x:1000:1000::/home/node:/bin/sh:extra", // 8 fields
    ":x:1000:1000::/home/node:/bin/sh", // no name
    "+node:x:1000:1000::/home/node:/bin/sh", // NIS compat
    "-node:x:1000:1000::/home/node:/bin/sh",
    "+",
    "node:x::1000::/home/node:/bin/sh", // empty uid
    "node:x:1000:::/home/node:/bin/sh", // empty gid
    "node:x:-1:1000::/home/node:/bin/sh",
    "node:x:10a0:1000::/home/node:/bin/sh",
    "node:x: 1000:1000::/home/node:/bin/sh",
    "node:x:1000 :1000::/home/node:/bin/sh",
    "node:x:0x3e8:1000::/home/node:/bin/sh",
    "node:x:1e3:1000::/home/node:/bin/sh",
    "node:x:4294967295:1000::/home/node:/bin/sh", // (uid_t)-1
    "node:x:1000:4294967295::/home/node:/bin/sh",
    "node:x:12345678901:1000::/home/node:/bin/sh", // 11 digits
    "node:x:00000001000:1000::/home/node:/bin/sh", // 11 digits, though its value is small
  ];
  for (const line of skipped) assert.equal(parsePasswd(line), [], JSON.stringify(line));
});

test("parsePasswd: the largest valid id and leading zeros", () => {
  assert.equal(parsePasswd("big:x:4294967294:0001000:gecos,x:/:/bin/false"), [{ name: "big", uid: 4294967294, gid: 1000, home: "/", shell: "/bin/false" }]);
});

/* -------------------------------------------------------------- parseGroup -- */

test("parseGroup: name, gid and members", () => {
  assert.equal(parseGroup(GROUP), [
    { name: "root", gid: 0, members: [] },
    { name: "daemon", gid: 1, members: [] },
    { name: "node", gid: 1000, members: [] },
    { name: "clankie-agent", gid: 1001, members: [] },
    { name: "clankie-workspace", gid: 1002, members: ["node", "clankie-agent"] },
  ]);
  assert.equal(parseGroup("g:x:5:a,,b,"), [{ name: "g", gid: 5, members: ["a", "b"] }]);
});

test("parseGroup: skips lines that do not parse", () => {
  const skipped = ["", "g:x:5", "g:x:5:a:b", ":x:5:a", "+g:x:5:a", "-g:x:5:a", "+:::", "g:x::a", "g:x:five:a", "g:x:4294967295:a"];
  for (const line of skipped) assert.equal(parseGroup(line), [], JSON.stringify(line));
});

/* ---------------------------------------------------------------- groupsOf -- */

test("groupsOf: the primary group plus every group that lists the user, sorted, once each", () => {
  const groups = parseGroup(["b:x:20:u", "a:x:10:other,u", "c:x:5:other", "d:x:7:u", "again:x:20:u", "own:x:3:u"].join("\n"));
  assert.equal(groupsOf({ name: "u", uid: 9, gid: 3, home: "/", shell: "/bin/sh" }, groups), [3, 7, 10, 20]);
  assert.equal(groupsOf({ name: "nobody-lists", uid: 9, gid: 42, home: "/", shell: "/bin/sh" }, groups), [42]);
  // members are matched by exact name
  assert.equal(groupsOf({ name: "U", uid: 9, gid: 1, home: "/", shell: "/bin/sh" }, groups), [1]);
});

/* ------------------------------------------------------- resolveIdentities -- */

test("resolveIdentities: the image's users and groups", () => {
  assert.equal(resolveIdentities(PASSWD, GROUP), {
    service: { name: "node", uid: 1000, gid: 1000, home: "/home/node", shell: "/bin/sh" },
    serviceGroups: [1000, 1002],
    agent: { name: "clankie-agent", uid: 1001, gid: 1001, home: "/state/agent", shell: "/usr/sbin/nologin" },
    workspaceGroup: { name: "clankie-workspace", gid: 1002, members: ["node", "clankie-agent"] },
    groups: parseGroup(GROUP),
  });
});

test("resolveIdentities: the agent need not be listed in clankie-workspace (it gets the group at spawn)", () => {
  const ids = resolveIdentities(PASSWD, GROUP.replace("clankie-workspace:x:1002:node,clankie-agent", "clankie-workspace:x:1002:node"));
  assert.equal(ids.workspaceGroup.members, ["node"]);
});

const IMAGE_FIX = "rebuild the image from this project's Dockerfile, which creates it";
const NODE_LINE = "node:x:1000:1000::/home/node:/bin/sh";
const AGENT_LINE = "clankie-agent:x:1001:1001::/state/agent:/usr/sbin/nologin";
const WORKSPACE_LINE = "clankie-workspace:x:1002:node,clankie-agent";

interface Case {
  name: string;
  passwd?: string;
  group?: string;
  what: string;
  fix: string;
}

const REFUSALS: Case[] = [
  { name: "node missing", passwd: PASSWD.replace(NODE_LINE, ""), what: "user node is missing from /etc/passwd", fix: IMAGE_FIX },
  { name: "node malformed counts as missing", passwd: PASSWD.replace(NODE_LINE, "node:x:1000:1000::/home/node"), what: "user node is missing from /etc/passwd", fix: IMAGE_FIX },
  { name: "clankie-agent missing", passwd: PASSWD.replace(AGENT_LINE, ""), what: "user clankie-agent is missing from /etc/passwd", fix: IMAGE_FIX },
  { name: "clankie-workspace missing", group: GROUP.replace(WORKSPACE_LINE, ""), what: "group clankie-workspace is missing from /etc/group", fix: IMAGE_FIX },
  {
    name: "a user called clankie-workspace is not the group",
    passwd: `${PASSWD}clankie-workspace:x:1002:1002::/:/bin/sh\n`,
    group: GROUP.replace(WORKSPACE_LINE, "clankie-workspace-x:x:1002:node"),
    what: "group clankie-workspace is missing from /etc/group",
    fix: IMAGE_FIX,
  },
  { name: "node twice", passwd: `${PASSWD}${NODE_LINE}\n`, what: "/etc/passwd defines node 2 times", fix: "leave exactly one node line in /etc/passwd" },
  {
    name: "clankie-agent three times",
    passwd: `${PASSWD}${AGENT_LINE}\nclankie-agent:x:0:0::/root:/bin/sh\n`,
    what: "/etc/passwd defines clankie-agent 3 times",
    fix: "leave exactly one clankie-agent line in /etc/passwd",
  },
  {
    name: "clankie-workspace twice",
    group: `${GROUP}clankie-workspace:x:0:clankie-agent\n`,
    what: "/etc/group defines clankie-workspace 2 times",
    fix: "leave exactly one clankie-workspace line in /etc/group",
  },
  {
    name: "a duplicate is refused before a missing user",
    passwd: `${PASSWD.replace(NODE_LINE, "")}${AGENT_LINE}\n`,
    what: "/etc/passwd defines clankie-agent 2 times",
    fix: "leave exactly one clankie-agent line in /etc/passwd",
  },
  { name: "node is uid 0", passwd: PASSWD.replace(NODE_LINE, "node:x:0:1000::/home/node:/bin/sh"), what: "user node has uid 0 gid 1000", fix: "give node a non-zero uid and gid" },
  { name: "node is gid 0", passwd: PASSWD.replace(NODE_LINE, "node:x:1000:0::/home/node:/bin/sh"), what: "user node has uid 1000 gid 0", fix: "give node a non-zero uid and gid" },
  { name: "node uid 0 spelled 000", passwd: PASSWD.replace(NODE_LINE, "node:x:000:1000::/home/node:/bin/sh"), what: "user node has uid 0 gid 1000", fix: "give node a non-zero uid and gid" },
  {
    name: "clankie-agent is uid 0",
    passwd: PASSWD.replace(AGENT_LINE, "clankie-agent:x:0:1001::/state/agent:/usr/sbin/nologin"),
    what: "user clankie-agent has uid 0 gid 1001",
    fix: "give clankie-agent a non-zero uid and gid of its own",
  },
  {
    name: "clankie-agent is gid 0",
    passwd: PASSWD.replace(AGENT_LINE, "clankie-agent:x:1001:0::/state/agent:/usr/sbin/nologin"),
    what: "user clankie-agent has uid 1001 gid 0",
    fix: "give clankie-agent a non-zero uid and gid of its own",
  },
  {
    name: "clankie-agent shares node's uid",
    passwd: PASSWD.replace(AGENT_LINE, "clankie-agent:x:1000:1001::/state/agent:/usr/sbin/nologin"),
    what: "user clankie-agent has the same uid as node (1000)",
    fix: "give clankie-agent a uid of its own (the image uses 1001)",
  },
  {
    name: "clankie-agent shares node's primary group",
    passwd: PASSWD.replace(AGENT_LINE, "clankie-agent:x:1001:1000::/state/agent:/usr/sbin/nologin"),
    what: "user clankie-agent has the primary group of node (1000)",
    fix: "give clankie-agent a primary group of its own",
  },
  {
    name: "clankie-workspace is gid 0",
    group: GROUP.replace(WORKSPACE_LINE, "clankie-workspace:x:0:node,clankie-agent"),
    what: "group clankie-workspace has gid 0, which is not its own",
    fix: "give clankie-workspace a gid no user has as its primary group",
  },
  {
    name: "clankie-workspace is node's primary group",
    group: GROUP.replace(WORKSPACE_LINE, "clankie-workspace:x:1000:node,clankie-agent"),
    what: "group clankie-workspace has gid 1000, which is not its own",
    fix: "give clankie-workspace a gid no user has as its primary group",
  },
  {
    name: "clankie-workspace is the agent's primary group",
    group: GROUP.replace(WORKSPACE_LINE, "clankie-workspace:x:1001:node,clankie-agent"),
    what: "group clankie-workspace has gid 1001, which is not its own",
    fix: "give clankie-workspace a gid no user has as its primary group",
  },
  {
    name: "node not in clankie-workspace",
    group: GROUP.replace(WORKSPACE_LINE, "clankie-workspace:x:1002:clankie-agent"),
    what: "user node is not a member of clankie-workspace",
    fix: "run: usermod -aG clankie-workspace node in the image",
  },
  {
    name: "node in clankie-workspace only by a prefix of its name",
    group: GROUP.replace(WORKSPACE_LINE, "clankie-workspace:x:1002:nodejs,clankie-agent"),
    what: "user node is not a member of clankie-workspace",
    fix: "run: usermod -aG clankie-workspace node in the image",
  },
  {
    name: "clankie-agent in a foreign group",
    group: `${GROUP}docker:x:999:clankie-agent\n`,
    what: "user clankie-agent is a member of groups 999 besides its own and clankie-workspace",
    fix: "remove clankie-agent from those groups in /etc/group",
  },
  {
    name: "clankie-agent in root's and node's groups",
    group: GROUP.replace("root:x:0:", "root:x:0:clankie-agent").replace("node:x:1000:", "node:x:1000:clankie-agent"),
    what: "user clankie-agent is a member of groups 0,1000 besides its own and clankie-workspace",
    fix: "remove clankie-agent from those groups in /etc/group",
  },
  {
    name: "node in clankie-agent's group",
    group: GROUP.replace("clankie-agent:x:1001:", "clankie-agent:x:1001:node"),
    what: "user node is a member of clankie-agent's group",
    fix: "remove node from group 1001 in /etc/group",
  },
  {
    name: "node in another group with the agent's gid",
    group: `${GROUP}alias:x:1001:node\n`,
    what: "user node is a member of clankie-agent's group",
    fix: "remove node from group 1001 in /etc/group",
  },
];

for (const c of REFUSALS) {
  test(`resolveIdentities refuses: ${c.name}`, () => {
    assertRefusal(() => resolveIdentities(c.passwd ?? PASSWD, c.group ?? GROUP), { exitCode: EXIT.noUser, what: c.what, fix: c.fix });
  });
}

test("the refusal exit code is 67 (sysexits EX_NOUSER)", () => {
  assert.is(EXIT.noUser, 67);
});

test.run();
