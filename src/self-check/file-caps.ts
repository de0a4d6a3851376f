/*
 * File capabilities live in the security.capability extended attribute
 * (capabilities(7), "File capabilities"). Node has no getxattr; the image
 * scan (image-scan.ts) reads the attribute in perl with lgetxattr(2), which
 * does not follow symlinks and changes nothing. This module decodes it.
 */
import { namesOf } from "../os/capabilities.ts";

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
