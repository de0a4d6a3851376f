/* processes.*: processes that should not be there, judged from a process table and the links read of it. Pure. */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { judgeCapabilityHolders, judgeRootProcesses, judgeSpawner, judgeWorkspaceExecutables, underWorkspace } from "../../../src/self-check/processes.ts";
import type { Readable } from "../../../src/self-check/facts.ts";
import type { ProcessEntry } from "../../../src/self-check/process-table.ts";
import { lineage, parseEnviron } from "../../../src/self-check/judged.ts";

const C0 = 0xc0n;
function proc(pid: number, ppid: number, uid: number, name: string, caps = 0n, amb = caps): ProcessEntry {
  const ids: [number, number, number, number] = [uid, uid, uid, uid];
  return { pid, ppid, name, creds: { uids: ids, gids: ids, groups: [uid], capInh: caps, capPrm: caps, capEff: caps, capAmb: amb, capBnd: C0, noNewPrivs: true } };
}
const exe = (value: string): Readable<string> => ({ ok: true, value });

const Holders = suite("processes.capabilities");
// tini (pid 1), the service (14) and doctor's audit (30, the service's child) hold SETUID and SETGID here, as under ADR 0272's shape, to show that they are left out: process.capabilities judges the service, which in this build holds none.
const body = [proc(1, 0, 1000, "tini", C0), proc(14, 1, 1000, "node", C0), proc(30, 14, 1000, "MainThread", C0), proc(40, 14, 1001, "bash")];

Holders("the service, what is above it, the audit and what started it, and agent processes are left out: pass", () => {
  const verdict = judgeCapabilityHolders(body, 1000, 14, 30, new Map());
  assert.is(verdict.status, "pass", verdict.summary);
  assert.equal(verdict.found.leftOut, [1, 14, 30]);
});

Holders("a child of the service that inherited its ambient capabilities fails, naming them, with the fix to restart the body", () => {
  const table = [...body, proc(50, 14, 1000, "git", C0)];
  const verdict = judgeCapabilityHolders(table, 1000, 14, 30, new Map([[50, exe("/usr/bin/git")]]));
  assert.is(verdict.status, "fail");
  assert.is(verdict.summary, "1 process of uid 1000 besides the service holds capabilities: 50 (/usr/bin/git: SETGID,SETUID); each can make itself uid 0 (setresuid)");
  assert.is(verdict.fix, "end them, and restart the body: only the root phase starts a process of this uid with capabilities (the spawner, docs/security.md); the service and what it runs hold none");
});

Holders("permitted, effective or ambient alone counts; an inheritable set alone does not", () => {
  const onlyAmbient = proc(51, 14, 1000, "x", 0n, C0);
  assert.is(judgeCapabilityHolders([...body, onlyAmbient], 1000, 14, 30, new Map()).status, "fail");
  const inheritable = { ...proc(52, 14, 1000, "y"), creds: { ...proc(52, 14, 1000, "y").creds, capInh: C0 } };
  assert.is(judgeCapabilityHolders([...body, inheritable], 1000, 14, 30, new Map()).status, "pass");
});

Holders("the spawner and what it starts pass when they hold at most SETUID and SETGID; the same names elsewhere, or more, fail", () => {
  // The spawner (found by its command line, as its exe link is closed to the audit), its grab and setpriv.
  const chain = [proc(60, 1, 1000, "MainThread", C0), proc(61, 60, 1000, "setpriv", C0)];
  const cmdlines = new Map([[60, ["clankie-agent-exec", "--spawner"]], [61, ["/usr/bin/setpriv", "--reuid=1001"]]]);
  assert.is(judgeCapabilityHolders([...body, ...chain], 1000, 14, 30, new Map(), cmdlines).status, "pass");
  // Without the spawner's command line, or holding more than the two, they are flagged.
  const unnamed = judgeCapabilityHolders([...body, ...chain], 1000, 14, 30, new Map());
  assert.is(unnamed.status, "fail");
  assert.is((unnamed.found.holders as { count: number }).count, 2);
  const more = judgeCapabilityHolders([...body, chain[0]!, proc(62, 60, 1000, "perl", C0 | 1n)], 1000, 14, 30, new Map(), cmdlines);
  assert.is(more.status, "fail");
  assert.equal((more.found.holders as { shown: Array<{ pid: number }> }).shown.map((h) => h.pid), [62]);
});

const Processes = suite("processes");
const links = (table: ProcessEntry[], exes: Record<number, string>) => new Map(table.map((e) => [e.pid, { ok: true as const, value: exes[e.pid]! }]));


Processes("root: the audit and what started it are left out; any other root process fails (warns single-uid)", () => {
  const table = [proc(1, 0, 1000, "tini"), proc(14, 1, 1000, "node"), proc(40, 0, 0, "sh"), proc(41, 40, 0, "MainThread")];
  assert.equal(lineage(table, 41), [41, 40]);
  assert.is(judgeRootProcesses(table, 41, "separated").status, "pass");
  const other = [...table, proc(50, 0, 0, "sleep")];
  const failed = judgeRootProcesses(other, 41, "separated");
  assert.is(failed.status, "fail");
  assert.match(failed.summary, /1 process of uid 0 still running: 50 \(sleep\)/);
  assert.is(judgeRootProcesses(other, 41, "single-uid").status, "warn");
});

Processes("workspace executables fail; unreadable links warn, never pass", () => {
  const table = [proc(1, 0, 1000, "tini"), proc(14, 1, 1000, "node"), proc(20, 14, 1000, "x"), proc(30, 14, 1000, "audit")];
  const exes: Record<number, string> = { 1: "/usr/bin/tini", 14: "/usr/local/bin/node", 20: "/workspace/bin/x (deleted)" };
  const failed = judgeWorkspaceExecutables(table, 1000, 30, links(table, exes), "separated");
  assert.is(failed.status, "fail");
  assert.equal((failed.found.underWorkspace as any).shown, [{ pid: 20, name: "x", exe: "/workspace/bin/x (deleted)" }]);
  const clean = judgeWorkspaceExecutables(table.slice(0, 2), 1000, 30, links(table, exes), "separated");
  assert.is(clean.status, "pass");
  const hidden = judgeWorkspaceExecutables(table.slice(0, 2), 1000, 30, new Map(table.map((e) => [e.pid, { ok: false as const, error: "readlink /proc/1/exe: EACCES" }])), "separated");
  assert.is(hidden.status, "warn");
  assert.ok(underWorkspace("/workspace"));
  assert.not.ok(underWorkspace("/workspaces/x"));
});

Processes("environ parsing", () => {
  assert.equal(parseEnviron(Buffer.from("A=1\0B=x=y\0junk\0")), { A: "1", B: "x=y" });
});

const Spawner = suite("processes.spawner");
const SPAWNER_LINE = ["clankie-agent-exec", "--spawner"];

Spawner("one spawner passes; its own child between fork and exec (the spawner's command line still) is no second one; two side by side, or none, fail", () => {
  const service = [proc(1, 0, 0, "perl"), proc(14, 1, 1000, "node")];
  const one = judgeSpawner([...service, proc(20, 1, 1000, "clankie-agent-e", C0)], 1000, new Map([[20, SPAWNER_LINE]]), "separated");
  assert.is(one.status, "pass", one.summary);
  const forking = judgeSpawner([...service, proc(20, 1, 1000, "clankie-agent-e", C0), proc(21, 20, 1000, "clankie-agent-e", C0)], 1000, new Map([[20, SPAWNER_LINE], [21, SPAWNER_LINE]]), "separated");
  assert.is(forking.status, "pass", forking.summary);
  const two = judgeSpawner([...service, proc(20, 1, 1000, "clankie-agent-e", C0), proc(21, 1, 1000, "clankie-agent-e", C0)], 1000, new Map([[20, SPAWNER_LINE], [21, SPAWNER_LINE]]), "separated");
  assert.equal([two.status, two.summary], ["fail", "2 spawners run: only the root phase starts one (want exactly one)"]);
  const none = judgeSpawner(service, 1000, new Map(), "separated");
  assert.equal([none.status, none.summary], ["fail", "no spawner runs: no agent work can start (want exactly one)"]);
});

Processes.run();

Holders.run();

Spawner.run();
