/*
 * The verification stage as a perl of its own, the program setpriv execs
 * (src/stage/stage.ts says why perl, and what -T and -C0 keep out): the
 * entrypoint's drop to the service, the per-job shim's chain and a private
 * job's cleanup. Apart from stage.ts so that the spawner, whose grab runs the
 * stage in its own process (src/perl/spawn-grab.pl), does not carry it.
 *
 *   perl -T -C0 -e STAGE -- PROGRAM ROLE KEY=VALUE... -- PATH ARGV0 [ARG...]
 */
import { TOOLS } from "../constants.ts";
import { STAGE_SOURCE, stageProgram, type StageRequest, stageRequest } from "./stage.ts";

/** argv (with argv[0]) of the verification stage. */
export function stageArgv(request: StageRequest): string[] {
  const privateJob = request.role === "agent" && request.privateDir !== undefined;
  return [TOOLS.perl, "-T", "-C0", "-e", stageProgram([request.role], STAGE_SOURCE, privateJob), "--", ...stageRequest(request)];
}
