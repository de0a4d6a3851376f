import type { Stats } from "node:fs";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { judgePrivateJobs, type PrivateRoot } from "../../../src/self-check/private-jobs.ts";
import type { ProcessEntry } from "../../../src/self-check/process-table.ts";
import { imageIdentities } from "../../helpers/identities.ts";

const ids = { ...imageIdentities(), privateGroups: [{ index: 0, gid: 1100 }, { index: 1, gid: 1101 }] };
const dir = (uid: number, mode: number) => ({ isDirectory: () => true, uid, mode: 0o40000 | mode }) as unknown as Stats;
const root = (leases: string[], mode = 0o711, uid = 1000): PrivateRoot => ({ ok: true, value: { stats: dir(uid, mode), leases } });
const holding = (gid: number) => ({ pid: 9, ppid: 1, name: "sleep", creds: { uids: [1001, 1001, 1001, 1001], gids: [1001, 1001, 1001, 1001], groups: [1001, 1002, gid] } }) as unknown as ProcessEntry;

test("judgePrivateJobs: the pool, the root and its leases, held or not", () => {
  const verdict = judgePrivateJobs(ids, root(["0", "1"]), [holding(1100)], "separated", 1000);
  assert.is(verdict.status, "pass");
  assert.is(verdict.summary, "2 of 16 private-job groups; 2 leases in /run/clankie-private (0, 1), 1 held by no live process (taken back when the pool is exhausted, removed at the next start)");
  assert.equal((verdict.found as { leases: unknown }).leases, [{ index: "0", gid: 1100, held: true }, { index: "1", gid: 1101, held: false }]);
});

test("judgePrivateJobs: a root that is not the service's 0711 directory fails when separated; no pool warns", () => {
  assert.is(judgePrivateJobs(ids, root([], 0o777), [], "separated", 1000).status, "fail");
  assert.is(judgePrivateJobs(ids, root([], 0o711, 0), [], "separated", 1000).status, "fail");
  assert.is(judgePrivateJobs(ids, { ok: false, error: "ENOENT", code: "ENOENT" }, [], "separated", 1000).status, "warn");
  assert.is(judgePrivateJobs(ids, { ok: false, error: "EACCES", code: "EACCES" }, [], "separated", 1000).status, "fail");
  assert.is(judgePrivateJobs(ids, { ok: false, error: "ENOENT", code: "ENOENT" }, [], "single-uid", 1000).status, "pass");
  assert.is(judgePrivateJobs({ ...ids, privateGroups: [] }, root([]), [], "separated", 1000).status, "warn");
});

test.run();
