/*
 * Phase 1 of the root entrypoint: is this the launch ADR 0272 describes
 * (docker run ADR_LAUNCH_FLAGS of src/constants.ts)?
 * Pure: takes what /proc/self/status said, returns the mode or refuses.
 */
import { maskOf, namesOf } from "../os/capabilities.ts";
import { EXIT, ROOT_CAPABILITIES } from "../constants.ts";
import type { ProcessCredentials } from "../os/proc-status.ts";
import { Refusal } from "../report.ts";

export type LaunchMode = { mode: "legacy"; uid: number } | { mode: "root"; extraCapabilities: string[] };

export function classifyLaunch(status: ProcessCredentials): LaunchMode {
  const rootIds = status.uids.filter((id) => id === 0).length;
  if (rootIds === 0) return { mode: "legacy", uid: status.uids[1] };
  if (rootIds !== 4 || status.gids.some((id) => id !== status.gids[0])) {
    throw new Refusal(EXIT.launchRefused, `started with mixed user ids (uid ${status.uids.join(",")} gid ${status.gids.join(",")})`, "start the container with --user 0:0 or --user node, never through a set-user-ID program");
  }
  if (!status.noNewPrivs) {
    throw new Refusal(EXIT.launchRefused, "started as root without NoNewPrivs", "add --security-opt no-new-privileges to docker run (Kubernetes: allowPrivilegeEscalation: false)");
  }
  const required = maskOf(ROOT_CAPABILITIES);
  const missing = namesOf(required & ~status.capEff);
  if (missing.length > 0) {
    throw new Refusal(
      EXIT.launchRefused,
      `started as root without capabilit${missing.length > 1 ? "ies" : "y"} ${missing.join(", ")}`,
      `add ${missing.map((name) => `--cap-add ${name}`).join(" ")} to docker run`,
    );
  }
  const extra = namesOf((status.capPrm | status.capEff | status.capBnd | status.capAmb | status.capInh) & ~required);
  return { mode: "root", extraCapabilities: extra };
}
