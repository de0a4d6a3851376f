/*
 * The shapes of the facts the audit reads (facts.ts) and its judges take:
 * types only, so that facts.ts and the judges both import them from here and
 * none of them imports the other for a type (test/unit/project/layering.test.ts
 * fails on an import circle, type-only imports included).
 */
import type { Stats } from "node:fs";

/** A read whose failure is itself judged (an unreadable environment warns, say): why, and the errno code. */
export type Readable<T> = { ok: true; value: T } | { ok: false; error: string; code?: string };

export type Lstat = Readable<Stats>;

/** PRIVATE_DIR's lstat and the lease directories in it. */
export type PrivateRoot = Readable<{ stats: Stats; leases: string[] }>;

/** What the body is, by the audit's first judge (mode.ts). */
export type Mode = "separated" | "single-uid" | "misconfigured";

/** A program the stages exec, as found on disk. */
export interface Program {
  path: string;
  present: boolean;
  problems: string[];
  file: { path: string; uid: number; gid: number; mode: string; dev: number; ino: number } | { path: string; error: string };
}

/** The hash the build recorded for the bundle, and where it was read; or why none was. */
export type BuiltInHash = { value: string; from: string } | { error: string };
