/*
 * The probe's socket name: drawn by the audit, checked by the service before
 * it hands it to the probe (src/probe-socket.ts).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { drawProbeSocketName, isProbeSocketName } from "../../src/probe-socket.ts";

const test = suite("the probe's socket name");

test("drawn: the audit's pid and 16 hex digits, new at each draw; of the form the service hands on", () => {
  const first = drawProbeSocketName(4242);
  assert.match(first, /^clankie-probe-4242-[0-9a-f]{16}$/);
  assert.is.not(drawProbeSocketName(4242), first);
  assert.ok(isProbeSocketName(first));
});

test("refused: any other form, which the service would otherwise put in the probe's environment", () => {
  for (const name of ["clankie-probe-12-0123456789abcde", "clankie-probe-12-0123456789abcdef0", "clankie-probe-x-0123456789abcdef", "clankie-probe-12-0123456789ABCDEF", "clankie-probe-12-0123456789abcdef\n", "../clankie-probe-12-0123456789abcdef", "", 12, undefined]) {
    assert.not.ok(isProbeSocketName(name), String(name));
  }
  assert.ok(isProbeSocketName("clankie-probe-12-0123456789abcdef"));
});

test.run();
