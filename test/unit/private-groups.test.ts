/* src/private-groups.ts: the private-job pool as /etc/group defines it. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { resolveIdentities } from "../../src/accounts.ts";
import { privateGroupsOf } from "../../src/private-groups.ts";
import { GROUP, PASSWD } from "../helpers/identities.ts";

test("privateGroupsOf: the private-job pool, by index; a member, a shared gid or a group named twice refuses", () => {
  const pool = (extra: string) => privateGroupsOf(resolveIdentities(PASSWD, `${GROUP}${extra}`));
  assert.equal(pool("clankie-private-0:x:1100:\nclankie-private-3:x:1103:\n"), [{ index: 0, gid: 1100 }, { index: 3, gid: 1103 }]);
  assert.equal(pool(""), []);
  assert.throws(() => pool("clankie-private-0:x:1100:node\n"), /group clankie-private-0 has members \(node\)/);
  assert.throws(() => pool("clankie-private-0:x:1002:\n"), /group clankie-private-0 has gid 1002, which is not its own/);
  assert.throws(() => pool("clankie-private-0:x:1100:\nclankie-private-1:x:1100:\n"), /clankie-private-1 has gid 1100/);
  assert.throws(() => pool("clankie-private-0:x:1100:\nclankie-private-0:x:1101:\n"), /defines clankie-private-0 2 times/);
});

test.run();
