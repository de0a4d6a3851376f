import { test } from "uvu";
import * as assert from "uvu/assert";
import { GIT_SAFE_DIRECTORY, withGitTrust } from "../../../src/agent-exec/git-trust.ts";

const ENTRY = { GIT_CONFIG_KEY_0: "safe.directory", GIT_CONFIG_VALUE_0: GIT_SAFE_DIRECTORY };

test("withGitTrust: one command-scope entry safe.directory=* when the service passed none", () => {
  assert.is(GIT_SAFE_DIRECTORY, "*");
  assert.equal(withGitTrust({ HOME: "/state/agent" }), { HOME: "/state/agent", GIT_CONFIG_COUNT: "1", ...ENTRY });
  assert.equal(withGitTrust({ GIT_CONFIG_COUNT: "" }), { GIT_CONFIG_COUNT: "1", ...ENTRY }, "an empty count is git's 0");
});

test("withGitTrust: appended after the service's entries, which it leaves as they are", () => {
  const service = { GIT_CONFIG_COUNT: "2", GIT_CONFIG_KEY_0: "user.name", GIT_CONFIG_VALUE_0: "agent", GIT_CONFIG_KEY_1: "safe.directory", GIT_CONFIG_VALUE_1: "" };
  assert.equal(withGitTrust(service), { ...service, GIT_CONFIG_COUNT: "3", GIT_CONFIG_KEY_2: "safe.directory", GIT_CONFIG_VALUE_2: "*" });
});

test("withGitTrust: a count git would call bogus is left for git to refuse, never guessed past", () => {
  for (const count of ["x", "-1", " 1", "1 ", "0x2", "2147483647", "99999999999999"]) {
    const env = { GIT_CONFIG_COUNT: count, GIT_CONFIG_KEY_0: "core.pager", GIT_CONFIG_VALUE_0: "cat" };
    assert.equal(withGitTrust(env), env, count);
  }
  assert.is(withGitTrust({ GIT_CONFIG_COUNT: "2147483646" }).GIT_CONFIG_COUNT, "2147483647", "the largest count git accepts");
});

test.run();
