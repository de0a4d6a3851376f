/*
 * Shared by the unit tests: catch the Refusal a call throws and compare its
 * exit code, its "what" and its "fix" exactly, as the one stderr line shows them.
 */
import * as assert from "uvu/assert";
import { Refusal } from "../../src/report.ts";

export function catchRefusal(fn: () => unknown): Refusal {
  try {
    fn();
  } catch (error) {
    if (error instanceof Refusal) return error;
    throw error;
  }
  throw new Error("expected a Refusal, but the call returned");
}

export interface ExpectedRefusal {
  exitCode: number;
  what: string;
  /** Omitted: the fix is not compared. */
  fix?: string;
}

export function assertRefusal(fn: () => unknown, want: ExpectedRefusal): void {
  const refusal = catchRefusal(fn);
  assert.is(refusal.message, want.what);
  assert.is(refusal.exitCode, want.exitCode, `exit code for: ${want.what}`);
  if (want.fix !== undefined) assert.is(refusal.fix, want.fix);
}

/** A command line a parser accepts, and the request it must make of it. */
export interface Accepts<R> {
  argv: string[];
  want: R;
}

/** A command line a parser refuses, with the usage refusal's exact "what" and "fix". */
export interface Refuses {
  argv: string[];
  what: string;
  fix: string;
}
