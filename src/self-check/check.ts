/*
 * One check result, and the three ways to make one. A check that could not
 * look (permission denied, a missing file) is never a pass: `cannotRun`
 * makes it a failure, or a warning where the mode does not require it, and
 * says why in `found.error`.
 */
import { OsFailure, Refusal } from "../report.ts";

export type Status = "pass" | "warn" | "fail";

export interface Check {
  /** Stable identifier, documented in docs/self-check.md. */
  id: string;
  status: Status;
  /** One line for people. */
  summary: string;
  /** What was looked at and seen: paths, ids, masks. JSON-serialisable. */
  found: Record<string, unknown>;
  /** How to fix it; null when there is nothing to do. */
  fix: string | null;
}

export function pass(id: string, summary: string, found: Record<string, unknown> = {}): Check {
  return { id, status: "pass", summary, found, fix: null };
}

export function warn(id: string, summary: string, found: Record<string, unknown>, fix: string | null): Check {
  return { id, status: "warn", summary, found, fix };
}

export function fail(id: string, summary: string, found: Record<string, unknown>, fix: string): Check {
  return { id, status: "fail", summary, found, fix };
}

/** The reason an error gives, in the words of report.ts (syscall, path, errno code). */
export function reasonOf(error: unknown): string {
  if (error instanceof OsFailure) return `${error.syscall} ${error.path}: ${error.code}`;
  if (error instanceof Refusal) return error.message;
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}

/** A check that could not look. */
export function cannotRun(id: string, what: string, error: unknown, fix: string, status: "warn" | "fail" = "fail"): Check {
  const reason = reasonOf(error);
  const found = { error: reason };
  const summary = `could not check ${what}: ${reason}`;
  return status === "fail" ? fail(id, summary, found, fix) : warn(id, summary, found, fix);
}

/**
 * Runs a check (or several, named by `ids`); anything it throws becomes a
 * failure of each of them, never a crash of the audit.
 */
export function guarded(ids: string | readonly string[], what: string, fix: string, run: () => Check | Check[]): Check[] {
  try {
    const result = run();
    return Array.isArray(result) ? result : [result];
  } catch (error) {
    return (typeof ids === "string" ? [ids] : ids).map((id) =>
      error instanceof Refusal ? fail(id, `could not check ${what}: ${error.message}`, { error: error.message }, error.fix) : cannotRun(id, what, error, fix),
    );
  }
}

/** At most `limit` items, and how many there were: output stays bounded when a tree is wrong everywhere. */
export interface Bounded<T> {
  count: number;
  shown: T[];
}

export function bounded<T>(items: readonly T[], limit: number): Bounded<T> {
  return { count: items.length, shown: items.slice(0, limit) };
}

/** Octal mode as people write it: 0644, 4755. */
export function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}
