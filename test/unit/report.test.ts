import { lstatSync } from "node:fs";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { EXIT } from "../../src/constants.ts";
import { formatRefusal, osCall, OsFailure, osFailure, printablePath, Refusal, setProgramName } from "../../src/report.ts";

test("formatRefusal: one line, program: what; fix", () => {
  assert.is(formatRefusal("started as root without NoNewPrivs", "add --security-opt no-new-privileges"), "clankie-separate: started as root without NoNewPrivs; add --security-opt no-new-privileges");
});

test("formatRefusal: line breaks in either part become one space", () => {
  assert.is(formatRefusal("a\nb\r\nc\rd", "e\n\n\nf"), "clankie-separate: a b c d; e f");
  assert.not.match(formatRefusal("x\n", "\ny"), /[\r\n]/);
});

test("formatRefusal: the program name follows setProgramName", () => {
  try {
    setProgramName("clankie-agent-exec");
    assert.is(formatRefusal("started by root", "run it as node"), "clankie-agent-exec: started by root; run it as node");
  } finally {
    setProgramName("clankie-separate");
  }
  assert.is(formatRefusal("w", "f"), "clankie-separate: w; f");
});

test("printablePath: ordinary paths are unchanged", () => {
  for (const path of ["/state/install/server.js", "/workspace/a b/c-d_e.f", "relative/path", "", "/~!@#$%^&*()+={}[]|:;'<>,?"]) {
    assert.is(printablePath(path), path);
    assert.is(printablePath(Buffer.from(path)), path);
  }
});

test("printablePath: control characters, quotes, backslashes and high bytes are escaped", () => {
  const cases: ReadonlyArray<readonly [string | Buffer, string]> = [
    ["/a\nb", "/a\\nb"],
    ["/a\rb\tc", "/a\\rb\\tc"],
    ["/\u001b[31mred", "/\\u001b[31mred"],
    ["/\u0000nul", "/\\u0000nul"],
    ["/\u007f", "/\\x7f"],
    ["/caf\u00e9", "/caf\\xe9"],
    ["/\u0085next-line", "/\\x85next-line"],
    ['/say "hi"', '/say \\"hi\\"'],
    ["/back\\slash", "/back\\\\slash"],
    ["/\\x41", "/\\\\x41"], // a literal backslash-x stays distinguishable from an escape
    [Buffer.from([0x2f, 0xff, 0xfe, 0x0a]), "/\\xff\\xfe\\n"],
    [Buffer.from("/café", "utf8"), "/caf\\xc3\\xa9"],
    [Buffer.from([0x2f, 0x80]), "/\\x80"],
  ];
  for (const [path, want] of cases) assert.is(printablePath(path), want, JSON.stringify(path.toString()));
});

test("printablePath: the result never holds a control character or a byte above 0x7e", () => {
  const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  // eslint-disable-next-line no-control-regex
  assert.not.match(printablePath(all), /[\u0000-\u001f\u007f-\u00ff]/);
});

test("Refusal: what, fix and exit code", () => {
  const refusal = new Refusal(EXIT.launchRefused, "what", "fix");
  assert.instance(refusal, Error);
  assert.is(refusal.message, "what");
  assert.is(refusal.fix, "fix");
  assert.is(refusal.exitCode, 77);
});

test("osFailure: names the call, the printable path and the errno code; exit 71", () => {
  const enoent = Object.assign(new Error("ENOENT: no such file"), { code: "ENOENT" });
  const failure = osFailure("lstat", "/state/x", enoent);
  assert.instance(failure, OsFailure);
  assert.is(failure.exitCode, EXIT.osError);
  assert.is(failure.exitCode, 71);
  assert.is(failure.syscall, "lstat");
  assert.is(failure.path, "/state/x");
  assert.is(failure.code, "ENOENT");
  assert.is(failure.message, "lstat /state/x: ENOENT");
  const bytes = osFailure("open", Buffer.from([0x2f, 0x0a, 0xff]), Object.assign(new Error(), { code: "EACCES" }));
  assert.is(bytes.path, "/\\n\\xff");
  assert.is(bytes.message, "open /\\n\\xff: EACCES");
  assert.is(osFailure("read", "/p", "boom").code, "boom");
  assert.is(osFailure("read", "/p", undefined).code, "undefined");
});

test("osCall: the call's value, or its failure as the OsFailure naming the call and the path", () => {
  assert.is(osCall("read", "/p", () => 42), 42);
  const failure = (() => {
    try {
      osCall("lstat", "/state/gone", () => lstatSync("/nonexistent-clankie-path"));
    } catch (error) {
      return error;
    }
  })();
  assert.instance(failure, OsFailure);
  assert.is((failure as OsFailure).message, "lstat /state/gone: ENOENT");
});

test.run();
