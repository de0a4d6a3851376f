/*
 * Variables that make a process load code chosen by whoever set them
 * (CODE_LOADING_VARIABLES in exec/environment.ts: LD_*, NODE_OPTIONS, ...), in the
 * environment this audit was started with and in the one the judged service
 * was started with. Only names are reported: values may be secrets. Pure.
 *
 * In a separated body the entrypoint removes them before the service starts;
 * one in the service's environment means it was started some other way or
 * re-added one. One in the audit's own environment means its own results
 * may have been shaped by loaded code.
 */
import { isCodeLoadingVariable } from "../exec/environment.ts";
import { fail, pass, type Verdict, warn } from "./check.ts";
import type { Readable } from "./fact-types.ts";

export function codeLoadingNames(env: Record<string, string | undefined>): string[] {
  return Object.keys(env)
    .filter((name) => env[name] !== undefined && isCodeLoadingVariable(name))
    .sort();
}

export function judgeEnvironment(
  own: Record<string, string | undefined>,
  judged: { pid: number; self: boolean; environ: Readable<Record<string, string>> },
): Verdict {
  const mine = codeLoadingNames(own);
  const found: Record<string, unknown> = { self: mine };
  let theirs: string[] = [];
  if (!judged.self) {
    if (judged.environ.ok) {
      theirs = codeLoadingNames(judged.environ.value);
      found.service = { pid: judged.pid, variables: theirs };
    } else {
      found.service = { pid: judged.pid, error: judged.environ.error };
    }
  }
  const parts: string[] = [];
  if (mine.length > 0) parts.push(`this audit was started with ${mine.join(", ")}`);
  if (theirs.length > 0) parts.push(`the service (pid ${judged.pid}) was started with ${theirs.join(", ")}`);
  if (parts.length > 0) {
    return fail(`${parts.join("; ")}: variables that load code`,
      found,
      "remove them from the launcher's environment (docker run -e / --env-file, docker exec -e) and from the service's own execs; the entrypoint drops them only at a separated start",
    );
  }
  if (!judged.self && !judged.environ.ok) {
    return warn(`no code-loading variable in this audit's environment; the service's (pid ${judged.pid}) could not be read: ${judged.environ.error}`, found, "run the audit as the service (doctor) to read the service's environment");
  }
  return pass(judged.self ? "no variable that loads code in this process's environment" : `no variable that loads code in this audit's environment or the service's (pid ${judged.pid})`, found);
}
