/*
 * clankie-separate --self-check [--json] [--probe]
 *
 * The audit doctor shows. It reads, and changes nothing: no file is written,
 * no mode or owner changed, no signal sent; --probe starts one process as
 * the agent whose attempts leave no trace. Run by the service (doctor), by
 * root (docker exec), or in a legacy single-uid body. It judges the body by
 * the service's process, not by its own, and says which one it judged.
 *
 * Exit: 0 when no check failed (warnings allowed), 1 when one did, 64 for a
 * bad command line.
 */
import { lstatSync, readFileSync } from "node:fs";
import { agentGroups, type Identities, parsePasswd } from "../accounts.ts";
import { namesOf } from "../os/capabilities.ts";
import { EXIT, GROUP_FILE, PASSWD_FILE, SERVICE_USER, STATE_DIR } from "../constants.ts";
import { PROGRAM_VERSION } from "../build-info.ts";
import { writeLine } from "../report.ts";
import type { CaptureResult } from "../exec/capture.ts";
import { checkAccounts } from "./accounts.ts";
import { cannotRun, type Check, guarded, reasonOf } from "./check.ts";
import { checkConfinement } from "./confinement.ts";
import { checkEnvironment } from "./environment.ts";
import type { CapabilityScan } from "./file-caps.ts";
import { checkBundle, checkInstalledExecutable, checkFileCapabilities, checkMounts, checkPrivilegedFiles, checkReadOnlyRoot, checkTools } from "./image.ts";
import { excludedDirectories, type Mount, parseMountinfo } from "../os/mountinfo.ts";
import { IMAGE_WALK_SKIP, type ImageWalk, parseImageScan, startImageScan } from "./image-scan.ts";
import { chooseJudged, handedDownByService, relationTo } from "./judged.ts";
import { kernelChecks } from "./kernel.ts";
import { boundaryCheck, boundaryOf, classifyMode, modeCheck, type ModeVerdict } from "./mode.ts";
import { runProbe } from "./probe.ts";
import { checkRootProcesses, checkWorkspaceExecutables } from "./processes.ts";
import { parseProcessStatus, type ProcessEntry, readProcessTable } from "../os/proc-status.ts";
import { lineage, type Readable, readEnviron, readExe } from "./proc-table.ts";
import { buildDocument, renderJson, renderText } from "./render.ts";
import { checkCapabilities, checkNoNewPrivs, checkProcessIds } from "./service-process.ts";
import { auditState, checkAgentHome, checkAgentVolume, stateChecks } from "./state.ts";
import { workspaceChecks } from "./workspace.ts";

function readText(path: string): string {
  return readFileSync(path, "utf8");
}

function selfEntry(): ProcessEntry {
  return parseProcessStatus(process.pid, readFileSync("/proc/self/status", "latin1"));
}

/** The service uid even when the accounts as a whole are wrong: the judged process is found by it. */
function serviceUidOf(ids: Identities | undefined): number | undefined {
  if (ids) return ids.service.uid;
  try {
    return parsePasswd(readText(PASSWD_FILE)).find((user) => user.name === SERVICE_USER)?.uid;
  } catch {
    return undefined;
  }
}

function accountsFacts(): { checks: Check[]; ids: Identities | undefined } {
  let passwd: string;
  let group: string;
  try {
    passwd = readText(PASSWD_FILE);
    group = readText(GROUP_FILE);
  } catch (error) {
    return { checks: [cannotRun("accounts", `${PASSWD_FILE} and ${GROUP_FILE}`, error, "the image must have readable /etc/passwd and /etc/group")], ids: undefined };
  }
  const result = checkAccounts(passwd, group);
  return { checks: [result.check], ids: result.ids };
}

function stateFacts(ids: Identities | undefined, mode: ModeVerdict["mode"]): Check[] {
  // Which filesystem the agent's home is on needs no accounts.
  const volume = guarded("state.agent-volume", `${STATE_DIR}/agent`, "run the audit as root", () => checkAgentVolume(mode));
  if (!ids) {
    const why = new Error("the users and groups of ADR 0272 are not all defined (see accounts)");
    return [...["state.layout", "state.release", "state.agent-home"].map((id) => cannotRun(id, STATE_DIR, why, "fix the accounts check first")), ...volume];
  }
  return [
    ...guarded(["state.layout", "state.release"], STATE_DIR, "run the audit as root", () => stateChecks(auditState(ids), mode)),
    ...guarded("state.agent-home", `${STATE_DIR}/agent`, "run the audit as root", () => checkAgentHome(ids, mode)),
    ...volume,
  ];
}

function workspaceFacts(ids: Identities | undefined, mode: ModeVerdict["mode"]): Check[] {
  if (!ids) {
    const why = new Error("the users and groups of ADR 0272 are not all defined (see accounts)");
    return ["workspace.top", "workspace.marker"].map((id) => cannotRun(id, "/workspace", why, "fix the accounts check first"));
  }
  let stateDev: number | undefined;
  try {
    stateDev = lstatSync(STATE_DIR).dev;
  } catch {
    stateDev = undefined;
  }
  return guarded(["workspace.top", "workspace.marker"], "/workspace", "run the audit as root", () => workspaceChecks(ids, stateDev, mode));
}

/** The image scan, started before the other checks so that it runs beside them (image-scan.ts). */
interface PendingImageScan {
  mounts: Mount[];
  excluded: ReadonlySet<string>;
  output: Promise<CaptureResult> | { error: string };
}

function startImageFacts(): PendingImageScan | { error: unknown } {
  let mounts: Mount[];
  try {
    mounts = parseMountinfo(readFileSync("/proc/self/mountinfo", "latin1"));
  } catch (error) {
    return { error };
  }
  const excluded = excludedDirectories(mounts, IMAGE_WALK_SKIP);
  try {
    return { mounts, excluded, output: startImageScan(excluded) };
  } catch (error) {
    return { mounts, excluded, output: { error: reasonOf(error) } };
  }
}

async function imageFacts(ids: Identities | undefined, mode: ModeVerdict["mode"], pending: PendingImageScan | { error: unknown }): Promise<Check[]> {
  const checks: Check[] = [
    ...guarded("image.executable", "this executable", "run the installed executable", checkInstalledExecutable),
    ...guarded("image.bundle", "the embedded bundle", "run the installed executable", checkBundle),
    ...guarded("image.tools", "the tools", "run the audit as root", checkTools),
  ];
  if (!("mounts" in pending)) {
    const fix = "mount /proc in the container";
    const error = pending.error;
    return [...checks, cannotRun("image.setuid", "the image's filesystems", error, fix), cannotRun("image.file-capabilities", "the image's filesystems", error, fix, "warn"), cannotRun("image.mounts", "the mounts", error, fix, "warn"), cannotRun("image.read-only-root", "the mounts", error, fix, "warn")];
  }
  const { mounts, excluded } = pending;
  checks.push(...guarded("image.read-only-root", "the mounts", "mount /proc in the container", () => checkReadOnlyRoot(mounts, mode)));
  let walked: { walk: ImageWalk; scan: CapabilityScan } | { error: string };
  const output = await pending.output;
  if (!("stdout" in output)) walked = { error: output.error }; // perl could not be started
  else if (output.error !== undefined || output.status !== 0) {
    const why = output.error ?? (output.signal ? `killed by ${output.signal}` : `exit ${output.status}`);
    const said = output.stderr.toString("utf8").split("\n")[0] ?? "";
    walked = { error: `${output.path} failed (${why})${said ? `: ${said}` : ""}` };
  } else {
    try {
      walked = parseImageScan(output.stdout, mounts, excluded);
    } catch (error) {
      walked = { error: reasonOf(error) };
    }
  }
  if ("error" in walked) {
    const why = new Error(`the image walk (perl) did not complete: ${walked.error}`);
    const fix = "keep perl-base in the image (it is Essential in Debian): the audit walks the image and reads security.capability through it";
    return [...checks, cannotRun("image.setuid", "the image's filesystems", why, fix), cannotRun("image.file-capabilities", "the image's filesystems", why, fix, "warn"), ...guarded("image.mounts", "the mounts", "mount /proc in the container", () => checkMounts(mounts))];
  }
  const { walk, scan } = walked;
  return [
    ...checks,
    ...guarded("image.setuid", "set-user-ID files", "run the audit as root", () => checkPrivilegedFiles(walk, ids ? { uid: ids.agent.uid, groups: agentGroups(ids) } : undefined)),
    ...guarded("image.file-capabilities", "file capabilities", "run the audit as root", () => checkFileCapabilities(walk, scan)),
    ...guarded("image.mounts", "the mounts", "mount /proc in the container", () => checkMounts(mounts)),
  ];
}

export async function runSelfCheck(request: { json: boolean; probe: boolean }): Promise<number> {
  /* 1. Who is asking, and which process stands for the body. */
  const self = selfEntry();
  let table: ProcessEntry[];
  try {
    table = readProcessTable();
  } catch {
    table = [self];
  }
  if (!table.some((entry) => entry.pid === self.pid)) table.push(self);
  const accounts = accountsFacts();
  const ids = accounts.ids;
  const serviceUid = serviceUidOf(ids);
  const choice = chooseJudged(table, self, serviceUid);
  const judged = choice.entry;
  const isSelf = judged.pid === self.pid;
  const environ: Readable<Record<string, string>> = isSelf ? { ok: true, value: process.env as Record<string, string> } : readEnviron(judged.pid);
  const relation = relationTo(table, self.pid, judged.pid);
  const handed = serviceUid !== undefined && handedDownByService(table, self.pid, judged.pid, serviceUid);

  /* 2. Mode and boundary, judged by that process. */
  const verdict = classifyMode(judged.creds, environ, ids);
  const boundary = boundaryOf(verdict.mode, { pid: judged.pid, environ }, { env: process.env, handedDownByService: handed });
  const mode = verdict.mode;
  const judgedProcess = { pid: judged.pid, name: judged.name, creds: judged.creds };

  /*
   * 3. Every check; none of them writes. The image walk starts first (after
   * the process table was read: its perl is not one of the body's processes)
   * and runs beside the /state and /workspace checks.
   */
  const pendingImage = startImageFacts();
  const stateAndWorkspace = [...stateFacts(ids, mode), ...workspaceFacts(ids, mode)];
  const image = await imageFacts(ids, mode, pendingImage);
  // Where the kernel offers all of it, an agent the probe finds unconfined is a fault, not a limit of the host.
  const confinement = guarded("agent.confinement", "Landlock and seccomp", "mount /proc in the container and keep perl-base in the image", checkConfinement);
  const confinementOffered = confinement.every((c) => c.status === "pass");
  const checks: Check[] = [
    modeCheck(verdict, judged.pid),
    boundaryCheck(boundary, mode === "separated"),
    checkProcessIds(judgedProcess, ids, mode),
    checkCapabilities(judgedProcess, mode),
    checkNoNewPrivs(judgedProcess, mode),
    ...accounts.checks,
    ...stateAndWorkspace,
    ...image,
    ...guarded("processes.root", "processes", "mount /proc in the container", () => checkRootProcesses(table, lineage(table, self.pid), mode)),
    ...guarded("processes.workspace-exe", "processes", "mount /proc in the container", () => checkWorkspaceExecutables(table, serviceUid, self.pid, readExe, mode)),
    checkEnvironment(process.env, { pid: judged.pid, self: isSelf, environ }),
    ...kernelChecks(),
    ...confinement,
    ...(request.probe ? guarded("probe", "the agent", "run the probe from the service", () => runProbe(mode, self.creds, ids, judged.pid, confinementOffered)) : []),
  ];

  /* 4. One document, in the form asked for. */
  const doc = buildDocument({
    version: PROGRAM_VERSION,
    mode,
    boundary,
    judged: { pid: judged.pid, name: judged.name, uid: judged.creds.uids[0], reason: choice.reason },
    auditor: { pid: self.pid, uid: self.creds.uids[0], capabilities: namesOf(self.creds.capEff), noNewPrivs: self.creds.noNewPrivs ? 1 : 0, relation },
    probe: request.probe,
    checks,
  });
  writeLine(1, request.json ? renderJson(doc) : renderText(doc));
  return doc.ok ? EXIT.ok : EXIT.checkFailed;
}
