/*
 * clankie-separate [--] SERVICE-COMMAND...  (the image's ENTRYPOINT)
 *
 * Started as any uid but 0 (today's launch): exec the service command as
 * given. Started as root: the phases below, in this order, then the spawner
 * runs as node with only SETUID and SETGID, and the service as node with no
 * capability. Everything that can refuse on a
 * fact of the launch refuses before the first change on disk.
 *
 *   checkLaunch -> readIdentities -> vetPrograms -> secureState
 *     -> joinWorkspaceGroup -> shareWorkspace -> resetPrivateRoot
 *     -> dropToServiceAndSpawner
 *
 * secureState walks /state at every start, in one perl walk (state-acl.ts)
 * that reads and fixes owners, modes and ACLs.
 */
import { existsSync, lstatSync } from "node:fs";
import { agentIds, formatAgentIds, type Identities, readIdentities } from "../accounts.ts";
import { privateGroupsOf } from "../private-groups.ts";
import { ENTRYPOINT_NAME, SPAWNER_FD, SPAWNER_FD_VARIABLE, SPAWNER_IDS_VARIABLE, STATE_DIR, SYSTEM_PATH, TOOLS } from "../constants.ts";
import { execReplace, prepareExec } from "../exec/replace.ts";
import { readStatus } from "../os/proc-status.ts";
import { oneLine, osCall, writeLine } from "../report.ts";
import { stageEnvironment } from "../stage/stage.ts";
import { serviceCommandLine, setprivToCaplessServiceArgs, setprivToSpawnerArgs, SPAWNER_LINE, spawnerPairArgs, verifyCaplessStageArgs, verifyStageArgs } from "./drop.ts";
import { classifyLaunch, type LaunchMode } from "./launch-check.ts";
import { serviceEnvironment } from "./service-env.ts";
import { secureState } from "./state-layout.ts";
import type { StateWalkResult } from "./state-acl.ts";
import { joinWorkspaceGroup, shareWorkspace, type WorkspaceResult } from "./workspace-layout.ts";
import { resetPrivateRoot } from "./private-root.ts";

function plural(n: number, word: string, words = `${word}s`): string {
  return `${n} ${n === 1 ? word : words}`;
}

/** Phase: what launched us. Today's launch (not root) execs the service unchanged, here. */
function checkLaunch(command: readonly string[]): Extract<LaunchMode, { mode: "root" }> {
  const launch = classifyLaunch(readStatus());
  if (launch.mode === "legacy") {
    // Today's single-uid body: nothing changes, no agent uid is configured.
    execReplace({ command: command[0]!, args: command.slice(1), env: process.env as Record<string, string>, trustedUids: [0, launch.uid] });
  }
  return launch;
}

/** Phase: every program the root phase and the drop will run passes the exec rules now, not after the walk. */
function vetPrograms(command: readonly string[], ids: Identities): { servicePath: string; tini: boolean } {
  const tini = existsSync(TOOLS.tini);
  for (const tool of [TOOLS.setpriv, TOOLS.perl, ...(tini ? [TOOLS.tini] : [])]) prepareExec({ command: tool, args: [], env: {}, trustedUids: [0] });
  return { servicePath: prepareExec({ command: command[0]!, args: [], env: {}, trustedUids: [0, ids.service.uid] }).path, tini };
}

/** One line for what was dropped or left alone, one for what was done. */
function report(ids: Identities, launch: Extract<LaunchMode, { mode: "root" }>, dropped: readonly string[], state: StateWalkResult, workspace: WorkspaceResult, started: bigint): void {
  if (state.stripped > 0) printWarning(`ACLs were removed from ${state.stripped} ${state.stripped === 1 ? "entry" : "entries"} of ${STATE_DIR} (its layout is its mode bits), for example: ${state.examples.join("; ")}`);
  if (launch.extraCapabilities.length > 0) printWarning(`capabilities beyond the six of ADR 0272 are dropped: ${launch.extraCapabilities.join(", ")}`);
  if (dropped.length > 0) printWarning(`variables that load code or are ours to set were removed from the service's environment: ${dropped.join(", ")}`);
  const skipped = [...state.skippedExamples, ...workspace.stats.skippedExamples];
  if (state.skipped + workspace.stats.skipped > 0) {
    printWarning(`${plural(state.skipped + workspace.stats.skipped, "entry", "entries")} left alone, for example: ${skipped.join("; ")}`);
  }
  const ms = Number((process.hrtime.bigint() - started) / 1_000_000n);
  printInfo(
    `separated: service ${ids.service.name} (${ids.service.uid}), agent ${ids.agent.name} (${ids.agent.uid}); ` +
      `/state walked, ${state.checked} checked, ${state.fixed} fixed; ` +
      `/workspace ${workspace.walked ? "migrated" : "top only (layout marker current)"}, ${workspace.stats.checked} checked, ${workspace.stats.fixed} fixed; ${ms} ms`,
  );
}

/**
 * Phase: the request channel and the two drops (perl, spawner-pair.pl): the
 * spawner, setpriv to node with SETUID and SETGID and its verification
 * stage, as a child; the service, setpriv to node with no capability and its
 * stage, then the service under tini, in this pid.
 */
function dropToServiceAndSpawner(ids: Identities, command: readonly string[], vetted: { servicePath: string; tini: boolean }, env: Record<string, string>): never {
  // execve(2) keeps the pid: the service's pid is ours, so tini knows here whether it will be PID 1.
  const line = serviceCommandLine(command, vetted.servicePath, process.pid, vetted.tini);
  const spawner = [TOOLS.setpriv, ...setprivToSpawnerArgs(ids, verifyStageArgs(ids, SPAWNER_LINE))];
  const service = [TOOLS.setpriv, ...setprivToCaplessServiceArgs(ids, verifyCaplessStageArgs(ids, line))];
  const channel = { [SPAWNER_FD_VARIABLE]: String(SPAWNER_FD) };
  return execReplace({
    command: TOOLS.perl,
    args: spawnerPairArgs(SPAWNER_FD, stageEnvironment({ PATH: SYSTEM_PATH, ...channel, [SPAWNER_IDS_VARIABLE]: formatAgentIds(agentIds(ids)) }), spawner, service),
    argv0: "perl",
    env: stageEnvironment({ ...env, ...channel }),
    trustedUids: [0],
  });
}

export async function runEntrypoint(command: readonly string[]): Promise<never> {
  const started = process.hrtime.bigint();
  const launch = checkLaunch(command);
  const ids = readIdentities();
  privateGroupsOf(ids); // a wrong private-job pool is refused before any change on disk (src/private-groups.ts)
  // The service's environment is computed (and refused) before any change on disk.
  const { env, dropped } = serviceEnvironment(process.env, ids);
  const vetted = vetPrograms(command, ids);
  const state = await secureState(ids);
  joinWorkspaceGroup(ids);
  const workspace = shareWorkspace(ids, osCall("lstat", STATE_DIR, () => lstatSync(STATE_DIR).dev));
  const staleLeases = resetPrivateRoot(ids);
  if (staleLeases === "read-only") printWarning("/run is read-only: private jobs (--private-job) are refused; add --tmpfs /run:rw,exec,nosuid,nodev,mode=755 to the launch (docs/launch.md)");
  else if (staleLeases > 0) printInfo(`removed ${plural(staleLeases, "private-job lease")} a previous run left`);
  report(ids, launch, dropped, state, workspace, started);
  return dropToServiceAndSpawner(ids, command, vetted, env);
}

/*
 * The root start's notes, through report.ts's writer; here, not in report.ts,
 * so that the resident spawner (which loads report.ts) does not load them.
 */

/** One "clankie-separate: warning: ..." line on stderr (the audit's Check with status "warn" is another thing: src/self-check/check.ts). */
function printWarning(what: string): void {
  writeLine(2, `${ENTRYPOINT_NAME}: warning: ${oneLine(what)}`);
}

/** One "clankie-separate: ..." line on stderr. */
function printInfo(what: string): void {
  writeLine(2, `${ENTRYPOINT_NAME}: ${oneLine(what)}`);
}
