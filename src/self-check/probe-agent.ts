/*
 * clankie-separate --probe-agent: the inside half of `--self-check --probe`.
 * It is started through clankie-agent-exec, so it runs as clankie-agent
 * after the shim's own verification, and reports what the agent holds and
 * what it can do, as one JSON line on stdout. Each attempt is made so that
 * it cannot leave a trace even where it succeeds:
 *
 *   write-state       open(2) /state with O_TMPFILE: the kernel checks write
 *                     permission on the directory (vfs_tmpfile) and, if it
 *                     grants it, makes an unnamed file that vanishes on
 *                     close; and open /state/credentials.json O_WRONLY
 *                     without O_TRUNC, closed unwritten
 *   read-credentials  open /state/credentials.json O_RDONLY, closed unread
 *   signal-service    kill(2) with signal 0: the permission check, no signal
 *   setpriv-node      setpriv --reuid=node ... -- /usr/bin/true
 */
import { closeSync, constants, openSync, readdirSync } from "node:fs";
import { readIdentities } from "../accounts.ts";
import { formatMask } from "../capabilities.ts";
import { EXIT, PROBE_AGENT_FLAG, STATE_DIR, TOOLS } from "../constants.ts";
import { readStatus } from "../proc-status.ts";
import { Refusal, writeLine } from "../report.ts";
import { runCapture } from "../system-exec.ts";

/** The service's pid reaches the probe through the shim's --env, never argv. */
export const PROBE_SERVICE_PID_VARIABLE = "CLANKIE_PROBE_SERVICE_PID";
export const PROBE_CREDENTIALS = `${STATE_DIR}/credentials.json`;
export const PROBE_TRUE = "/usr/bin/true";

/** open(2) O_TMPFILE (__O_TMPFILE | O_DIRECTORY) on x86_64 and arm64; Node does not export it. */
const O_TMPFILE = 0o20200000;

export type Outcome = "denied" | "possible" | "inconclusive";

export interface Attempt {
  id: "write-state" | "read-credentials" | "signal-service" | "setpriv-node";
  outcome: Outcome;
  detail: string;
}

export interface ProbeReport {
  probe: 1;
  pid: number;
  uids: number[];
  gids: number[];
  groups: number[];
  sets: { CapInh: string; CapPrm: string; CapEff: string; CapAmb: string; CapBnd: string };
  noNewPrivs: 0 | 1;
  attempts: Attempt[];
}

function errno(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error);
}

const REFUSED = new Set(["EACCES", "EPERM", "EROFS"]);

/** Opens and closes at once; what the kernel answered. */
function tryOpen(path: string, flags: number): "opened" | string {
  try {
    closeSync(openSync(path, flags, 0o600));
    return "opened";
  } catch (error) {
    return errno(error);
  }
}

export function tryWriteState(): Attempt {
  const tmp = tryOpen(STATE_DIR, O_TMPFILE | constants.O_WRONLY);
  const creds = tryOpen(PROBE_CREDENTIALS, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  const detail = `create in ${STATE_DIR} (O_TMPFILE): ${tmp}; open ${PROBE_CREDENTIALS} for writing: ${creds}`;
  // EOPNOTSUPP from O_TMPFILE comes after the permission check passed (fs/namei.c vfs_tmpfile).
  if (tmp === "opened" || tmp === "EOPNOTSUPP" || creds === "opened") return { id: "write-state", outcome: "possible", detail };
  if (REFUSED.has(tmp) && (REFUSED.has(creds) || creds === "ENOENT")) return { id: "write-state", outcome: "denied", detail };
  return { id: "write-state", outcome: "inconclusive", detail };
}

export function tryReadCredentials(): Attempt {
  const result = tryOpen(PROBE_CREDENTIALS, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  if (result === "opened") return { id: "read-credentials", outcome: "possible", detail: `open ${PROBE_CREDENTIALS}: opened` };
  if (REFUSED.has(result)) return { id: "read-credentials", outcome: "denied", detail: `open ${PROBE_CREDENTIALS}: ${result}` };
  // No credentials file to try: whether /state can be listed says whether it could be found.
  let listing: string;
  try {
    readdirSync(STATE_DIR);
    listing = "listed";
  } catch (error) {
    listing = errno(error);
  }
  const detail = `open ${PROBE_CREDENTIALS}: ${result}; list ${STATE_DIR}: ${listing}`;
  if (listing === "listed") return { id: "read-credentials", outcome: "possible", detail };
  return { id: "read-credentials", outcome: "inconclusive", detail };
}

export function trySignalService(pidText: string | undefined): Attempt {
  const pid = Number(pidText);
  if (!pidText || !Number.isInteger(pid) || pid < 1) {
    return { id: "signal-service", outcome: "inconclusive", detail: `no service pid was handed to the probe (${PROBE_SERVICE_PID_VARIABLE})` };
  }
  try {
    process.kill(pid, 0);
    return { id: "signal-service", outcome: "possible", detail: `kill(${pid}, 0): permitted` };
  } catch (error) {
    const code = errno(error);
    return { id: "signal-service", outcome: code === "EPERM" ? "denied" : "inconclusive", detail: `kill(${pid}, 0): ${code}` };
  }
}

export function trySetprivToService(serviceUid: number, serviceGid: number): Attempt {
  const args = [`--reuid=${serviceUid}`, `--regid=${serviceGid}`, "--clear-groups", "--", PROBE_TRUE];
  let result;
  try {
    result = runCapture({ command: TOOLS.setpriv, args, timeoutMs: 10_000 });
  } catch (error) {
    return { id: "setpriv-node", outcome: "inconclusive", detail: `could not run setpriv: ${(error as Error).message}` };
  }
  const said = result.stderr.toString("utf8").trim().split("\n")[0] ?? "";
  const detail = `setpriv ${args.join(" ")}: ${result.error ?? (result.signal ? `killed by ${result.signal}` : `exit ${result.status}`)}${said ? `: ${said}` : ""}`;
  if (result.error !== undefined || result.signal) return { id: "setpriv-node", outcome: "inconclusive", detail };
  return { id: "setpriv-node", outcome: result.status === 0 ? "possible" : "denied", detail };
}

export function runProbeAgent(argv: readonly string[]): number {
  if (argv.length > 0) {
    throw new Refusal(EXIT.usage, `${PROBE_AGENT_FLAG} takes no arguments`, "this stage is started by clankie-separate --self-check --probe");
  }
  const ids = readIdentities();
  const status = readStatus();
  // Only as the agent: as any other uid the attempts would test the wrong user.
  if (status.uids.some((uid) => uid !== ids.agent.uid)) {
    throw new Refusal(EXIT.launchRefused, `${PROBE_AGENT_FLAG} runs as ${ids.agent.name} (${ids.agent.uid}) only, not as uid ${status.uids.join(",")}`, "run clankie-separate --self-check --probe as the service; it starts this stage through clankie-agent-exec");
  }
  const report: ProbeReport = {
    probe: 1,
    pid: process.pid,
    uids: status.uids,
    gids: status.gids,
    groups: status.groups,
    sets: {
      CapInh: formatMask(status.capInh),
      CapPrm: formatMask(status.capPrm),
      CapEff: formatMask(status.capEff),
      CapAmb: formatMask(status.capAmb),
      CapBnd: formatMask(status.capBnd),
    },
    noNewPrivs: status.noNewPrivs ? 1 : 0,
    attempts: [tryWriteState(), tryReadCredentials(), trySignalService(process.env[PROBE_SERVICE_PID_VARIABLE]), trySetprivToService(ids.service.uid, ids.service.gid)],
  };
  writeLine(1, JSON.stringify(report));
  return EXIT.ok;
}
