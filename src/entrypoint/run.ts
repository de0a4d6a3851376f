/*
 * clankie-separate [--] SERVICE-COMMAND...  (the image's ENTRYPOINT)
 *
 * Started as any uid but 0 (today's launch): exec the service command as
 * given. Started as root: the phases below, in this order, then the service
 * runs as node with only SETUID and SETGID.
 */
import { readIdentities } from "../accounts.ts";
import { STATE_DIR, TOOLS } from "../constants.ts";
import { readStatus } from "../proc-status.ts";
import { info, warn } from "../report.ts";
import { execReplace, prepareExec } from "../exec/replace.ts";
import { SETPRIV, serviceCommandLine, setprivToServiceArgs, verifyStageArgs } from "./drop.ts";
import { classifyLaunch } from "./launch-check.ts";
import { serviceEnvironment } from "./service-env.ts";
import { ensureMarkerDirectory, secureState } from "./state-layout.ts";
import { shareWorkspace } from "./workspace-layout.ts";
import { stageEnvironment } from "../verifier.ts";
import { existsSync, lstatSync } from "node:fs";

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

export function runEntrypoint(command: readonly string[]): never {
  const started = process.hrtime.bigint();

  /* Phase 1: what launched us. Refuses before anything on disk is touched. */
  const launch = classifyLaunch(readStatus());
  if (launch.mode === "legacy") {
    // Today's single-uid body: nothing changes, no agent uid is configured.
    execReplace({ command: command[0]!, args: command.slice(1), env: process.env as Record<string, string>, trustedUids: [0, launch.uid] });
  }

  /* Phase 2: who the service and the agent are. */
  const ids = readIdentities();

  /* Phase 3: the service environment, computed (and refused) before any change on disk. */
  const { env, dropped } = serviceEnvironment(process.env, ids);

  /* Phase 3b: every program we will run must pass the exec rules now, not after the walk. */
  prepareExec({ command: SETPRIV, args: [], env: {}, trustedUids: [0] });
  prepareExec({ command: TOOLS.perl, args: [], env: {}, trustedUids: [0] });
  const tini = existsSync(TOOLS.tini);
  if (tini) prepareExec({ command: TOOLS.tini, args: [], env: {}, trustedUids: [0] });
  const servicePath = prepareExec({ command: command[0]!, args: [], env: {}, trustedUids: [0, ids.service.uid] }).path;

  /* Phase 4: /state becomes service-only; /state/agent the agent's. */
  const state = secureState(ids);
  ensureMarkerDirectory(ids);

  /* Phase 5: /workspace gets the shared group (walked once per layout version). */
  const workspace = shareWorkspace(ids, lstatSync(STATE_DIR).dev, () => ensureMarkerDirectory(ids));

  /* Phase 6: report, then drop to the service through setpriv and verify there. */
  if (launch.mode === "root" && launch.extraCapabilities.length > 0) {
    warn(`capabilities beyond the six of ADR 0272 are dropped: ${launch.extraCapabilities.join(", ")}`);
  }
  if (dropped.length > 0) warn(`variables that load code or are ours to set were removed from the service's environment: ${dropped.join(", ")}`);
  const skipped = [...state.skippedExamples, ...workspace.stats.skippedExamples];
  if (state.skipped + workspace.stats.skipped > 0) {
    warn(`${plural(state.skipped + workspace.stats.skipped, "entry")} left alone, for example: ${skipped.join("; ")}`);
  }
  const ms = Number((process.hrtime.bigint() - started) / 1_000_000n);
  info(
    `separated: service ${ids.service.name} (${ids.service.uid}), agent ${ids.agent.name} (${ids.agent.uid}); ` +
      `/state ${state.checked} checked, ${state.fixed} fixed; ` +
      `/workspace ${workspace.walked ? "migrated" : "top only (layout marker current)"}, ${workspace.stats.checked} checked, ${workspace.stats.fixed} fixed; ${ms} ms`,
  );
  // execve(2) keeps the pid: the service's pid is ours, so tini knows here whether it will be PID 1.
  const line = serviceCommandLine(command, servicePath, process.pid, tini);
  const stage = stageEnvironment(env);
  execReplace({
    command: SETPRIV,
    args: setprivToServiceArgs(ids, verifyStageArgs(ids, line, stage.unset)),
    argv0: "setpriv",
    env: stage.env,
    trustedUids: [0],
  });
}
