/*
 * /proc/<pid>/status is the judge of what a process holds (proc(5)). Nothing
 * here trusts a tool's exit status: setpriv exits 0 even when an ambient raise
 * failed, so every privilege change is checked against these fields.
 */
import { readFileSync } from "node:fs";
import type { CapabilityMask } from "./capabilities.ts";
import { osFailure } from "../report.ts";

export interface ProcessCredentials {
  /** real, effective, saved, filesystem */
  uids: [number, number, number, number];
  gids: [number, number, number, number];
  groups: number[];
  capInh: CapabilityMask;
  capPrm: CapabilityMask;
  capEff: CapabilityMask;
  capBnd: CapabilityMask;
  capAmb: CapabilityMask;
  noNewPrivs: boolean;
}

/**
 * The text after "NAME:" on its line. Only Name, the first line, can hold
 * text of the process's choosing, and the kernel escapes a newline in it, so
 * a line that starts after a newline is the kernel's.
 */
function field(text: string, name: string): string {
  const key = `\n${name}:`;
  const at = text.indexOf(key);
  if (at < 0) throw new Error(`/proc status has no ${name} line`);
  const end = text.indexOf("\n", at + key.length);
  return text.slice(at + key.length, end < 0 ? text.length : end);
}

/*
 * The fields' parsers use no regular expression: V8 compiles one on its first
 * use and again, to machine code, on its second, and the shim reads this file
 * on every spawn (0.4 ms, docs/benchmarks.md).
 */

/** The words of a line: what is between its blanks (spaces and tabs). */
function words(text: string): string[] {
  const found: string[] = [];
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const blank = i === text.length || text[i] === " " || text[i] === "\t";
    if (blank && start >= 0) {
      found.push(text.slice(start, i));
      start = -1;
    } else if (!blank && start < 0) {
      start = i;
    }
  }
  return found;
}

/** A uid or gid as the kernel and passwd(5) write it: one to ten digits 0-9, at most 0xfffffffe ((uid_t)-1 is no id). */
export function parseId(word: string): number | undefined {
  if (word.length < 1 || word.length > 10) return undefined;
  for (const digit of word) if (digit < "0" || digit > "9") return undefined;
  return Number(word) <= 0xfffffffe ? Number(word) : undefined;
}

function ids(text: string, name: string): [number, number, number, number] {
  const parts = words(text).map(parseId);
  if (parts.length !== 4 || parts.includes(undefined)) {
    throw new Error(`/proc status ${name} line is malformed: ${JSON.stringify(text)}`);
  }
  return parts as [number, number, number, number];
}

function mask(text: string, name: string): CapabilityMask {
  const hex = text.trim();
  const wellFormed = hex.length === 16 && [...hex].every((digit) => (digit >= "0" && digit <= "9") || (digit >= "a" && digit <= "f"));
  if (!wellFormed) throw new Error(`/proc status ${name} line is malformed: ${JSON.stringify(text)}`);
  return BigInt(`0x${hex}`);
}

export function parseStatus(text: string): ProcessCredentials {
  const groups = words(field(text, "Groups")).map(parseId);
  if (groups.includes(undefined)) throw new Error(`/proc status Groups line is malformed`);
  const nnp = field(text, "NoNewPrivs").trim();
  if (nnp !== "0" && nnp !== "1") throw new Error(`/proc status NoNewPrivs line is malformed`);
  return {
    uids: ids(field(text, "Uid"), "Uid"),
    gids: ids(field(text, "Gid"), "Gid"),
    groups: groups as number[],
    capInh: mask(field(text, "CapInh"), "CapInh"),
    capPrm: mask(field(text, "CapPrm"), "CapPrm"),
    capEff: mask(field(text, "CapEff"), "CapEff"),
    capBnd: mask(field(text, "CapBnd"), "CapBnd"),
    capAmb: mask(field(text, "CapAmb"), "CapAmb"),
    noNewPrivs: nnp === "1",
  };
}

/*
 * Both files are read as UTF-8: that is the encoding Node reads a whole file
 * in one call (readFileSync's fast path; any other reads it in pieces from
 * JavaScript, 0.15 ms more on every spawn). The fields parsed are ASCII; the
 * command name, the one field that may hold other bytes, is not read from
 * status, and stat is split after its last ")", a byte that UTF-8 decoding
 * never merges into a replacement character.
 */
export function readStatus(pid: number | "self" = "self"): ProcessCredentials {
  const path = `/proc/${pid}/status`;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw osFailure("read", path, error);
  }
  return parseStatus(text);
}
