/* accounts: the entrypoint's rules on /etc/passwd and /etc/group. Pure, no privileges. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { judgeAccounts as judge, resolveAccounts } from "../../../src/self-check/accounts.ts";
import { DEFAULT_GROUP, DEFAULT_PASSWD } from "../../helpers/sandbox.ts";
import { ids } from "../../helpers/self-check-fixtures.ts";

const Accounts = suite("accounts");
const judgeAccounts = (passwd: string, group: string) => judge(resolveAccounts(passwd, group));

Accounts("the image's users and groups pass, with their ids", () => {
  const result = judgeAccounts(DEFAULT_PASSWD, DEFAULT_GROUP);
  assert.is(result.status, "pass");
  assert.equal((result.found.agent as any).groups, [1001, 1002]);
});

Accounts("a missing group, a shared uid, a wrong membership fail with the entrypoint's own fix", () => {
  const missing = judgeAccounts(DEFAULT_PASSWD, DEFAULT_GROUP.replace(/^clankie-workspace.*\n/m, ""));
  assert.is(missing.status, "fail");
  assert.match(missing.fix!, /rebuild the image/);
  const shared = judgeAccounts(DEFAULT_PASSWD.replace("clankie-agent:x:1001:1001", "clankie-agent:x:1000:1001"), DEFAULT_GROUP);
  assert.match(shared.summary, /same uid as node/);
  const member = judgeAccounts(DEFAULT_PASSWD, DEFAULT_GROUP.replace("node:x:1000:", "node:x:1000:clankie-agent"));
  assert.match(member.summary, /clankie-agent is a member of groups 1000/);
});

Accounts("a wrong private-job pool fails with the entrypoint's own refusal: a member, or a gid that is not its own", () => {
  const member = judgeAccounts(DEFAULT_PASSWD, DEFAULT_GROUP.replace(/^(clankie-private-3:x:\d+:)$/m, "$1node"));
  assert.is(member.status, "fail");
  assert.is(member.summary, "group clankie-private-3 has members (node)");
  assert.match(member.fix!, /only a private job's lease grants it/);
  const shared = judgeAccounts(DEFAULT_PASSWD, DEFAULT_GROUP.replace(/^clankie-private-3:x:\d+:$/m, "clankie-private-3:x:1002:"));
  assert.match(shared.summary, /group clankie-private-3 has gid 1002, which is not its own/);
});

Accounts.run();
