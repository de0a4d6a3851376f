/*
 * The shape of a layout rule: what the entrypoint's walk (src/entrypoint/
 * tree-walk.ts) asks of /state's and /workspace's rules for each entry, and
 * what the audit asks of the same rules to judge what it finds.
 */
import type { Stats } from "node:fs";
import type { EntryKind } from "../os/file-kind.ts";

/** What the rules want for one entry. uid/gid -1 keep the current value; mode undefined keeps it. */
export type Decision<C> =
  | { action: "fix"; uid: number; gid: number; mode?: (current: number) => number; descend?: C }
  | { action: "skip"; reason: string }
  | { action: "prune" };

export interface EntryView {
  /** Display path (printable, never used for syscalls). */
  readonly path: string;
  readonly name: Buffer;
  readonly kind: EntryKind;
  readonly st: Stats;
  readonly depth: number;
}

export type Rules<C> = (entry: EntryView, context: C) => Decision<C>;

/**
 * The deepest level the walks enter: a directory this many levels below the
 * root is judged like any other, and nothing below it is walked (the walk
 * warns). No legitimate tree comes near it; a planted chain deeper than it
 * costs the walk neither fds nor memory beyond this many levels
 * (docs/security.md, "Hostile trees"). /state's rules close such a
 * directory to every uid but the service's.
 */
export const DEPTH_LIMIT = 4096;

/**
 * The most bytes of a path the walks keep to show (a longer one is cut, and
 * ends in "..."): a chain DEPTH_LIMIT levels deep of 255-byte names has a
 * megabyte of path at its bottom, and a path kept whole for each of its
 * levels would be gigabytes.
 */
export const SHOWN_PATH_BYTES = 8192;
