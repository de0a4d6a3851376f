/*
 * One check result, and how a judge says it. A judge returns a Verdict (no
 * id: the id lives in the list of src/self-check/checks.ts only); the runner
 * adds the id. A check that could not look (permission denied, a missing
 * file) is never a pass: `cannotLook` makes it a failure, or a warning where
 * the check allows, and says why in `found.error`.
 */
import { OsFailure, Refusal } from "../report.ts";

export type Status = "pass" | "warn" | "fail";

export interface Verdict {
  status: Status;
  /** One line for people. */
  summary: string;
  /** What was looked at and seen: paths, ids, masks. JSON-serialisable. */
  found: Record<string, unknown>;
  /** How to fix it; null when there is nothing to do. */
  fix: string | null;
}

export interface Check extends Verdict {
  /** Stable identifier, documented in docs/self-check.md. */
  id: string;
}

export function pass(summary: string, found: Record<string, unknown> = {}): Verdict {
  return { status: "pass", summary, found, fix: null };
}

export function warn(summary: string, found: Record<string, unknown>, fix: string | null): Verdict {
  return { status: "warn", summary, found, fix };
}

export function fail(summary: string, found: Record<string, unknown>, fix: string): Verdict {
  return { status: "fail", summary, found, fix };
}

/** fail where the separation is meant (separated, misconfigured); in a single-uid body warn, with the note that says why and its own fix where given. */
export function failUnlessSingle(single: boolean, summary: string, found: Record<string, unknown>, fix: string, note?: string, singleFix: string | null = fix): Verdict {
  return single ? warn(note ? `${summary} (${note})` : summary, found, singleFix) : fail(summary, found, fix);
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

export function cannotLook(what: string, reason: string, fix: string, status: "warn" | "fail" = "fail"): Verdict {
  return { status, summary: `could not check ${what}: ${reason}`, found: { error: reason }, fix };
}

/** The most items a check shows of a list (the /state walk prints no more of each kind). */
export const SHOWN_ITEMS = 50;

/** At most SHOWN_ITEMS items, and how many there were (`count`, where more were found than kept): output stays bounded when a tree is wrong everywhere. */
export function bounded<T>(items: readonly T[], count: number = items.length): { count: number; shown: T[] } {
  return { count, shown: items.slice(0, SHOWN_ITEMS) };
}

/** Something a walk could not read: the walk goes on and the check reports it. */
export interface WalkProblem {
  path: string;
  syscall: string;
  code: string;
}

/** The problems as the checks list them: "lstat /state/x: EACCES". */
export function problemLines(problems: readonly WalkProblem[]): string[] {
  return problems.map((p) => `${p.syscall} ${p.path}: ${p.code}`);
}

/** How a program that ran ended: the capture's error (ETIMEDOUT, ENOBUFS), its signal, or its exit status. */
export function howItEnded(result: { status: number | null; signal: string | null; error?: string }): string {
  return result.error ?? (result.signal ? `killed by ${result.signal}` : `exit ${result.status}`);
}

/** The first line a program wrote to stderr, and `text` followed by it where there is one. */
export function firstLine(stderr: Buffer): string {
  return stderr.toString("utf8").trim().split("\n")[0] ?? "";
}
export function saying(text: string, stderr: Buffer): string {
  const said = firstLine(stderr);
  return said ? `${text}: ${said}` : text;
}

/** Octal mode as people write it: 0644, 4755. */
export function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}
