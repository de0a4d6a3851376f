/* The process table's fields beyond the credentials: name, parent, seccomp. Pure, and one real read of this namespace's /proc. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { parseProcessStatus, parseSeccompStatus, readProcessTable } from "../../../src/self-check/process-table.ts";

const STATUS = ["Name:\tMainThread", "Threads:\t11", "PPid:\t3", "Uid:\t1001\t1001\t1001\t1001", "Gid:\t1001\t1001\t1001\t1001", "Groups:\t1001", "CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t00000000000000c0", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", ""].join("\n");

test("parseProcessStatus: name and parent", () => {
  const entry = parseProcessStatus(42, STATUS);
  assert.is(entry.name, "MainThread");
  assert.is(entry.ppid, 3);
  assert.is(entry.creds.uids[0], 1001);
  assert.throws(() => parseProcessStatus(42, STATUS.replace("PPid:\t3\n", "")), /\/proc\/42\/status has no PPid line/);
});

test("parseSeccompStatus: the mode and the filter count, null where the kernel shows none", () => {
  assert.equal(parseSeccompStatus("Name:\tx\nSeccomp:\t2\nSeccomp_filters:\t3\n"), { mode: "2", filters: 3 });
  assert.equal(parseSeccompStatus("Name:\tx\nSeccomp:\t0\n"), { mode: "0", filters: null });
  assert.equal(parseSeccompStatus("Name:\tx\n"), { mode: null, filters: null });
});

test("readProcessTable: this process among them, sorted by pid", () => {
  const table = readProcessTable();
  const self = table.find((entry) => entry.pid === process.pid);
  assert.ok(self);
  assert.is(self.ppid, process.ppid);
  assert.is(self.creds.uids[0], process.getuid!());
  assert.equal(table.map((entry) => entry.pid), [...table.map((entry) => entry.pid)].sort((a, b) => a - b));
});

test.run();
