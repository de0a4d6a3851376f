/* The image walk: its perl run for real on a planted tree, and its output parsed, refused when cut short. */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { syscallNumbers } from "../../../src/os/syscalls.ts";
import { parseMountinfo } from "../../../src/os/mountinfo.ts";
import { excludedDirectories, hasOption, IMAGE_SCAN_SCRIPT, mountOf, parseImageScan } from "../../../src/self-check/image-scan.ts";
import { MOUNTINFO } from "../../helpers/self-check-fixtures.ts";

const Scan = suite("image scan");

Scan("mounts: longest match wins, pseudo filesystems are not entered", () => {
  const mounts = parseMountinfo(MOUNTINFO);
  assert.is(mountOf(mounts, "/usr/bin/true")!.point, "/usr");
  assert.is(mountOf(mounts, "/etc/passwd")!.point, "/");
  assert.is(mountOf(mounts, "/usrx")!.point, "/");
  assert.ok(hasOption(mountOf(mounts, "/"), "rw"));
  assert.not.ok(hasOption(undefined, "rw"));
  assert.equal([...excludedDirectories(mounts, ["/state"])].sort(), ["/dev/pts", "/proc", "/state"]);
});

Scan("the image walk's output is parsed: set-ID files with their mount, attributes, problems, counts", () => {
  const mounts = parseMountinfo("69 45 0:40 / / rw,relatime - overlay overlay rw\n70 69 0:41 /x /tmp rw,nosuid,nodev - tmpfs tmpfs rw\n");
  const nonUtf8 = Buffer.from([0x2f, 0x74, 0x6d, 0x70, 0x2f, 0xff]).toString("latin1"); // "/tmp/\xff"
  const out = Buffer.from(
    [
      "S", "/usr/bin/su", String(0o104755), "0", "0",
      "S", nonUtf8, String(0o102755), "1001", "1002",
      "C", "/a b", "0100000200200000000000000000000000000000",
      "E", "/sealed", "13",
      "P", "/root", "readdir", "13",
      "V", "4242", "17",
      "",
    ].join("\0"),
    "latin1",
  );
  const scan = parseImageScan(out, mounts, new Set(["/proc", "/sys"]));
  assert.is(scan.visited, 4242);
  assert.is(scan.executables, 17);
  assert.equal(scan.excluded, ["/proc", "/sys"]);
  assert.equal(scan.privileged[0], { path: "/usr/bin/su", mode: "4755", uid: 0, gid: 0, bits: ["setuid"], mount: "/", nosuid: false });
  assert.equal(scan.privileged[1], { path: "/tmp/\\xff", mode: "2755", uid: 1001, gid: 1002, bits: ["setgid"], mount: "/tmp", nosuid: true });
  assert.equal(scan.capabilities.map((f) => f.path), ["/a b"]);
  assert.equal(scan.unreadableXattrs, [{ path: "/sealed", errno: 13 }]);
  assert.equal(scan.problems, [{ path: "/root", syscall: "readdir", code: "EACCES" }]);
});

Scan("the image walk's output is refused when cut short or malformed, never read as a clean image", () => {
  const mounts = parseMountinfo("69 45 0:40 / / rw - overlay overlay rw\n");
  const none = new Set<string>();
  const out = (...fields: string[]) => Buffer.from([...fields, ""].join("\0"), "latin1");
  assert.throws(() => parseImageScan(out("S", "/usr/bin/su"), mounts, none), /middle of a record/);
  assert.throws(() => parseImageScan(Buffer.from(""), mounts, none), /before its last record/);
  assert.throws(() => parseImageScan(out("S", "/usr/bin/su", "2541", "0", "0"), mounts, none), /before its last record/);
  assert.throws(() => parseImageScan(out("C", "/x", "zz", "V", "1", "1"), mounts, none), /malformed attribute/);
  assert.throws(() => parseImageScan(out("Q", "V", "1", "1"), mounts, none), /unknown record/);
  // The last record cut short, even where the cut leaves a NUL-terminated prefix.
  assert.throws(() => parseImageScan(Buffer.from("V\u0000123\u0000"), mounts, none), /middle of a record/);
  assert.throws(() => parseImageScan(Buffer.from("V\u0000123\u00004"), mounts, none), /does not end with a complete field/);
  assert.throws(() => parseImageScan(out("V", "1", "1", "S", "/x", "2541", "0", "0"), mounts, none), /after its last one/);
});

Scan("the image walk in perl, run for real on a planted tree: set-ID bits, symlinks not followed, skipped directories, bytes in names", () => {
  const root = mkdtempSync(join(tmpdir(), "image-walk-"));
  try {
    mkdirSync(join(root, "bin"));
    writeFileSync(join(root, "bin/su"), "x", { mode: 0o755 });
    chmodSync(join(root, "bin/su"), 0o4755);
    writeFileSync(join(root, "bin/tool"), "x", { mode: 0o755 });
    mkdirSync(join(root, "skipped"));
    writeFileSync(join(root, "skipped/hidden"), "x");
    chmodSync(join(root, "skipped/hidden"), 0o6755);
    symlinkSync("/usr/bin", join(root, "link")); // never entered
    writeFileSync(Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0xff])]), "x", { mode: 0o2755 });
    chmodSync(Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0xff])]), 0o2755);
    // A directory whose name is not UTF-8, to be skipped too: the skip list is bytes on stdin.
    const odd = Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0xe9, 0x74, 0xe9])]);
    mkdirSync(odd);
    writeFileSync(Buffer.concat([odd, Buffer.from("/hidden")]), "x", { mode: 0o4755 });
    chmodSync(Buffer.concat([odd, Buffer.from("/hidden")]), 0o4755);
    // As startImageScan runs it, with the planted tree as its root (lgetxattr, ENODATA, EOPNOTSUPP).
    const skip = Buffer.concat([Buffer.from(`${join(root, "skipped")}\0`), odd, Buffer.from([0])]);
    const run = spawnSync("/usr/bin/perl", ["-e", IMAGE_SCAN_SCRIPT, String(syscallNumbers().lgetxattr), "61", "95", root], { env: {}, input: skip });
    assert.is(run.status, 0, String(run.stderr));
    const scan = parseImageScan(run.stdout, [], new Set());
    assert.equal(scan.privileged.map((f) => [f.path.slice(root.length), f.mode]).sort(), [["/\\xff", "2755"], ["/bin/su", "4755"]]);
    assert.is(scan.visited, 8, "root, bin, su, tool, skipped and the non-UTF-8 directory (neither entered), link, the \\xff file");
    assert.is(scan.executables, 3);
    assert.equal(scan.capabilities, []);
    assert.equal(scan.problems, []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});



Scan.run();
