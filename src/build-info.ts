/*
 * What the build recorded about this executable: the program version (esbuild
 * define) and the SHA-256 of the bundle it injected (SEA asset bundle.sha256).
 * Cheap to read, so --version uses them; --self-check recomputes the hash from
 * the executable (embedded-bundle.ts) and compares.
 */
import * as sea from "node:sea";

declare const __CLANKIE_VERSION__: string;

export const PROGRAM_VERSION: string = typeof __CLANKIE_VERSION__ === "string" ? __CLANKIE_VERSION__ : "0.0.0-dev";

/** The hash build.mjs computed and carried in the blob as the asset "bundle.sha256". */
export function builtInBundleSha256(): string | undefined {
  try {
    return sea.isSea() ? String(sea.getAsset("bundle.sha256", "utf8")).trim() : undefined;
  } catch {
    return undefined;
  }
}
