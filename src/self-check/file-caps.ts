/*
 * File capabilities live in the security.capability extended attribute
 * (capabilities(7), "File capabilities"). Node has no getxattr, so the list
 * of candidate files is handed on stdin to perl, which is Essential in
 * Debian (perl-base) and can make the lgetxattr(2) system call itself; it is
 * run through runCapture (root-owned, fixed PATH, allowlisted environment).
 * lgetxattr does not follow symlinks and changes nothing.
 */
import { constants } from "node:os";
import { namesOf } from "../capabilities.ts";
import { runCapture } from "../system-exec.ts";
import type { FsPath } from "./walk.ts";
import { displayPath } from "./walk.ts";

export const PERL = "/usr/bin/perl";

/** lgetxattr(2) by architecture (x86_64: unistd_64.h; arm64: asm-generic/unistd.h). */
export const LGETXATTR: Readonly<Record<string, number>> = { x64: 192, arm64: 9 };

/**
 * Reads NUL-separated paths; prints "C\0path\0hex\0" for each with the
 * attribute and "E\0path\0errno\0" for each it could not read (other than
 * "no such attribute" and "attributes not supported").
 */
export const PERL_SCRIPT = [
  'my ($nr, $enodata, $enotsup) = @ARGV;',
  '$/ = "\\0"; binmode STDIN; binmode STDOUT;',
  "while (my $p = <STDIN>) {",
  "  chomp $p; next if $p eq '';",
  '  my $name = "security.capability"; my $buf = "\\0" x 64;',
  '  my $n = syscall($nr + 0, $p, $name, $buf, 64);',
  '  if ($n > 0) { print "C\\0", $p, "\\0", unpack("H*", substr($buf, 0, $n)), "\\0"; }',
  '  elsif ($n < 0 && $! + 0 != $enodata && $! + 0 != $enotsup) { print "E\\0", $p, "\\0", $! + 0, "\\0"; }',
  "}",
].join("\n");

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

export interface CapabilityScan {
  found: FileCapability[];
  unreadable: Array<{ path: string; errno: number }>;
}

/** Pure: the script's output. */
export function parseScanOutput(stdout: Buffer): CapabilityScan {
  const fields = stdout.toString("latin1").split("\0");
  const scan: CapabilityScan = { found: [], unreadable: [] };
  for (let i = 0; i + 2 < fields.length; i += 3) {
    const [tag, path, value] = [fields[i]!, fields[i + 1]!, fields[i + 2]!];
    const shown = displayPath(Buffer.from(path, "latin1"));
    if (tag === "C" && /^[0-9a-f]*$/.test(value)) scan.found.push(decodeCapabilityXattr(shown, value));
    // ENOENT: removed since the walk saw it.
    else if (tag === "E" && Number(value) !== constants.errno.ENOENT) scan.unreadable.push({ path: shown, errno: Number(value) });
  }
  return scan;
}

/** Throws (Refusal or Error) when the scan cannot run; the caller reports that as such. */
export function scanFileCapabilities(paths: readonly FsPath[]): CapabilityScan {
  const nr = LGETXATTR[process.arch];
  if (nr === undefined) throw new Error(`no lgetxattr system call number for ${process.arch}`);
  const input = Buffer.concat(paths.flatMap((p) => [typeof p === "string" ? Buffer.from(p) : p, Buffer.from([0])]));
  const result = runCapture({
    command: PERL,
    args: ["-e", PERL_SCRIPT, String(nr), String(constants.errno.ENODATA), String(constants.errno.EOPNOTSUPP)],
    input,
    timeoutMs: 60_000,
    maxBytes: 64 << 20,
  });
  if (result.error !== undefined || result.status !== 0) {
    const why = result.error ?? (result.signal ? `killed by ${result.signal}` : `exit ${result.status}`);
    const said = result.stderr.toString("utf8").split("\n")[0] ?? "";
    throw new Error(`${PERL} failed (${why})${said ? `: ${said}` : ""}`);
  }
  return parseScanOutput(result.stdout);
}
