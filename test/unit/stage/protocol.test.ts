/*
 * The stage protocol's one declaration (src/stage/protocol.ts) against both
 * sides: stage.ts's roleKeys writes, for every role and every shape of
 * request, exactly the keys the declaration lists for it, in its order, each
 * value of its form; and the program perl runs holds the declaration's
 * tables, so that perl refuses what the declaration refuses.
 */
import { spawnSync } from "node:child_process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { confinementKeys, NO_EXTRA_CONFINEMENT } from "../../../src/confinement.ts";
import { AGENT_OPTION_KEYS, REPEATED_STAGE_KEYS, STAGE_KEY_FORMS, STAGE_ROLE_KEYS, type StageKey } from "../../../src/stage/protocol.ts";
import { parseAgentExecArgs } from "../../../src/agent-exec/cli.ts";
import { STAGE_SOURCE, type StageRequest } from "../../../src/stage/stage.ts";
import { stageArgv } from "../../../src/stage/stage-argv.ts";
import { keysOf } from "../../helpers/stage-keys.ts";

const test = suite("stage protocol");

const identity = { program: "clankie-agent-exec", uid: 1001, gid: 1001, groups: [1002, 1001], caps: { inh: 0n, prm: 0n, eff: 0n, amb: 0n } };
const lease = "/run/clankie-private/3";
const run = { path: "/usr/bin/env", argv: ["env"] };

/** Every shape each role's request takes: optional fields given and not, repeated keys there and not. */
const REQUESTS: StageRequest[] = [
  { ...identity, program: "clankie-separate", role: "service", caps: { inh: 0xc0n, prm: 0xc0n, eff: 0xc0n, amb: 0xc0n }, bounding: 0xc0n, umask: 0o027, action: run },
  { ...identity, role: "agent", options: { nproc: "" }, session: "own", keepFds: [], umask: 0o002, cwd: "/workspace", confinement: confinementKeys(NO_EXTRA_CONFINEMENT, { arch: "x64", topLevel: [] }), action: run },
  { ...identity, role: "agent", options: { nproc: "512" }, session: "new", keepFds: [17, 20], umask: 0o002, cwd: "/workspace/a b\nc", confinement: confinementKeys({ ...NO_EXTRA_CONFINEMENT, strict: true, allowRead: ["/opt"], denyConnect: [80], denyBind: [22], network: "none" }, { arch: "x64", topLevel: ["/usr"] }), startedFd: 17, action: run },
  { ...identity, role: "agent", options: { nproc: "1" }, session: "new", keepFds: [], umask: 0o002, cwd: "/workspace", confinement: confinementKeys({ ...NO_EXTRA_CONFINEMENT, privateDir: lease }, { arch: "x64", topLevel: ["/usr"] }), privateDir: lease, startedFd: 1048575, action: run },
  { ...identity, role: "signal", keepFds: [], action: { signal: "SIGKILL", pgid: 4242 } },
  { ...identity, role: "cleanup", keepFds: [], lease, group: 1103, action: { path: "/usr/bin/find", argv: ["find", lease, "-delete"] } },
  { ...identity, role: "cleanup", keepFds: [], lease, group: 1103, startedFd: 18, action: { path: "/usr/bin/find", argv: ["find", lease, "-delete"] } },
];


/** What the declaration says of `keys` for `role`: the problems, none when they conform. */
function problems(role: keyof typeof STAGE_ROLE_KEYS, keys: readonly string[]): string[] {
  const found: string[] = [];
  const declared: readonly StageKey[] = STAGE_ROLE_KEYS[role];
  let at = 0;
  for (const key of declared) {
    const repeated = REPEATED_STAGE_KEYS.includes(key);
    let count = 0;
    while (at < keys.length && keys[at]!.startsWith(`${key}=`)) {
      const value = keys[at]!.slice(key.length + 1);
      if (!new RegExp(`^(?:${STAGE_KEY_FORMS[key]})$`).test(value)) found.push(`${key}=${JSON.stringify(value)} is not of its form`);
      count += 1;
      at += 1;
    }
    if (!repeated && count !== 1) found.push(`${key}= ${count} times`);
  }
  if (at < keys.length) found.push(`${keys[at]} is not where the declaration has it, or not declared`);
  return found;
}

test("every role's keys, for every shape of request, are the declaration's, in its order, each of its form", () => {
  const seen = new Set<string>();
  for (const request of REQUESTS) {
    const { keys } = keysOf(stageArgv(request), request.role);
    assert.equal(problems(request.role, keys), [], `${request.role}: ${keys.join(" ").slice(0, 400)}`);
    for (const key of keys) seen.add(`${request.role}:${key.slice(0, key.indexOf("="))}`);
  }
  // Every declared key of every role was written at least once: the requests above reach all of them.
  for (const [role, keys] of Object.entries(STAGE_ROLE_KEYS)) for (const key of keys) assert.ok(seen.has(`${role}:${key}`), `${role}:${key} never written`);
});

test("the check above catches a key out of place, a key missing or twice, an undeclared key and a value of another form", () => {
  const { keys } = keysOf(stageArgv(REQUESTS[4]!), "signal");
  assert.equal(problems("signal", keys), []);
  assert.equal(problems("signal", [...keys].reverse()).length > 0, true, "reversed");
  assert.equal(problems("signal", keys.filter((k) => !k.startsWith("pgid="))), ["pgid= 0 times"]);
  assert.equal(problems("signal", [...keys, keys.at(-1)!]), ["pgid= 2 times"]);
  assert.equal(problems("signal", [...keys, "bnd=0"]), ["bnd=0 is not where the declaration has it, or not declared"]);
  assert.equal(problems("signal", keys.map((k) => (k.startsWith("signal=") ? "signal=term" : k))), ['signal="term" is not of its form']);
  assert.equal(problems("signal", keys.map((k) => (k.startsWith("pgid=") ? "pgid=1" : k))), ['pgid="1" is not of its form'], "the whole value, not a part");
});

test("the signal form takes every signal README's table says the shim delivers, USR1 and USR2 among them, and no other spelling", () => {
  // Written out, not read from AGENT_SIGNALS: the list the shim's --signal and killSignal document.
  const delivered = ["HUP", "INT", "QUIT", "KILL", "USR1", "USR2", "TERM", "CONT", "STOP", "TSTP", "WINCH"];
  const form = new RegExp(`^(?:${STAGE_KEY_FORMS.signal})$`);
  for (const name of delivered) assert.ok(form.test(name), `signal=${name} is refused by the stage's form`);
  for (const name of ["term", "SIGTERM", "USR3", "1", "USR1 "]) assert.not.ok(form.test(name), `signal=${JSON.stringify(name)} passes the form`);
});

test("the options the shim hands the stage as they are (cli.ts's stageOptions) are the declared AGENT_OPTION_KEYS, agent keys, each of its form", () => {
  for (const argv of [["--", "x"], ["--nproc", "1048576", "--", "x"], ["--nproc=1", "--", "x"]]) {
    const request = parseAgentExecArgs(argv);
    assert.is(request.kind, "run");
    if (request.kind !== "run") return;
    assert.equal(Object.keys(request.stageOptions).sort(), [...AGENT_OPTION_KEYS].sort(), argv.join(" "));
    for (const [key, value] of Object.entries(request.stageOptions)) {
      assert.ok((STAGE_ROLE_KEYS.agent as readonly string[]).includes(key), key);
      assert.ok(new RegExp(`^(?:${STAGE_KEY_FORMS[key as StageKey]})$`).test(value), `${key}=${value}`);
    }
  }
});

test("the program perl runs holds the declaration's tables: each role's keys and each form, once", () => {
  for (const [role, keys] of Object.entries(STAGE_ROLE_KEYS)) assert.ok(STAGE_SOURCE.includes(`  ${role} => [qw(${keys.join(" ")})],`), role);
  for (const [key, form] of Object.entries(STAGE_KEY_FORMS)) assert.ok(STAGE_SOURCE.includes(`'${key}' => '${form}',`), key);
  assert.not.ok(STAGE_SOURCE.includes("@PROTOCOL@"));
  // perl reads each form as JavaScript does: it accepts and refuses the same values.
  const samples: [StageKey, string][] = [["pgid", "1"], ["pgid", "42"], ["cwd", "/a\nb"], ["cwd", "a"], ["private", ""], ["private", "/run/clankie-private/100"], ["groups", "1,2"], ["groups", "1,"], ["started", "0"], ["nproc", ""]];
  for (const [key, value] of samples) {
    const answer = spawnSync("/usr/bin/perl", ["-e", 'my ($key, $form, $value) = @ARGV; print $value =~ /\\A($form)\\z/s ? "yes" : "no"', key, STAGE_KEY_FORMS[key], value], { encoding: "utf8" }).stdout;
    assert.is(answer === "yes", new RegExp(`^(?:${STAGE_KEY_FORMS[key]})$`).test(value), `${key}=${JSON.stringify(value)}: perl says ${answer}`);
  }
});

test.run();
