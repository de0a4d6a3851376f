/*
 * The audit's two forms. JSON: one document (docs/self-check.schema.json),
 * stable, its checks in the order of the list (checks.ts). Text, for
 * people: one line per check, failures first, then warnings, then passes,
 * each with its fix, and a one-line verdict. Pure.
 */
import { oneLine } from "../report.ts";
import type { Check, Status } from "./check.ts";
import type { Boundary, Mode } from "./mode.ts";
import type { Relation } from "./judged.ts";

const SCHEMA_VERSION = 1;

export interface SelfCheckDocument {
  schemaVersion: number;
  version: string;
  /** false when any check failed. */
  ok: boolean;
  mode: Mode;
  boundary: Boundary;
  judged: { pid: number; name: string; uid: number; reason: string };
  auditor: { pid: number; uid: number; capabilities: string[]; noNewPrivs: 0 | 1; relation: Relation };
  probe: boolean;
  counts: Record<Status, number>;
  checks: Check[];
}

export function buildDocument(parts: Omit<SelfCheckDocument, "schemaVersion" | "ok" | "counts" | "checks"> & { checks: readonly Check[] }): SelfCheckDocument {
  const counts: Record<Status, number> = { pass: 0, warn: 0, fail: 0 };
  for (const check of parts.checks) counts[check.status]++;
  // Spelled out, not spread: the JSON's keys keep the schema's order whatever order the caller gave them in.
  const { version, mode, boundary, judged, auditor, probe } = parts;
  return { schemaVersion: SCHEMA_VERSION, version, ok: counts.fail === 0, mode, boundary, judged, auditor, probe, counts, checks: [...parts.checks] };
}

export function renderJson(doc: SelfCheckDocument): string {
  return JSON.stringify(doc, null, 2);
}

const STATUS_ORDER: readonly Status[] = ["fail", "warn", "pass"];

export function verdictLine(doc: SelfCheckDocument): string {
  const { counts } = doc;
  const outcome = doc.ok ? "ok" : "FAILED";
  const judged = `judged pid ${doc.judged.pid} (${doc.judged.name}, uid ${doc.judged.uid}): ${doc.judged.reason}`;
  return oneLine(`verdict: ${outcome}: ${counts.fail} failed, ${counts.warn} warnings, ${counts.pass} passed; ${doc.mode}; ${doc.boundary.label}; ${judged}`);
}

export function renderText(doc: SelfCheckDocument): string {
  const lines: string[] = [];
  for (const status of STATUS_ORDER) {
    for (const check of doc.checks) {
      if (check.status !== status) continue;
      const fix = check.fix && status !== "pass" ? `; fix: ${check.fix}` : "";
      lines.push(oneLine(`${status.toUpperCase()} ${check.id}: ${check.summary}${fix}`));
    }
  }
  lines.push(verdictLine(doc));
  return lines.join("\n");
}
