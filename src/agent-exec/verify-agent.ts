/*
 * The agent-side stage: this executable, exec'd by setpriv as clankie-agent.
 * Before the agent's command runs it reads /proc/self/status and
 * /proc/self/stat and refuses on any difference from what the shim asked for
 * (issue 4 point 8): ids, groups, all capability sets empty but the bounding
 * set, NoNewPrivs, a session of its own without a controlling terminal, and
 * no inherited fd beyond 0-2 and --keep-fd. Then umask, chdir as the agent
 * (so a directory the agent cannot enter is refused), and execve.
 */
import type { AgentExecRequest } from "../cli.ts";
import { EXIT } from "../constants.ts";
import { credentialDifferences, readSession, readStatus } from "../proc-status.ts";
import { Refusal } from "../report.ts";
import { execReplace } from "../system-exec.ts";
import { listDescriptors, strayDescriptors } from "./descriptors.ts";
import { AGENT_UMASK } from "./plan.ts";

export function agentDifferences(request: Extract<AgentExecRequest, { kind: "verify-agent" }>): string[] {
  const { expect } = request;
  const differences = credentialDifferences(readStatus(), {
    uid: expect.uid,
    gid: expect.gid,
    groups: expect.groups,
    capInh: 0n,
    capPrm: 0n,
    capEff: 0n,
    capAmb: 0n,
    noNewPrivs: true,
  });
  if ("exec" in request.action) {
    // Agent code gets a session of its own; the --signal stage runs no agent code.
    const session = readSession();
    if (session.session !== session.pid) differences.push(`session ${session.session} (want its own, ${session.pid})`);
    if (session.ttyNr !== 0) differences.push(`controlling terminal ${session.ttyNr} (want none)`);
  }
  const stray = strayDescriptors(listDescriptors(), expect.keepFds);
  if (stray.length > 0) differences.push(`inherited fds ${stray.join(",")} (want only 0-2${expect.keepFds.length ? ` and ${expect.keepFds.join(",")}` : ""})`);
  return differences;
}

export function runVerifyAgent(request: Extract<AgentExecRequest, { kind: "verify-agent" }>): number {
  const differences = agentDifferences(request);
  if (differences.length > 0) {
    throw new Refusal(EXIT.verifyFailed, `the agent process is not what was asked: ${differences.join("; ")}`, "do not start agent work on this body; run clankie-separate --self-check --probe and report its output");
  }
  if ("signal" in request.action) {
    try {
      process.kill(-request.action.pgid, request.action.signal as NodeJS.Signals);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ESRCH") throw new Refusal(EXIT.dataRefused, `no agent process group ${request.action.pgid}`, "it has already exited");
      if (code === "EPERM") throw new Refusal(EXIT.launchRefused, `process group ${request.action.pgid} is not the agent's`, "only agent work can be signalled through the shim");
      throw error;
    }
    return EXIT.ok;
  }
  process.umask(AGENT_UMASK);
  try {
    process.chdir(request.expect.cwd);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Refusal(EXIT.launchRefused, `the agent cannot enter ${request.expect.cwd} (${code})`, "pass a --cwd under /workspace that group clankie-workspace can search");
  }
  const [command, ...args] = request.action.exec;
  execReplace({ command: command!, args, env: process.env as Record<string, string> });
}
