/*
 * Which body this is, judged by the service process (not by the audit's own
 * process, whose credentials depend on how it was started: `docker exec` as
 * root holds root's, and on some engines no NoNewPrivs, moby#37667), and the
 * boundary label ADR 0272 requires of increment 1. Pure.
 *
 *   separated      the entrypoint dropped to the service: uid node in all four
 *                  ids, no capability in any set (the spawner holds SETUID
 *                  and SETGID), NoNewPrivs, and CLANKIE_SEPARATION=1 in its
 *                  environment (unread: a spawner runs beside it)
 *   single-uid     today's body: the service holds no capability and has no
 *                  marker (unread: no spawner runs); no agent uid is configured
 *   misconfigured  anything in between, or a service running as root
 */
import type { Identities } from "../accounts.ts";
import { ADR_LAUNCH_FLAGS, AGENT_EXEC_PATH, SERVICE_ENV } from "../constants.ts";
import type { ProcessCredentials } from "../os/proc-status.ts";
import { fail, pass, type Verdict, warn } from "./check.ts";
import { capabilitySets } from "./service-process.ts";
import type { Mode, Readable } from "./fact-types.ts";

export type { Mode };

export interface ModeVerdict {
  mode: Mode;
  /** Why it is not separated (misconfigured), or notes (separated, marker unreadable). */
  reasons: string[];
  /** CLANKIE_SEPARATION as read: "1", another value, null when absent, undefined when unreadable. */
  marker: string | null | undefined;
}

const LAUNCH_FIX = `start the container as root with the flags of ADR 0272 (docker run ${ADR_LAUNCH_FLAGS.join(" ")}) and clankie-separate as the entrypoint`;
const BOUNDARY_FIX = "route Herdr and every worker through clankie-agent-exec (ADR 0272 increment 2); then the service declares it by starting with CLANKIE_BOUNDARY=complete in its environment (docs/self-check.md)";

/**
 * `spawnerRuns`: a resident spawner (clankie-agent-exec --spawner, of the
 * service's uid) is in the process table. It tells a separated body from a
 * single-uid one when the service's environment cannot be read (an audit
 * from outside the service's tree: docker exec), since the service itself
 * holds no capability in either.
 */
export function classifyMode(creds: ProcessCredentials, environ: Readable<Record<string, string>>, ids: Identities | undefined, spawnerRuns = false): ModeVerdict {
  const marker = environ.ok ? (environ.value[SERVICE_ENV.separation] ?? null) : undefined;
  if (creds.uids.some((id) => id === 0)) {
    return { mode: "misconfigured", reasons: [`the service process runs as root (uids ${creds.uids.join(",")}): nothing dropped to the service uid`], marker };
  }
  const held = creds.capInh | creds.capPrm | creds.capEff | creds.capAmb;
  const holdsServiceCaps = held !== 0n;
  if (!holdsServiceCaps && (marker === null || (marker === undefined && !spawnerRuns))) {
    return { mode: "single-uid", reasons: ["no agent uid is configured"], marker };
  }
  const reasons: string[] = [];
  if (marker !== undefined && marker !== "1") reasons.push(`${SERVICE_ENV.separation} is ${marker === null ? "not set" : JSON.stringify(marker)}, want "1"`);
  if (!ids) reasons.push("the users and groups of ADR 0272 are not all defined");
  if (ids && creds.uids.some((id) => id !== ids.service.uid)) reasons.push(`uids ${creds.uids.join(",")}, want ${ids.service.uid} (${ids.service.name})`);
  // The service holds no capability, the bounding set included: the spawner starts agent work (src/agent-exec/spawner.ts).
  const heldSets = capabilitySets(creds).filter(([, mask]) => mask !== 0n).map(([name]) => name);
  if (heldSets.length > 0) reasons.push(`the service holds capabilities (${heldSets.join(", ")} not 0): it must hold none, the spawner starts agent work`);
  if (!creds.noNewPrivs) reasons.push("NoNewPrivs is 0");
  if (environ.ok && ids) {
    for (const [name, want] of [[SERVICE_ENV.agentUid, String(ids.agent.uid)], [SERVICE_ENV.agentUser, ids.agent.name], [SERVICE_ENV.agentExec, AGENT_EXEC_PATH]] as const) {
      if (environ.value[name] !== want) reasons.push(`${name} is ${JSON.stringify(environ.value[name] ?? null)}, want "${want}"`);
    }
  }
  if (reasons.length > 0) return { mode: "misconfigured", reasons, marker };
  return {
    mode: "separated",
    reasons: marker === undefined ? [`${SERVICE_ENV.separation} not verified (${environ.ok ? "" : environ.error}); judged by ${spawnerRuns ? "the spawner beside the service" : "the capabilities alone"}`] : [],
    marker,
  };
}

export interface Boundary {
  label: string;
  /** true: the service declared it; false: it did not; null: its declaration could not be read. */
  declared: boolean | null;
  /** Where the declaration was read, or why it could not be. */
  source: string | null;
}

export const BOUNDARY_VALUE = "complete";
export const NOT_YET = "not a boundary yet: workers still run as node";

/**
 * The service declares the boundary by having CLANKIE_BOUNDARY=complete in
 * its environment: in the environment its process was started with (read
 * from /proc/<pid>/environ), or, when this audit is the service's own
 * descendant running as the service uid (doctor), in the environment the
 * service handed to it.
 */
export function boundaryOf(
  mode: Mode,
  judged: { pid: number; environ: Readable<Record<string, string>> },
  auditor: { env: NodeJS.ProcessEnv; handedDownByService: boolean },
): Boundary {
  if (mode === "single-uid") return { label: "no boundary: single-uid body, no agent uid is configured", declared: false, source: null };
  if (mode === "misconfigured") return { label: "no boundary: the separation is misconfigured", declared: false, source: null };
  const name = SERVICE_ENV.boundary;
  const declared = (source: string): Boundary => ({ label: "boundary: the service declares every seam routed through clankie-agent-exec", declared: true, source });
  if (judged.environ.ok && judged.environ.value[name] === BOUNDARY_VALUE) return declared(`${name} in the environment of pid ${judged.pid}`);
  if (auditor.handedDownByService && auditor.env[name] === BOUNDARY_VALUE) return declared(`${name} handed to this audit by the service (pid ${judged.pid})`);
  if (judged.environ.ok || auditor.handedDownByService) {
    return { label: NOT_YET, declared: false, source: `no ${name}=${BOUNDARY_VALUE} in the environment of pid ${judged.pid}${auditor.handedDownByService ? " or of this audit" : ""}` };
  }
  return { label: NOT_YET, declared: null, source: `the service's declaration could not be read (${judged.environ.error})` };
}

export function judgeMode(verdict: ModeVerdict, judgedPid: number): Verdict {
  const found = { mode: verdict.mode, pid: judgedPid, marker: verdict.marker === undefined ? "unreadable" : verdict.marker, reasons: verdict.reasons };
  if (verdict.mode === "separated") {
    return pass(`separated: the service (pid ${judgedPid}) runs as node with no capability, and an agent uid is configured${verdict.reasons.length ? ` (${verdict.reasons.join("; ")})` : ""}`, found);
  }
  if (verdict.mode === "single-uid") return warn("single-uid: no agent uid is configured; model-directed work runs as node, as today", found, `to separate: ${LAUNCH_FIX}`);
  return fail(`misconfigured: ${verdict.reasons.join("; ")}`, found, LAUNCH_FIX);
}

export function judgeBoundary(boundary: Boundary, separated: boolean): Verdict {
  const found = { label: boundary.label, declared: boundary.declared, source: boundary.source };
  if (boundary.declared === true) return pass(boundary.label, found);
  return warn(`${boundary.label}${boundary.source ? ` (${boundary.source})` : ""}`, found, separated ? BOUNDARY_FIX : null);
}
