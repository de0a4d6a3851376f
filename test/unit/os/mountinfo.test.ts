import { test } from "uvu";
import * as assert from "uvu/assert";
import { excludedDirectories, mountOf, parseMountinfo } from "../../../src/os/mountinfo.ts";
import { MOUNTINFO } from "../../helpers/self-check-fixtures.ts";

test("mountinfo: parsed, escapes undone, longest match wins, pseudo filesystems excluded", () => {
  const mounts = parseMountinfo(MOUNTINFO);
  assert.is(mounts.length, 7);
  assert.is(mounts[6]!.point, "/with space");
  assert.is(mountOf(mounts, "/usr/bin/true")!.point, "/usr");
  assert.is(mountOf(mounts, "/etc/passwd")!.point, "/");
  assert.is(mountOf(mounts, "/usrx")!.point, "/");
  assert.equal([...excludedDirectories(mounts, ["/state"])].sort(), ["/dev/pts", "/proc", "/state"]);
});

test.run();
