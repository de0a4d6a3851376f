import { test } from "uvu";
import * as assert from "uvu/assert";
import { DROP_CAPABILITIES, withoutCapabilities } from "../../../src/exec/drop-capabilities.ts";

test("a systemExec child starts through setpriv that empties the inheritable and ambient sets, then execs it in place", () => {
  assert.equal([...DROP_CAPABILITIES], ["/usr/bin/setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--"]);
  assert.equal(withoutCapabilities("/usr/bin/git", ["-C", "/state/install", "--", "x"]), {
    file: "/usr/bin/setpriv",
    args: ["--inh-caps=-all", "--ambient-caps=-all", "--", "/usr/bin/git", "-C", "/state/install", "--", "x"],
  });
});

test.run();
