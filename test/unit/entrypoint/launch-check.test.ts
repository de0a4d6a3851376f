import { test } from "uvu";
import * as assert from "uvu/assert";
import { maskOf } from "../../../src/os/capabilities.ts";
import { EXIT, ROOT_CAPABILITIES } from "../../../src/constants.ts";
import { classifyLaunch } from "../../../src/entrypoint/launch-check.ts";
import type { ProcessCredentials } from "../../../src/os/proc-status.ts";
import { assertRefusal } from "../../helpers/refusal.ts";
import { ADR_LAUNCH_CREDENTIALS } from "../../helpers/credentials.ts";

const ADR_LAUNCH = ADR_LAUNCH_CREDENTIALS;

/** Today's launch: --user node --cap-drop ALL. */
const TODAY: ProcessCredentials = { ...ADR_LAUNCH, uids: [1000, 1000, 1000, 1000], gids: [1000, 1000, 1000, 1000], capPrm: 0n, capEff: 0n, capBnd: 0n, noNewPrivs: false };

const launch = (change: Partial<ProcessCredentials>): ProcessCredentials => ({ ...ADR_LAUNCH, ...change });
const withoutCaps = (names: readonly string[]): bigint => 0x1cbn & ~maskOf(names);

test("the ADR launch: root mode, nothing extra", () => {
  assert.equal(classifyLaunch(ADR_LAUNCH), { mode: "root", extraCapabilities: [] });
});

test("legacy: no uid is 0, whatever else the launch gives", () => {
  assert.equal(classifyLaunch(TODAY), { mode: "legacy", uid: 1000 });
  assert.equal(classifyLaunch({ ...TODAY, noNewPrivs: true, capEff: 0x1ffffffffffn, capPrm: 0x1ffffffffffn }), { mode: "legacy", uid: 1000 });
  // the effective uid is the one reported
  assert.equal(classifyLaunch({ ...TODAY, uids: [1000, 1001, 1000, 1000] }), { mode: "legacy", uid: 1001 });
});

const MIXED_FIX = "start the container with --user 0:0 or --user node, never through a set-user-ID program";

test("refuses mixed user ids (a set-user-ID root program, or half a uid change)", () => {
  const cases: ReadonlyArray<readonly [Partial<ProcessCredentials>, string]> = [
    [{ uids: [1000, 0, 0, 0] }, "uid 1000,0,0,0 gid 0,0,0,0"],
    [{ uids: [0, 1000, 1000, 1000] }, "uid 0,1000,1000,1000 gid 0,0,0,0"],
    [{ uids: [1000, 1000, 0, 1000] }, "uid 1000,1000,0,1000 gid 0,0,0,0"],
    [{ uids: [0, 0, 0, 1000] }, "uid 0,0,0,1000 gid 0,0,0,0"],
    [{ gids: [0, 1000, 0, 0] }, "uid 0,0,0,0 gid 0,1000,0,0"],
    [{ gids: [1000, 1000, 1000, 0] }, "uid 0,0,0,0 gid 1000,1000,1000,0"],
  ];
  for (const [change, ids] of cases) {
    assertRefusal(() => classifyLaunch(launch(change)), { exitCode: EXIT.launchRefused, what: `started with mixed user ids (${ids})`, fix: MIXED_FIX });
  }
});

test("refuses root without NoNewPrivs, before looking at capabilities", () => {
  const fix = "add --security-opt no-new-privileges to docker run (Kubernetes: allowPrivilegeEscalation: false)";
  for (const change of [{ noNewPrivs: false }, { noNewPrivs: false, capEff: 0n, capPrm: 0n }]) {
    assertRefusal(() => classifyLaunch(launch(change)), { exitCode: EXIT.launchRefused, what: "started as root without NoNewPrivs", fix });
  }
});

test("refuses root without each of the six, naming the --cap-add flag", () => {
  for (const name of ROOT_CAPABILITIES) {
    const caps = withoutCaps([name]);
    assertRefusal(() => classifyLaunch(launch({ capEff: caps, capPrm: caps, capBnd: caps })), {
      exitCode: EXIT.launchRefused,
      what: `started as root without capability ${name}`,
      fix: `add --cap-add ${name} to docker run`,
    });
  }
});

test("refuses root missing several, all named in kernel bit order", () => {
  const two = withoutCaps(["SETUID", "SETGID"]);
  assertRefusal(() => classifyLaunch(launch({ capEff: two, capPrm: two })), {
    exitCode: EXIT.launchRefused,
    what: "started as root without capabilities SETGID, SETUID",
    fix: "add --cap-add SETGID --cap-add SETUID to docker run",
  });
  assertRefusal(() => classifyLaunch(launch({ capEff: 0n, capPrm: 0n, capBnd: 0n })), {
    exitCode: EXIT.launchRefused,
    what: "started as root without capabilities CHOWN, DAC_OVERRIDE, FOWNER, SETGID, SETUID, SETPCAP",
    fix: "add --cap-add CHOWN --cap-add DAC_OVERRIDE --cap-add FOWNER --cap-add SETGID --cap-add SETUID --cap-add SETPCAP to docker run",
  });
});

test("only the effective set counts: permitted, bounding or ambient alone do not satisfy it", () => {
  const noSetpcap = withoutCaps(["SETPCAP"]);
  assertRefusal(() => classifyLaunch(launch({ capEff: noSetpcap, capPrm: 0x1cbn, capBnd: 0x1cbn, capAmb: 0x1cbn, capInh: 0x1cbn })), {
    exitCode: EXIT.launchRefused,
    what: "started as root without capability SETPCAP",
    fix: "add --cap-add SETPCAP to docker run",
  });
});

test("capabilities beyond the six are reported from every set, in bit order", () => {
  // Docker's default set, as a launcher that forgot --cap-drop ALL would give it
  const dockerDefault = maskOf([
    "CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
    "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
  ]);
  assert.equal(classifyLaunch(launch({ capPrm: dockerDefault, capEff: dockerDefault, capBnd: dockerDefault })), {
    mode: "root",
    extraCapabilities: ["FSETID", "KILL", "NET_BIND_SERVICE", "NET_RAW", "SYS_CHROOT", "MKNOD", "AUDIT_WRITE", "SETFCAP"],
  });
  const cases: ReadonlyArray<readonly [Partial<ProcessCredentials>, string[]]> = [
    [{ capBnd: 0x1cbn | maskOf(["SYS_ADMIN"]) }, ["SYS_ADMIN"]],
    [{ capInh: maskOf(["SYS_PTRACE"]) }, ["SYS_PTRACE"]],
    [{ capAmb: maskOf(["KILL"]), capInh: maskOf(["KILL"]) }, ["KILL"]],
    [{ capPrm: 0x1cbn | maskOf(["NET_ADMIN"]) }, ["NET_ADMIN"]],
    [{ capEff: 0x1cbn | (1n << 45n), capPrm: 0x1cbn | (1n << 45n) }, ["CAP_45"]],
    // the six themselves in the inheritable or ambient set are not "extra"
    [{ capInh: 0x1cbn, capAmb: 0x1cbn }, []],
  ];
  for (const [change, extra] of cases) {
    assert.equal(classifyLaunch(launch(change)), { mode: "root", extraCapabilities: extra }, extra.join(","));
  }
});

test("the launch refusal exit code is 77 (sysexits EX_NOPERM)", () => {
  assert.is(EXIT.launchRefused, 77);
});

test.run();
