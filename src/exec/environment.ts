/*
 * The environment of the programs this project starts (rule 3 of
 * src/exec/rules.ts; the service's own is src/entrypoint/service-env.ts):
 * built from scratch, from the allowlist below plus what the caller names,
 * never by extending our own, and PATH is always SYSTEM_PATH.
 */
import { EXIT, SYSTEM_PATH } from "../constants.ts";
import { Refusal } from "../report.ts";

/**
 * Variables that make a process load code chosen by whoever set them. The
 * entrypoint drops these from the launcher's environment before the service
 * starts (with a warning), and the audit reports them.
 * Names ending in `*` are prefixes.
 */
export const CODE_LOADING_VARIABLES: readonly string[] = [
  "LD_*", // ld.so(8): LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...
  "GCONV_PATH", // glibc iconv loads modules from here
  "GLIBC_TUNABLES", // CVE-2023-4911 ("Looney Tunables")
  "NODE_OPTIONS", // --require / --import
  "NODE_PATH",
  "NODE_REPL_EXTERNAL_MODULE",
  "NODE_COMPILE_CACHE", // a cache the loader trusts
  "OPENSSL_CONF", // can load engines and providers
  "OPENSSL_ENGINES",
  "OPENSSL_MODULES",
  "PYTHONPATH",
  "PYTHONSTARTUP",
  "PYTHONHOME",
  "PERL5LIB",
  "PERL5OPT",
  "PERLLIB",
  "RUBYOPT",
  "RUBYLIB",
  "BASH_ENV",
  "ENV",
  "PS4",
  "PROMPT_COMMAND",
  "SHELLOPTS",
  "BASHOPTS",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS",
];

/** Whether `name` is one of `patterns`: a name, or a prefix ending in `*`. */
function matchesName(patterns: readonly string[], name: string): boolean {
  return patterns.some((pattern) => (pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern));
}

export function isCodeLoadingVariable(name: string): boolean {
  return matchesName(CODE_LOADING_VARIABLES, name);
}

/**
 * The short list of variables that describe the terminal and locale, and
 * nothing else. The agent starts from these plus what the service names with
 * `--env`; the service's own execs start from these plus what they name.
 */
export const ENV_ALLOWLIST: readonly string[] = ["TERM", "COLORTERM", "LANG", "LANGUAGE", "LC_*", "TZ", "NO_COLOR"];

export function isAllowlisted(name: string): boolean {
  return matchesName(ENV_ALLOWLIST, name);
}

export type Environment = Record<string, string>;

export interface EnvironmentRequest {
  /** Source of allowlisted and named variables (default: none). */
  from?: NodeJS.ProcessEnv;
  /** Names whose values are copied from `from`, beyond the allowlist. */
  pass?: readonly string[];
  /** Variables set outright. PATH is always SYSTEM_PATH and cannot be set here. */
  set?: Environment;
}

/**
 * The names under which an environment crosses the programs that must not
 * read it: each variable NAME=VALUE as CLANKIE_ENV_NAME=VALUE. Node, glibc
 * (LANGUAGE, LC_*, LOCPATH), setpriv and perl read no such name. The service
 * hands the shim the agent's environment so (spawnAgent), and the shim hands
 * it on so to setpriv and the verification stage (stageEnvironment), which
 * names it back for the command alone (stage.pl's exec_command).
 */
export const CARRIED_PREFIX = "CLANKIE_ENV_";

export function carried(env: Readonly<Record<string, string>>): Environment {
  const out: Environment = {};
  for (const [name, value] of Object.entries(env)) out[CARRIED_PREFIX + name] = value;
  return out;
}

/** Whether `name` is a carried variable's: the prefix, then a name of its own. */
export function isCarried(name: string): boolean {
  return name.startsWith(CARRIED_PREFIX) && name.length > CARRIED_PREFIX.length;
}

/** `env` as its programs mean it: every carried variable under its own name, over one of that name set outright. */
export function uncarried(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  const named: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (isCarried(name)) named[name.slice(CARRIED_PREFIX.length)] = value;
    else out[name] = value;
  }
  return Object.assign(out, named);
}

/*
 * A name that loads code is refused whether its value is copied (`pass`) or
 * given (`set`): ld.so loads an LD_PRELOAD library into systemExec's setpriv,
 * then into the program, and into the audit runSelfCheck starts. The service
 * holds no capability, but a library the agent planted would still run as
 * node, with the service's access to /state; the root phase's programs run
 * as root.
 *
 * So is a name with "=" (or none): the environment is a list of NAME=VALUE
 * strings, and Node writes each as name + "=" + value, so the name
 * "GCONV_PATH=/workspace/g" with the value "x" reaches the child as
 * GCONV_PATH, set to "/workspace/g=x", past a check of the whole name.
 */
function refuseVariableName(name: string): void {
  if (name === "" || name.includes("=")) throw new Refusal(EXIT.usage, `${JSON.stringify(name)} is not a variable name: a child reads the name up to the first "="`, 'give each variable by its name alone, without "="');
  if (isCodeLoadingVariable(name)) throw new Refusal(EXIT.usage, `${name}: variables that load code are never passed to a child`, "do not pass it");
}

/** Builds a child environment from scratch: allowlist + named + set, and the fixed PATH. Refuses (64) a name that loads code, or holds "=", in `pass` or `set`. */
export function buildEnvironment(request: EnvironmentRequest = {}): Environment {
  const env: Environment = {};
  const from = request.from ?? {};
  for (const [name, value] of Object.entries(from)) {
    if (typeof value === "string" && isAllowlisted(name)) env[name] = value;
  }
  for (const name of request.pass ?? []) {
    refuseVariableName(name);
    const value = Object.hasOwn(from, name) ? from[name] : undefined;
    if (typeof value === "string") env[name] = value;
  }
  for (const [name, value] of Object.entries(request.set ?? {})) {
    refuseVariableName(name);
    env[name] = value;
  }
  env.PATH = SYSTEM_PATH;
  return env;
}
