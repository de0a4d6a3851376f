/*
 * The entry of the entrypoint's own bundle: the single executable's main
 * script (build.mjs) runs it when started as clankie-separate with a service
 * command, and nothing else. As root: the root start (run.ts); as any other
 * uid: the exec of the service command. --self-check, --help and --version
 * are src/main.ts's bundle, so none of the audit, the help text or the
 * agent's confinement tables is in what runs as root (docs/architecture.md,
 * "The privileged path").
 */
import { ENTRYPOINT_NAME } from "../constants.ts";
import { reportError, setProgramName } from "../report.ts";
import { parseEntrypointArgs } from "./cli.ts";
import { runEntrypoint } from "./run.ts";

setProgramName(ENTRYPOINT_NAME);
new Promise<never>((resolve) => {
  const request = parseEntrypointArgs(process.argv.slice(2));
  // The main script gives --help and --version to src/main.ts's bundle: here they are a wrong build.
  if (request.kind !== "run") throw new Error(`${request.kind} reached the entrypoint's bundle: build.mjs's main script routes it to src/main.ts's`);
  resolve(runEntrypoint(request.command));
}).catch((error: unknown) => {
  process.exitCode = reportError(error);
});
