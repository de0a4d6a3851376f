/* kernel.*: each setting's safe value passes, the other warns with its meaning. Pure, no privileges. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { judgeKernelSetting, KERNEL_SETTINGS } from "../../../src/self-check/kernel.ts";

const Kernel = suite("kernel");

Kernel("each setting: the safe value passes, the other warns with its meaning, absence is judged, a read error warns", () => {
  const [tiocsti, hardlinks, symlinks] = KERNEL_SETTINGS;
  assert.is(judgeKernelSetting(tiocsti!, { ok: true, value: "0\n" }).status, "pass");
  const on = judgeKernelSetting(tiocsti!, { ok: true, value: "1\n" });
  assert.is(on.status, "warn");
  assert.match(on.summary, /^1: TIOCSTI works/);
  assert.match(on.fix!, /sysctl -w dev\.tty\.legacy_tiocsti=0/);
  assert.match(judgeKernelSetting(tiocsti!, { ok: false, error: "read x: ENOENT" }).summary, /^absent: no such setting \(Linux before 6\.2\)/);
  assert.is(judgeKernelSetting(hardlinks!, { ok: true, value: "1" }).status, "pass");
  assert.is(judgeKernelSetting(hardlinks!, { ok: true, value: "0" }).status, "warn");
  assert.is(judgeKernelSetting(symlinks!, { ok: true, value: "1" }).status, "pass");
  assert.is(judgeKernelSetting(symlinks!, { ok: true, value: "0" }).status, "warn");
  assert.match(judgeKernelSetting(symlinks!, { ok: false, error: "read x: EACCES" }).summary, /could not read/);
});

Kernel("protected_regular and protected_fifos: 1 and 2 pass, 0 and absence warn with the host's sysctl and the service's own remedy", () => {
  for (const id of ["kernel.protected-regular", "kernel.protected-fifos"]) {
    const setting = KERNEL_SETTINGS.find((s) => s.id === id)!;
    assert.is(setting.path, `/proc/sys/fs/${id.slice("kernel.".length).replace("-", "_")}`);
    const best = judgeKernelSetting(setting, { ok: true, value: "2\n" });
    assert.equal([best.status, best.fix], ["pass", null]);
    assert.match(best.summary, /^2: an O_CREAT open of .* is refused, in group-writable sticky directories too/);
    const one = judgeKernelSetting(setting, { ok: true, value: "1\n" });
    assert.is(one.status, "pass");
    assert.match(one.summary, /^1: .*2 also covers group-writable sticky directories/);
    const off = judgeKernelSetting(setting, { ok: true, value: "0\n" });
    assert.is(off.status, "warn");
    assert.match(off.summary, /^0: off: the agent can create .* in \/tmp under a name the service will open/);
    assert.match(off.fix!, new RegExp(`^on the host: sysctl -w fs\\.${setting.path.split("/").pop()}=2 .*O_EXCL`));
    assert.match(judgeKernelSetting(setting, { ok: false, error: "read x: ENOENT" }).summary, /^absent: no such setting \(Linux before 4\.19\)/);
    assert.is(judgeKernelSetting(setting, { ok: false, error: "read x: ENOENT" }).status, "warn");
    assert.match(judgeKernelSetting(setting, { ok: true, value: "7" }).summary, /^7: unexpected value 7/);
  }
});

Kernel.run();
