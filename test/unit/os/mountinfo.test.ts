import { test } from "uvu";
import * as assert from "uvu/assert";
import { parseMountinfo } from "../../../src/os/mountinfo.ts";
import { MOUNTINFO } from "../../helpers/self-check-fixtures.ts";

test("mountinfo: parsed, escapes undone", () => {
  const mounts = parseMountinfo(MOUNTINFO);
  assert.is(mounts.length, 7);
  assert.is(mounts[6]!.point, "/with space");
});

test.run();
