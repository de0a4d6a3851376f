import { suite } from "uvu";
import * as assert from "uvu/assert";
import { EXIT, SYSTEM_PATH } from "../../../src/constants.ts";
import { runCapture, startCapture } from "../../../src/exec/capture.ts";
import { assertRefusal } from "../../helpers/refusal.ts";

const capture = suite("runCapture and startCapture");

capture("both return the same result: stdout, stderr, status; the environment is the allowlist plus what is named", async () => {
  process.env.CAPTURE_NAMED = "named";
  process.env.CAPTURE_SECRET = "not passed";
  try {
    const request = { command: "/bin/sh", args: ["-c", 'echo "out $CAPTURE_NAMED ${CAPTURE_SECRET-absent} $PATH"; echo err >&2; exit 3'], pass: ["CAPTURE_NAMED"] };
    const sync = runCapture(request);
    const later = await startCapture(request);
    for (const result of [sync, later]) {
      assert.is(result.path, "/bin/sh");
      assert.is(result.stdout.toString(), `out named absent ${SYSTEM_PATH}\n`);
      assert.is(result.stderr.toString(), "err\n");
      assert.is(result.status, 3);
      assert.is(result.signal, null);
      assert.is(result.error, undefined);
    }
  } finally {
    delete process.env.CAPTURE_NAMED;
    delete process.env.CAPTURE_SECRET;
  }
});

capture("startCapture runs beside this process: it has started before the promise is awaited", async () => {
  const pending = startCapture({ command: "/bin/sh", args: ["-c", "sleep 0.3; echo done"] });
  const blockedUntil = Date.now() + 400;
  while (Date.now() < blockedUntil) {
    // synchronous work, as the audit's /state walk
  }
  const started = Date.now();
  const result = await pending;
  assert.is(result.stdout.toString(), "done\n");
  assert.ok(Date.now() - started < 250, "the program had already finished while this process was busy");
});

capture("startCapture: the timeout kills (ETIMEDOUT), the output limit kills (ENOBUFS), input reaches stdin", async () => {
  const slow = await startCapture({ command: "/bin/sleep", args: ["5"], timeoutMs: 100 });
  assert.is(slow.error, "ETIMEDOUT");
  assert.is(slow.signal, "SIGKILL");
  const loud = await startCapture({ command: "/usr/bin/yes", args: [], maxBytes: 4096 });
  assert.is(loud.error, "ENOBUFS");
  assert.ok(loud.stdout.length <= 4096 + 65536);
  const echoed = await startCapture({ command: "/bin/cat", args: [], input: "through stdin" });
  assert.is(echoed.stdout.toString(), "through stdin");
  const ignored = await startCapture({ command: "/bin/true", args: [], input: Buffer.alloc(1 << 20) });
  assert.is(ignored.status, 0, "a program that never reads its input does not crash the caller (EPIPE)");
});

capture("dropCapabilities: the program runs in place of setpriv (same pid), its inheritable and ambient sets empty; the result names the program", async () => {
  const request = { command: "/bin/sh", args: ["-c", 'echo "$$ $PPID"; grep -E "^Cap(Inh|Amb):" /proc/self/status'], dropCapabilities: true };
  for (const result of [runCapture(request), await startCapture(request)]) {
    assert.is(result.path, "/bin/sh");
    assert.is(result.status, 0, result.stderr.toString());
    const [pids, inh, amb] = result.stdout.toString().trim().split("\n");
    assert.is(Number(pids!.split(" ")[1]), process.pid, "sh is this process's own child: setpriv exec'd it, no process between");
    assert.is(inh, "CapInh:\t0000000000000000");
    assert.is(amb, "CapAmb:\t0000000000000000");
  }
});

capture("both refuse a program the exec rules refuse, before anything starts", () => {
  for (const start of [runCapture, startCapture] as const) {
    assertRefusal(() => start({ command: "no-such-program-here", args: [] }), {
      exitCode: EXIT.notFound,
      what: `no-such-program-here: not found in ${SYSTEM_PATH}`,
      fix: "install it in a system directory or give its absolute path",
    });
  }
});

capture.run();
