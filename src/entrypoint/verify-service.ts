/*
 * The verification stage: this same executable, exec'd by setpriv as the
 * service. setpriv exits 0 even when an ambient raise failed, so before the
 * service command runs we read /proc/self/status and refuse on any difference
 * from what the drop asked for.
 */
import { existsSync } from "node:fs";
import { EXIT, TOOLS } from "../constants.ts";
import { credentialDifferences, readStatus } from "../proc-status.ts";
import { Refusal } from "../report.ts";
import { execReplace } from "../system-exec.ts";
import { serviceCredentials } from "./drop.ts";

export interface VerifyServiceRequest {
  uid: number;
  gid: number;
  groups: number[];
  command: string[];
}

/** Node is not built to be PID 1: tini reaps and forwards signals, as the service. */
export function serviceCommandLine(command: readonly string[], pid: number, tiniPresent: boolean): string[] {
  if (!tiniPresent) return [...command];
  return pid === 1 ? [TOOLS.tini, "--", ...command] : [TOOLS.tini, "-s", "--", ...command];
}

export function runVerifyService(request: VerifyServiceRequest): never {
  const differences = credentialDifferences(readStatus(), serviceCredentials(request.uid, request.gid, request.groups));
  if (differences.length > 0) {
    throw new Refusal(EXIT.verifyFailed, `after the drop to the service the kernel reports ${differences.join("; ")}`, "check that the launch has --cap-add SETPCAP, SETUID and SETGID and that the kernel supports ambient capabilities (Linux 4.3+)");
  }
  const line = serviceCommandLine(request.command, process.pid, existsSync(TOOLS.tini));
  execReplace({ command: line[0]!, args: line.slice(1), env: process.env as Record<string, string>, trustedUids: [0, request.uid] });
}
