/*
 * The SHA-256 of the JavaScript bundle embedded in this executable, read from
 * the executable itself: the ELF PT_NOTE segment that postject writes, named
 * NODE_SEA_BLOB, holds the SEA blob (src/node_sea.cc: magic, flags, then the
 * length-prefixed code path and main script). Reading it, rather than a value
 * compiled in, is what makes the hash evidence of what actually runs.
 */
import { createHash } from "node:crypto";
import { closeSync, openSync, readSync } from "node:fs";
import * as sea from "node:sea";

const SEA_MAGIC = 0x0143_da20;
const PT_NOTE = 4;

function readAt(fd: number, offset: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buffer, done, length - done, offset + done);
    if (n === 0) throw new Error("unexpected end of file");
    done += n;
  }
  return buffer;
}

/** Returns the main script of the SEA blob in `path`, or undefined when there is none. */
export function readEmbeddedBundle(path = "/proc/self/exe"): Buffer | undefined {
  const fd = openSync(path, "r");
  try {
    const header = readAt(fd, 0, 64);
    if (header.readUInt32BE(0) !== 0x7f454c46 || header[4] !== 2 || header[5] !== 1) return undefined; // ELF64 LE only
    const phoff = Number(header.readBigUInt64LE(32));
    const phentsize = header.readUInt16LE(54);
    const phnum = header.readUInt16LE(56);
    const table = readAt(fd, phoff, phentsize * phnum);
    for (let i = 0; i < phnum; i++) {
      const entry = table.subarray(i * phentsize);
      if (entry.readUInt32LE(0) !== PT_NOTE) continue;
      const offset = Number(entry.readBigUInt64LE(8));
      const size = Number(entry.readBigUInt64LE(32));
      if (size > 512 * 1024 * 1024) continue;
      const notes = readAt(fd, offset, size);
      let at = 0;
      while (at + 12 <= notes.length) {
        const nameSize = notes.readUInt32LE(at);
        const descSize = notes.readUInt32LE(at + 4);
        const name = notes.subarray(at + 12, at + 12 + nameSize).toString("latin1").replace(/\0+$/, "");
        const descStart = at + 12 + ((nameSize + 3) & ~3);
        if (name === "NODE_SEA_BLOB") return parseBlob(notes.subarray(descStart, descStart + descSize));
        at = descStart + ((descSize + 3) & ~3);
      }
    }
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function parseBlob(blob: Buffer): Buffer | undefined {
  if (blob.length < 8 || blob.readUInt32LE(0) !== SEA_MAGIC) return undefined;
  // magic (u32), flags (u32), then in Node >= 24 the execArgvExtension byte,
  // then the code path and the main script, each a u64 length and the bytes.
  for (const start of [9, 8]) {
    if (start + 8 > blob.length) continue;
    const pathLength = Number(blob.readBigUInt64LE(start));
    if (pathLength > 4096) continue;
    const codeAt = start + 8 + pathLength;
    if (codeAt + 8 > blob.length) continue;
    const codePath = blob.subarray(start + 8, codeAt).toString("latin1");
    if (!/^[\x20-\x7e]*$/.test(codePath)) continue;
    const codeLength = Number(blob.readBigUInt64LE(codeAt));
    if (codeAt + 8 + codeLength > blob.length) continue;
    return blob.subarray(codeAt + 8, codeAt + 8 + codeLength);
  }
  return undefined;
}

const sha256 = (data: Buffer | string) => createHash("sha256").update(data).digest("hex");

/*
 * The entrypoint's bundle, the audit's and the private-job shim's are SEA
 * assets, clankie-separate.cjs, clankie-self-check.cjs and
 * clankie-private-job.cjs, and the main script pins the SHA-256 of each on a
 * line of its own (build.mjs, mainScript):
 *
 *   const ENTRYPOINT_SHA256 = "<64 hex digits>"; ...
 *   const SELF_CHECK_SHA256 = "<64 hex digits>"; ...
 *   const PRIVATE_JOB_SHA256 = "<64 hex digits>"; ...
 *
 * so the main script's hash covers each only while the asset matches its pin.
 */
export const ENTRYPOINT_ASSET = "clankie-separate.cjs";
export const SELF_CHECK_ASSET = "clankie-self-check.cjs";
export const PRIVATE_JOB_ASSET = "clankie-private-job.cjs";
const PINS: Readonly<Record<string, string>> = { [ENTRYPOINT_ASSET]: "ENTRYPOINT_SHA256", [SELF_CHECK_ASSET]: "SELF_CHECK_SHA256", [PRIVATE_JOB_ASSET]: "PRIVATE_JOB_SHA256" };

export interface AssetHashes {
  /** What the main script pins, or undefined when it holds no pin. */
  pinned: string | undefined;
  /** The SHA-256 of the asset this process runs from, or undefined outside a single executable. */
  actual: string | undefined;
}

/** The pin in `mainScript` for `asset`, and the hash of the running executable's asset. */
export function assetHashes(mainScript: Buffer, asset: string): AssetHashes {
  const text = mainScript.toString("latin1");
  const pin = `const ${PINS[asset]} = "`;
  const at = text.indexOf(pin);
  const pinned = at < 0 ? undefined : text.slice(at + pin.length, at + pin.length + 64);
  return {
    pinned: pinned !== undefined && /^[0-9a-f]{64}$/.test(pinned) ? pinned : undefined,
    actual: sea.isSea() ? sha256(Buffer.from(sea.getRawAsset(asset))) : undefined,
  };
}

/** The hash of the main script (what --self-check calls the bundle's) and each asset's pin and hash; undefined without a SEA blob. */
export function embeddedHashes(path?: string): { bundle: string; entrypoint: AssetHashes; audit: AssetHashes; privateJob: AssetHashes } | undefined {
  const mainScript = readEmbeddedBundle(path);
  return mainScript
    ? { bundle: sha256(mainScript), entrypoint: assetHashes(mainScript, ENTRYPOINT_ASSET), audit: assetHashes(mainScript, SELF_CHECK_ASSET), privateJob: assetHashes(mainScript, PRIVATE_JOB_ASSET) }
    : undefined;
}
