/*
 * The audit's two forms. JSON: one document (docs/self-check.schema.json),
 * stable. Text, for people: one line per check, failures first, then
 * warnings, then passes, each with its fix, and a one-line verdict. Pure.
 */
import type { Check, Status } from "./check.ts";
import type { Boundary, Mode } from "./mode.ts";
import type { Relation } from "./judged.ts";

export const SCHEMA_VERSION = 1;

/** The order checks appear in the JSON document and, within a status, in the text. */
export const CHECK_ORDER: readonly string[] = [
  "mode",
  "boundary",
  "process.ids",
  "process.capabilities",
  "process.no-new-privs",
  "accounts",
  "state.layout",
  "state.release",
  "state.agent-home",
  "state.agent-volume",
  "workspace.top",
  "workspace.marker",
  "image.executable",
  "image.bundle",
  "image.tools",
  "image.setuid",
  "image.file-capabilities",
  "image.mounts",
  "image.read-only-root",
  "processes.root",
  "processes.workspace-exe",
  "environment",
  "kernel.legacy-tiocsti",
  "kernel.protected-hardlinks",
  "kernel.protected-symlinks",
  "kernel.protected-regular",
  "kernel.protected-fifos",
  "agent.confinement",
  "probe",
  "probe.identity",
  "probe.capabilities",
  "probe.no-new-privs",
  "probe.write-state",
  "probe.read-credentials",
  "probe.signal-service",
  "probe.setpriv-node",
  "probe.seccomp",
  "probe.lower-oom-score",
  "probe.abstract-socket",
];

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

function rank(id: string): number {
  const at = CHECK_ORDER.indexOf(id);
  return at < 0 ? CHECK_ORDER.length : at;
}

export function sortChecks(checks: readonly Check[]): Check[] {
  return [...checks].sort((a, b) => rank(a.id) - rank(b.id));
}

export function buildDocument(parts: Omit<SelfCheckDocument, "schemaVersion" | "ok" | "counts" | "checks"> & { checks: readonly Check[] }): SelfCheckDocument {
  const checks = sortChecks(parts.checks);
  const counts: Record<Status, number> = { pass: 0, warn: 0, fail: 0 };
  for (const check of checks) counts[check.status]++;
  return {
    schemaVersion: SCHEMA_VERSION,
    version: parts.version,
    ok: counts.fail === 0,
    mode: parts.mode,
    boundary: parts.boundary,
    judged: parts.judged,
    auditor: parts.auditor,
    probe: parts.probe,
    counts,
    checks,
  };
}

export function renderJson(doc: SelfCheckDocument): string {
  return JSON.stringify(doc, null, 2);
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, " ");
}

const LABEL: Record<Status, string> = { fail: "FAIL", warn: "WARN", pass: "PASS" };
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
      lines.push(oneLine(`${LABEL[status]} ${check.id}: ${check.summary}${fix}`));
    }
  }
  lines.push(verdictLine(doc));
  return lines.join("\n");
}
