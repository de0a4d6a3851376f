/*
 * The environment of every program this project starts (rule 3 of
 * src/exec/rules.ts): built from scratch, from the allowlist of constants.ts
 * plus what the caller names, never by extending our own, and PATH is always
 * SYSTEM_PATH.
 */
import { EXIT, isAllowlisted, isCodeLoadingVariable, SYSTEM_PATH } from "../constants.ts";
import { Refusal } from "../report.ts";

export type Environment = Record<string, string>;

export interface EnvironmentRequest {
  /** Source of allowlisted and named variables (default: none). */
  from?: NodeJS.ProcessEnv;
  /** Names whose values are copied from `from`, beyond the allowlist. */
  pass?: readonly string[];
  /** Variables set outright. PATH is always SYSTEM_PATH and cannot be set here. */
  set?: Environment;
}

/** Builds a child environment from scratch: allowlist + named + set, and the fixed PATH. */
export function buildEnvironment(request: EnvironmentRequest = {}): Environment {
  const env: Environment = {};
  const from = request.from ?? {};
  for (const [name, value] of Object.entries(from)) {
    if (typeof value === "string" && isAllowlisted(name)) env[name] = value;
  }
  for (const name of request.pass ?? []) {
    if (isCodeLoadingVariable(name)) {
      throw new Refusal(EXIT.usage, `${name}: variables that load code are never passed to a child`, "do not pass it");
    }
    const value = Object.hasOwn(from, name) ? from[name] : undefined;
    if (typeof value === "string") env[name] = value;
  }
  for (const [name, value] of Object.entries(request.set ?? {})) env[name] = value;
  env.PATH = SYSTEM_PATH;
  return env;
}
