/*
 * The image scan: one read-only walk over the image's filesystems, from /
 * across every mount but not into the kernel's pseudo filesystems, /proc,
 * /sys, or the volumes (/state and /workspace have their own checks). It
 * reports every regular file with a set-user-ID or set-group-ID bit, and the
 * security.capability attribute of every regular file someone can execute (a
 * file nobody can execute cannot hand out capabilities, and only its owner
 * could make it executable).
 *
 * The walk is a perl process, started first and collected last, so that it
 * runs on one CPU while this process audits /state on the other: both walks
 * spend their time in the kernel (lstat), and the audit's wall time becomes
 * the longer of the two instead of their sum (docs/benchmarks.md, "The audit").
 * perl is also what can read the attribute at all: Node has no getxattr, and
 * perl makes the lgetxattr(2) system call itself. perl-base is Essential in
 * Debian; the run goes through startCapture (root-owned perl, fixed PATH,
 * allowlisted environment, so no PERL5OPT) and the capability drop of
 * systemExec (src/exec/drop-capabilities.ts): the walk lists agent-writable
 * /tmp, and a walk that only reads needs no capability: under the service
 * the audit holds none to lose (the drop is a guard), and run by root it
 * keeps root's own, and with them the directories only DAC_OVERRIDE can
 * list.
 *
 * What the walk may do: opendir, readdir, lstat, lgetxattr. It never opens a
 * file, never follows a symlink (only what lstat calls a directory is
 * entered, by the path readdir gave), and writes nothing but its output.
 * Names are bytes throughout, so names that are not UTF-8 are reported too.
 */
import { constants } from "node:os";
import IMAGE_SCAN_TEMPLATE from "../perl/image-scan.pl";
import { type CaptureResult, startCapture } from "../exec/capture.ts";
import { syscallNumbers } from "../os/syscalls.ts";
import { STATE_DIR, TOOLS, WORKSPACE_DIR } from "../constants.ts";
import { errnoName } from "../os/errno.ts";
import { namesOf } from "../os/capabilities.ts";
import { octal, type WalkProblem } from "./check.ts";
import type { Mount } from "../os/mountinfo.ts";
import { printablePath } from "../report.ts";

export interface PrivilegedFile {
  path: string;
  mode: string;
  uid: number;
  gid: number;
  bits: Array<"setuid" | "setgid">;
  mount: string | null;
  /** The mount is nosuid: the bit has no effect while it stays so. */
  nosuid: boolean;
}

/*
 * File capabilities live in the security.capability extended attribute
 * (capabilities(7), "File capabilities"); the walk reads it with
 * lgetxattr(2), which does not follow symlinks, and this decodes it.
 */
export interface FileCapability {
  path: string;
  permitted: string[];
  inheritable: string[];
  effective: boolean;
  version: number;
  rootid?: number;
  raw: string;
}

/** Pure: vfs_cap_data (linux/capability.h), little-endian. */
export function decodeCapabilityXattr(path: string, hex: string): FileCapability {
  const data = Buffer.from(hex, "hex");
  const magic = data.length >= 4 ? data.readUInt32LE(0) : 0;
  const version = magic >>> 24;
  const word = (offset: number): bigint => (data.length >= offset + 4 ? BigInt(data.readUInt32LE(offset)) : 0n);
  const permitted = word(4) | (version >= 2 ? word(12) << 32n : 0n);
  const inheritable = word(8) | (version >= 2 ? word(16) << 32n : 0n);
  return {
    path,
    permitted: namesOf(permitted),
    inheritable: namesOf(inheritable),
    effective: (magic & 1) === 1,
    version,
    ...(version === 3 && data.length >= 24 ? { rootid: data.readUInt32LE(20) } : {}),
    raw: hex,
  };
}

export interface ImageScan {
  visited: number;
  privileged: PrivilegedFile[];
  /** Regular files someone can execute: the candidates for file capabilities. */
  executables: number;
  capabilities: FileCapability[];
  /** What could not be read: a directory or entry (readdir, lstat), a file's attribute (lgetxattr). */
  problems: WalkProblem[];
  unreadableXattrs: Array<{ path: string; errno: number }>;
  excluded: string[];
}

/**
 * Filesystems that hold no files of the image: the kernel's views and
 * interfaces. Their entries are not walked for set-user-ID bits.
 */
export const PSEUDO_FILESYSTEMS: ReadonlySet<string> = new Set([
  "proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "securityfs", "debugfs", "tracefs", "bpf",
  "fusectl", "configfs", "pstore", "hugetlbfs", "binfmt_misc", "autofs", "nsfs", "efivarfs", "selinuxfs", "rpc_pipefs",
]);

function within(path: string, dir: string): boolean {
  return dir === "/" || path === dir || path.startsWith(`${dir}/`);
}

/** The mount a path lies on: the last-mounted of the longest matching mount points. */
export function mountOf(mounts: readonly Mount[], path: string): Mount | undefined {
  let best: Mount | undefined;
  for (const mount of mounts) {
    if (!within(path, mount.point)) continue;
    if (best === undefined || mount.point.length >= best.point.length) best = mount;
  }
  return best;
}

/**
 * Directories the image walk does not enter: mount points of pseudo
 * filesystems, plus the fixed `skip` list (the volumes, /proc, /sys), which
 * are judged by their own checks.
 */
export function excludedDirectories(mounts: readonly Mount[], skip: readonly string[]): Set<string> {
  const excluded = new Set(skip);
  for (const mount of mounts) {
    if (PSEUDO_FILESYSTEMS.has(mount.fstype)) excluded.add(mount.point);
  }
  return excluded;
}

export function hasOption(mount: Mount | undefined, option: string): boolean {
  return mount?.options.includes(option) ?? false;
}

export const IMAGE_WALK_SKIP: readonly string[] = ["/proc", "/sys", STATE_DIR, WORKSPACE_DIR];

/** The walk, src/perl/image-scan.pl (its header says what it reads and prints). */
export const IMAGE_SCAN_SCRIPT = IMAGE_SCAN_TEMPLATE.trim();

/** Starts the walk; throws (Refusal or Error) when perl cannot be run under the exec rules. */
export function startImageScan(excluded: ReadonlySet<string>): Promise<CaptureResult> {
  const nr = syscallNumbers().lgetxattr;
  return startCapture({
    command: TOOLS.perl,
    args: ["-e", IMAGE_SCAN_SCRIPT, String(nr), String(constants.errno.ENODATA), String(constants.errno.EOPNOTSUPP), "/"],
    input: Buffer.concat([...excluded].sort().map((dir) => Buffer.from(`${dir}\0`, "latin1"))),
    timeoutMs: 120_000,
    maxBytes: 64 << 20,
    dropCapabilities: true,
  });
}

/** Pure: the walk's output, with the mounts to say where each privileged file lies. */
export function parseImageScan(stdout: Buffer, mounts: readonly Mount[], excluded: ReadonlySet<string>): ImageScan {
  // Every record ends with a NUL, so the text splits into fields plus one empty tail.
  const fields = stdout.toString("latin1").split("\0");
  if (fields.pop() !== "") throw new Error("the image walk's output does not end with a complete field");
  const scan: ImageScan = { visited: 0, privileged: [], executables: 0, capabilities: [], problems: [], unreadableXattrs: [], excluded: [...excluded].sort() };
  const shown = (raw: string) => printablePath(Buffer.from(raw, "latin1"));
  let complete = false;
  let i = 0;
  const take = (n: number): string[] => {
    if (i + n > fields.length) throw new Error("the image walk's output ends in the middle of a record");
    const out = fields.slice(i, i + n);
    i += n;
    return out;
  };
  while (i < fields.length) {
    if (complete) throw new Error("the image walk printed records after its last one");
    const tag = fields[i++];
    if (tag === "S") {
      const [raw, mode, uid, gid] = take(4) as [string, string, string, string];
      const path = shown(raw);
      const bits = Number(mode);
      const mount = mountOf(mounts, raw); // mount points are bytes as latin1, like raw
      scan.privileged.push({
        path,
        mode: octal(bits),
        uid: Number(uid),
        gid: Number(gid),
        bits: [...(bits & 0o4000 ? ["setuid" as const] : []), ...(bits & 0o2000 ? ["setgid" as const] : [])],
        mount: mount?.point ?? null,
        nosuid: hasOption(mount, "nosuid"),
      });
    } else if (tag === "C") {
      const [raw, hex] = take(2) as [string, string];
      if (!/^[0-9a-f]*$/.test(hex)) throw new Error(`the image walk printed a malformed attribute for ${shown(raw)}`);
      scan.capabilities.push(decodeCapabilityXattr(shown(raw), hex));
    } else if (tag === "E") {
      const [raw, errno] = take(2) as [string, string];
      scan.unreadableXattrs.push({ path: shown(raw), errno: Number(errno) });
    } else if (tag === "P") {
      const [raw, syscall, errno] = take(3) as [string, string, string];
      scan.problems.push({ path: shown(raw), syscall, code: errnoName(errno) });
    } else if (tag === "V") {
      const [visited, executables] = take(2) as [string, string];
      scan.visited = Number(visited);
      scan.executables = Number(executables);
      complete = true;
    } else {
      throw new Error(`the image walk printed an unknown record ${JSON.stringify(tag)}`);
    }
  }
  if (!complete) throw new Error("the image walk ended before its last record");
  return scan;
}
