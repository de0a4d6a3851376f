import { spawnSync } from "node:child_process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { EXIT, SYSTEM_PATH } from "../../../src/constants.ts";
import { buildEnvironment, carried, uncarried } from "../../../src/exec/environment.ts";
import { CODE_LOADING_NAMES } from "../../helpers/code-loading.ts";
import { TERMINAL_ENV } from "../../helpers/environments.ts";
import { assertRefusal, catchRefusal } from "../../helpers/refusal.ts";

const env = suite("buildEnvironment");

env("nothing asked: only the fixed PATH", () => {
  assert.equal(buildEnvironment(), { PATH: SYSTEM_PATH });
  assert.equal(buildEnvironment({}), { PATH: SYSTEM_PATH });
});

env("from: the allowlist only (exact names, and the LC_ prefix)", () => {
  const kept = { ...TERMINAL_ENV, LC_: "x" };
  const from = { ...kept, TERMINAL: "no", LCX: "no", lang: "no", HOME: "/root", LD_PRELOAD: "/x.so", SECRET: "s", GONE: undefined };
  assert.equal(buildEnvironment({ from }), { ...kept, PATH: SYSTEM_PATH });
});

env("pass copies named variables; set overrides both; PATH is always the fixed one", () => {
  const from = { TERM: "xterm", TOKEN: "from-env", OTHER: "o", PATH: "/tmp", EMPTY: "" };
  assert.equal(buildEnvironment({ from, pass: ["TOKEN", "EMPTY", "MISSING", "PATH"], set: { TERM: "dumb", NEW: "n", PATH: "/workspace/bin" } }), {
    TERM: "dumb",
    TOKEN: "from-env",
    EMPTY: "",
    NEW: "n",
    PATH: SYSTEM_PATH,
  });
});

env("the caller's objects are not changed", () => {
  const from = { TERM: "xterm" };
  const set = { A: "1" };
  const result = buildEnvironment({ from, set });
  result.B = "2";
  assert.equal(from, { TERM: "xterm" });
  assert.equal(set, { A: "1" });
});

env("a code-loading variable cannot be passed (it would reach prlimit and setpriv, which hold SETUID)", () => {
  assert.is(catchRefusal(() => buildEnvironment({ from: { LD_PRELOAD: "/x.so" }, pass: ["LD_PRELOAD"] })).exitCode, EXIT.usage);
});

env("a code-loading variable cannot be set either: every name of test/helpers/code-loading.ts, refused (64) as pass refuses it; control: the other names of the same request are set", () => {
  for (const name of CODE_LOADING_NAMES) {
    const want = { exitCode: EXIT.usage, what: `${name}: variables that load code are never passed to a child`, fix: "do not pass it" };
    assertRefusal(() => buildEnvironment({ from: { [name]: "x" }, pass: [name] }), want);
    assertRefusal(() => buildEnvironment({ from: {}, set: { TOKEN: "t", [name]: "/workspace/x.so" } }), want);
  }
  assert.equal(buildEnvironment({ from: {}, set: { TOKEN: "t", LD: "l", XLD_PRELOAD: "x", NODE_OPTIONSX: "n" } }), { TOKEN: "t", LD: "l", XLD_PRELOAD: "x", NODE_OPTIONSX: "n", PATH: SYSTEM_PATH });
});

env("a name with \"=\" (or an empty one) is refused in set and pass (64); control: Node's spawn hands such a name to the child as the variable before the \"=\"", () => {
  const child = spawnSync("/usr/bin/env", [], { env: { "GCONV_PATH=/workspace/g": "x" }, encoding: "utf8" });
  assert.is(child.stdout, "GCONV_PATH=/workspace/g=x\n");
  for (const name of ["GCONV_PATH=/workspace/g", "NODE_OPTIONS=--require=/workspace/x.js", "TOKEN=", "="]) {
    const want = { exitCode: EXIT.usage, what: `${JSON.stringify(name)} is not a variable name: a child reads the name up to the first "="`, fix: 'give each variable by its name alone, without "="' };
    assertRefusal(() => buildEnvironment({ from: {}, set: { [name]: "x" } }), want);
    assertRefusal(() => buildEnvironment({ from: {}, pass: [name] }), want);
  }
  assertRefusal(() => buildEnvironment({ from: {}, set: { "": "x" } }), { exitCode: EXIT.usage, what: '"" is not a variable name: a child reads the name up to the first "="' });
});

env("inherited properties are not variables: passing constructor passes nothing", () => {
  const env = buildEnvironment({ from: {}, pass: ["constructor", "toString", "__proto__"] });
  assert.equal(env, { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" });
});

env("carried and uncarried: every name behind CLANKIE_ENV_ and back; a carried one wins over one set by name; the bare prefix is a name of its own", () => {
  const agent = { LANG: "xx_YY.UTF-8", "ODD NAME": "a\nb", CLANKIE_ENV_X: "nested" };
  assert.equal(carried(agent), { CLANKIE_ENV_LANG: "xx_YY.UTF-8", "CLANKIE_ENV_ODD NAME": "a\nb", CLANKIE_ENV_CLANKIE_ENV_X: "nested" });
  assert.equal(uncarried(carried(agent)), agent);
  assert.equal(uncarried({ LANG: "C", CLANKIE_ENV_LANG: "de_DE.UTF-8", CLANKIE_ENV_: "x", TERM: "dumb" }), { LANG: "de_DE.UTF-8", CLANKIE_ENV_: "x", TERM: "dumb" });
});

env.run();
