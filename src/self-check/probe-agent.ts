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
 *   lower-oom-score   open /proc/self/oom_score_adj for writing and write
 *                     one less than it holds: a Landlock domain refuses the
 *                     open (EACCES); without one, only the kernel's floor
 *                     (oom_score_adj_min) can refuse the value. Made by a
 *                     perl child, in the probe's own domain, on its own
 *                     value: nothing outlives it
 *   abstract-socket   connect to the abstract unix socket the audit listens
 *                     on (its name in CLANKIE_PROBE_SOCKET): Landlock ABI 6
 *                     scoping refuses it (EPERM); closed at once, unwritten
 *
 * and reports the Seccomp: and Seccomp_filters: fields the kernel shows for
 * it in /proc/self/status.
 */
import PROBE_CONFINEMENT_TEMPLATE from "../perl/probe-confinement.pl";
import { closeSync, constants, openSync, readdirSync, readFileSync } from "node:fs";
import { readIdentities } from "../accounts.ts";
import { EXIT, PROBE_AGENT_FLAG, PROBE_SERVICE_PID_VARIABLE, PROBE_SOCKET_VARIABLE, STATE_DIR, TOOLS } from "../constants.ts";
import { errnoName } from "../os/errno.ts";
import { parseStatus } from "../os/proc-status.ts";
import { parseSeccompStatus, type SeccompStatus } from "./process-table.ts";
import { codeOf, Refusal, writeLine } from "../report.ts";
import { runCapture } from "../exec/capture.ts";
import { howItEnded, saying } from "./check.ts";
import { capabilitySets, formatMask } from "./service-process.ts";

export const PROBE_CREDENTIALS = `${STATE_DIR}/credentials.json`;
export const PROBE_TRUE = "/usr/bin/true";

/** open(2) O_TMPFILE (__O_TMPFILE | O_DIRECTORY) on x86_64 and arm64; Node does not export it. */
const O_TMPFILE = 0o20200000;

export type Outcome = "denied" | "possible" | "inconclusive";

export interface Attempt {
  id: "write-state" | "read-credentials" | "signal-service" | "setpriv-node" | "lower-oom-score" | "abstract-socket";
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
  seccomp: SeccompStatus;
  attempts: Attempt[];
}

const REFUSED = new Set(["EACCES", "EPERM", "EROFS"]);

/** What the kernel answered a call: `done` when it succeeded, else its errno code. */
function answerOf(call: () => unknown, done: string): string {
  try {
    call();
    return done;
  } catch (error) {
    return codeOf(error);
  }
}
/** Opens and closes at once. */
const tryOpen = (path: string, flags: number): string => answerOf(() => closeSync(openSync(path, flags, 0o600)), "opened");

/** What an attempt found; its id is given where the report lists the attempts. */
type Answer = Omit<Attempt, "id">;

function tryWriteState(): Answer {
  const tmp = tryOpen(STATE_DIR, O_TMPFILE | constants.O_WRONLY);
  const creds = tryOpen(PROBE_CREDENTIALS, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  const detail = `create in ${STATE_DIR} (O_TMPFILE): ${tmp}; open ${PROBE_CREDENTIALS} for writing: ${creds}`;
  // EOPNOTSUPP from O_TMPFILE comes after the permission check passed (fs/namei.c vfs_tmpfile).
  if (tmp === "opened" || tmp === "EOPNOTSUPP" || creds === "opened") return { outcome: "possible", detail };
  return { outcome: REFUSED.has(tmp) && (REFUSED.has(creds) || creds === "ENOENT") ? "denied" : "inconclusive", detail };
}

function tryReadCredentials(): Answer {
  const result = tryOpen(PROBE_CREDENTIALS, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  if (result === "opened" || REFUSED.has(result)) return { outcome: result === "opened" ? "possible" : "denied", detail: `open ${PROBE_CREDENTIALS}: ${result}` };
  // No credentials file to try: whether /state can be listed says whether it could be found.
  const listing = answerOf(() => readdirSync(STATE_DIR), "listed");
  return { outcome: listing === "listed" ? "possible" : "inconclusive", detail: `open ${PROBE_CREDENTIALS}: ${result}; list ${STATE_DIR}: ${listing}` };
}

function trySignalService(pidText: string | undefined): Answer {
  const pid = Number(pidText);
  if (!pidText || !Number.isInteger(pid) || pid < 1) return { outcome: "inconclusive", detail: `no service pid was handed to the probe (${PROBE_SERVICE_PID_VARIABLE})` };
  const answer = answerOf(() => process.kill(pid, 0), "permitted");
  return { outcome: answer === "permitted" ? "possible" : answer === "EPERM" ? "denied" : "inconclusive", detail: `kill(${pid}, 0): ${answer}` };
}

function trySetprivToService(serviceUid: number, serviceGid: number): Answer {
  const args = [`--reuid=${serviceUid}`, `--regid=${serviceGid}`, "--clear-groups", "--", PROBE_TRUE];
  let result;
  try {
    result = runCapture({ command: TOOLS.setpriv, args, timeoutMs: 10_000 });
  } catch (error) {
    return { outcome: "inconclusive", detail: `could not run setpriv: ${(error as Error).message}` };
  }
  const detail = saying(`setpriv ${args.join(" ")}: ${howItEnded(result)}`, result.stderr);
  return { outcome: result.error !== undefined || result.signal ? "inconclusive" : result.status === 0 ? "possible" : "denied", detail };
}

/** The attempts, src/perl/probe-confinement.pl (its header says what it prints). */
export const CONFINEMENT_ATTEMPTS_SCRIPT = PROBE_CONFINEMENT_TEMPLATE.trim();

/** Pure: the two attempts (lower-oom-score, abstract-socket) from the perl child's output. */
export function parseConfinementAttempts(stdout: string, socketName: string | undefined): [Answer, Answer] {
  const noAnswer: Answer = { outcome: "inconclusive", detail: `no answer from the attempt: ${JSON.stringify(stdout.slice(0, 120))}` };
  const oom = /^oom (\S+) (\S+) (\S+)$/m.exec(stdout);
  const socket = /^socket (\S+)$/m.exec(stdout)?.[1];
  const refusedBy = (errno: string, refusals: readonly string[], detail: (code: string) => string): Answer => {
    const code = errnoName(errno);
    return { outcome: refusals.includes(code) ? "denied" : "inconclusive", detail: detail(code) };
  };
  let lower = noAnswer;
  if (oom) {
    const [, before, open, write] = oom as unknown as [string, string, string, string];
    const target = Number(before) - 1;
    if (open === "-") lower = { outcome: "inconclusive", detail: `/proc/self/oom_score_adj holds ${before}: nothing lower to try` };
    else if (open !== "0") lower = refusedBy(open, ["EACCES", "EPERM"], (code) => `open /proc/self/oom_score_adj for writing: ${code}`);
    else if (write === "0") lower = { outcome: "possible", detail: `wrote ${target} over ${before} to /proc/self/oom_score_adj` };
    else lower = refusedBy(write, ["EACCES"], (code) => `open /proc/self/oom_score_adj for writing: opened; write ${target} over ${before}: ${code}${code === "EACCES" ? " (the kernel's floor, oom_score_adj_min)" : ""}`);
  }
  const where = `connect(@${socketName}), the audit's socket outside the agent's domain`;
  let connect = noAnswer;
  if (!socketName) connect = { outcome: "inconclusive", detail: `no socket name was handed to the probe (${PROBE_SOCKET_VARIABLE})` };
  else if (socket === "0") connect = { outcome: "possible", detail: `${where}: connected` };
  else if (socket !== undefined && socket !== "-") connect = refusedBy(socket, ["EPERM", "EACCES"], (code) => `${where}: ${code}`);
  return [lower, connect];
}

function tryConfinement(socketName: string | undefined): Attempt[] {
  let answers: [Answer, Answer];
  try {
    const result = runCapture({ command: TOOLS.perl, args: ["-e", CONFINEMENT_ATTEMPTS_SCRIPT, socketName ?? ""], timeoutMs: 10_000, maxBytes: 4096 });
    const failed: Answer = { outcome: "inconclusive", detail: `perl: ${howItEnded(result)}` };
    answers = result.error === undefined && result.status === 0 ? parseConfinementAttempts(result.stdout.toString("latin1"), socketName) : [failed, failed];
  } catch (error) {
    const failed: Answer = { outcome: "inconclusive", detail: `could not run perl: ${(error as Error).message}` };
    answers = [failed, failed];
  }
  return [{ id: "lower-oom-score", ...answers[0] }, { id: "abstract-socket", ...answers[1] }];
}

export function runProbeAgent(argv: readonly string[]): number {
  if (argv.length > 0) {
    throw new Refusal(EXIT.usage, `${PROBE_AGENT_FLAG} takes no arguments`, "this stage is started by clankie-separate --self-check --probe");
  }
  const ids = readIdentities();
  const statusText = readFileSync("/proc/self/status", "latin1");
  const status = parseStatus(statusText);
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
    sets: Object.fromEntries(capabilitySets(status).map(([name, mask]) => [name, formatMask(mask)])) as ProbeReport["sets"],
    noNewPrivs: status.noNewPrivs ? 1 : 0,
    seccomp: parseSeccompStatus(statusText),
    attempts: [
      { id: "write-state", ...tryWriteState() },
      { id: "read-credentials", ...tryReadCredentials() },
      { id: "signal-service", ...trySignalService(process.env[PROBE_SERVICE_PID_VARIABLE]) },
      { id: "setpriv-node", ...trySetprivToService(ids.service.uid, ids.service.gid) },
      ...tryConfinement(process.env[PROBE_SOCKET_VARIABLE] || undefined),
    ],
  };
  writeLine(1, JSON.stringify(report));
  return EXIT.ok;
}
