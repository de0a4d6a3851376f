import { test } from "uvu";
import * as assert from "uvu/assert";
import { CODE_LOADING_NAMES } from "../../helpers/code-loading.ts";
import { serviceEnvironment } from "../../../src/entrypoint/service-env.ts";
import { SERVICE_OWN_ENV } from "../../helpers/environments.ts";
import { imageIdentities } from "../../helpers/identities.ts";

const ids = imageIdentities();

const OURS = SERVICE_OWN_ENV;

test("a plain launcher environment: kept, plus the fixed PATH, node's identity and the CLANKIE_ variables", () => {
  const launcher = { PATH: "/workspace/bin:/usr/bin", HOME: "/root", HOSTNAME: "body", TERM: "xterm", DISCORD_TOKEN: "t", NODE_ENV: "production" };
  assert.equal(serviceEnvironment(launcher, ids), {
    env: { HOSTNAME: "body", TERM: "xterm", DISCORD_TOKEN: "t", NODE_ENV: "production", ...OURS },
    dropped: [],
  });
});

test("PATH, HOME, USER and LOGNAME are always ours, even when the launcher has none", () => {
  const { env } = serviceEnvironment({}, ids);
  assert.equal(env, OURS);
  const spoofed = serviceEnvironment({ PATH: "/tmp", HOME: "/state", USER: "root", LOGNAME: "root" }, ids);
  assert.equal(spoofed.env, OURS);
  assert.equal(spoofed.dropped, []);
});

test("every code-loading variable is dropped and listed, sorted", () => {
  const launcher: Record<string, string> = {};
  const names = CODE_LOADING_NAMES;
  for (const name of names) launcher[name] = "/workspace/evil";
  launcher.KEEP = "1";
  const { env, dropped } = serviceEnvironment(launcher, ids);
  assert.equal(dropped, [...names].sort());
  assert.equal(env, { KEEP: "1", ...OURS });
});

test("the LD_ prefix covers every ld.so(8) variable", () => {
  const launcher = { LD_PRELOAD: "x", LD_LIBRARY_PATH: "x", LD_AUDIT: "x", LD_BIND_NOW: "1", LD_: "x", GLIBC_TUNABLES: "x", NODE_OPTIONS: "--require /workspace/x.js" };
  const { env, dropped } = serviceEnvironment(launcher, ids);
  assert.equal(dropped, ["GLIBC_TUNABLES", "LD_", "LD_AUDIT", "LD_BIND_NOW", "LD_LIBRARY_PATH", "LD_PRELOAD", "NODE_OPTIONS"]);
  assert.equal(env, OURS);
});

test("names are matched exactly: near misses are not code-loading", () => {
  const launcher = { XLD_PRELOAD: "1", ld_preload: "1", NODE_OPTIONS_X: "1", MY_NODE_OPTIONS: "1", PYTHONUNBUFFERED: "1", ENVIRONMENT: "prod" };
  const { env, dropped } = serviceEnvironment(launcher, ids);
  assert.equal(dropped, []);
  assert.equal(env, { ...launcher, ...OURS });
});

test("a launcher cannot pre-declare the agent uid or the separation", () => {
  const launcher = { CLANKIE_SEPARATION: "0", CLANKIE_AGENT_USER: "node", CLANKIE_AGENT_UID: "0", CLANKIE_AGENT_EXEC: "/workspace/fake-shim", CLANKIE_AGENT_ANYTHING: "x" };
  const { env, dropped } = serviceEnvironment(launcher, ids);
  assert.equal(env, OURS);
  assert.equal(dropped, ["CLANKIE_AGENT_ANYTHING", "CLANKIE_AGENT_EXEC", "CLANKIE_AGENT_UID", "CLANKIE_AGENT_USER", "CLANKIE_SEPARATION"]);
});

test("undefined values are skipped, empty values kept", () => {
  const { env, dropped } = serviceEnvironment({ GONE: undefined, EMPTY: "", LD_PRELOAD: undefined }, ids);
  assert.equal(env, { EMPTY: "", ...OURS });
  assert.equal(dropped, []);
});

test("the launcher's object is not changed", () => {
  const launcher = { LD_PRELOAD: "x", PATH: "/tmp" };
  serviceEnvironment(launcher, ids);
  assert.equal(launcher, { LD_PRELOAD: "x", PATH: "/tmp" });
});

test("every CLANKIE_* of the launcher is dropped, CLANKIE_BOUNDARY included", () => {
  const { env, dropped } = serviceEnvironment({ CLANKIE_BOUNDARY: "complete", CLANKIE_OTHER: "x", KEEP: "1" }, imageIdentities());
  assert.is(env.CLANKIE_BOUNDARY, undefined);
  assert.is(env.CLANKIE_OTHER, undefined);
  assert.equal(dropped, ["CLANKIE_BOUNDARY", "CLANKIE_OTHER"]);
  assert.is(env.KEEP, "1");
});

test.run();
