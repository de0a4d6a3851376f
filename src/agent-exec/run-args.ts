/*
 * The options of a command to run as the agent (its confinement among them),
 * as the shim's command line and a spawn request name them: what the
 * resident spawner parses, which starts nothing else (the shim's other
 * actions, --signal and --private-cleanup, are src/agent-exec/cli.ts's).
 * Pure: argv in, a request out, or a usage refusal (exit 64, src/cli.ts).
 */
import { AGENT_DEFAULT_NPROC, AGENT_DEFAULT_OOM_SCORE_ADJ, AGENT_EXEC_NAME, STARTED_FD_VARIABLE, WORKSPACE_DIR } from "../constants.ts";
import { isCodeLoadingVariable } from "../exec/environment.ts";
import { type ConfinementRequest, extraPathProblem, WRITABLE_PATH_FIX, writablePathProblem } from "../confinement.ts";
import { optionValue, parseCommand, parseInteger, usage } from "../cli.ts";
import type { AgentStageOptions } from "../stage/protocol.ts";

export type RunRequest = { kind: "run"; cwd: string; env: string[]; keepFds: number[]; oomScoreAdj: number; confinement: ConfinementRequest; privateJob: boolean; stageOptions: AgentStageOptions; command: string[] };

/**
 * The started marker's fd, from the shim's own environment
 * (CLANKIE_STARTED_FD, which spawnAgent sets; src/service/agent-start.ts):
 * undefined when it is not set. The marker is the service's and is closed
 * before the command runs: named with --keep-fd as well, the command would
 * hold it and could forge it.
 */
export function parseStartedFd(value: string | undefined, keepFds: readonly number[]): number | undefined {
  if (value === undefined) return undefined;
  const fd = parseInteger(AGENT_EXEC_NAME, STARTED_FD_VARIABLE, value, 3, 1048575);
  if (keepFds.includes(fd)) throw usage(AGENT_EXEC_NAME, `${STARTED_FD_VARIABLE}=${fd} is also a --keep-fd`, "give the started marker an fd of its own, not one handed to the command");
  return fd;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The options, then -- and the command. */
export function parseRunArgs(argv: readonly string[]): RunRequest {
  const program = AGENT_EXEC_NAME;
  let cwd = WORKSPACE_DIR;
  let privateJob = false;
  const env: string[] = [];
  const keepFds: number[] = [];
  let nproc = AGENT_DEFAULT_NPROC;
  let oomScoreAdj = AGENT_DEFAULT_OOM_SCORE_ADJ;
  const confinement = { strict: false, allowWrite: [] as string[], allowRead: [] as string[], denyConnect: [] as number[], denyBind: [] as number[], network: "all" as "all" | "none" };
  const extraPath = (option: string, value: string | undefined): string => {
    const problem = value === undefined ? "is missing" : extraPathProblem(value);
    if (problem !== undefined) throw usage(program, `${option} ${JSON.stringify(value ?? "")} ${problem}`, `give ${option} an absolute, normal path below /`);
    return value!;
  };
  let i = 0;
  while (i < argv.length && argv[i] !== "--") {
    const { name, value, next } = optionValue(argv, i);
    if (name === "--cwd") {
      if (value === undefined || !value.startsWith("/")) throw usage(program, `--cwd needs an absolute directory, got ${JSON.stringify(value ?? "")}`, "give an absolute path");
      cwd = value;
    } else if (name === "--env") {
      if (value === undefined || !ENV_NAME.test(value)) throw usage(program, `--env needs a variable name, got ${JSON.stringify(value ?? "")}`, "give the NAME only: its value is taken from the shim's environment, never from argv");
      // The spawner's chain and setpriv run as node with SETUID and SETGID
      // before the switch: a variable that loads code must never reach them.
      if (isCodeLoadingVariable(value)) throw usage(program, `--env ${value}: variables that load code are never passed`, "do not pass it; set what the agent needs inside its own command");
      env.push(value);
    } else if (name === "--keep-fd") {
      keepFds.push(parseInteger(program, name, value, 3, 1048575));
    } else if (name === "--nproc") {
      nproc = parseInteger(program, name, value, 1, 1048576);
    } else if (name === "--oom-score-adj") {
      oomScoreAdj = parseInteger(program, name, value, -1000, 1000);
    } else if (name === "--allow-write") {
      const path = extraPath(name, value);
      const unsafe = writablePathProblem(path);
      if (unsafe !== undefined) throw usage(program, `--allow-write ${JSON.stringify(path)} ${unsafe}`, WRITABLE_PATH_FIX);
      confinement.allowWrite.push(path);
    } else if (name === "--allow-read") {
      confinement.allowRead.push(extraPath(name, value));
    } else if (name === "--deny-connect") {
      confinement.denyConnect.push(parseInteger(program, name, value, 1, 65535));
    } else if (name === "--deny-bind") {
      confinement.denyBind.push(parseInteger(program, name, value, 1, 65535));
    } else if (name === "--strict-confinement" || name === "--private-job" || name === "--no-network") {
      if (argv[i] !== name) throw usage(program, `${name} takes no value`, `write ${name} alone`);
      if (name === "--strict-confinement") confinement.strict = true;
      else if (name === "--private-job") privateJob = true;
      else confinement.network = "none";
      i += 1;
      continue;
    } else if (name.startsWith("-")) {
      throw usage(program, `unknown option ${JSON.stringify(name)}`, `put the command after --: ${program} [OPTIONS] -- COMMAND [ARG...]`);
    } else {
      throw usage(program, `missing -- before the command ${JSON.stringify(name)}`, `put the command after --: ${program} [OPTIONS] -- COMMAND [ARG...]`);
    }
    i = next;
  }
  if (argv[i] !== "--") throw usage(program, "missing -- before the command", `put the command after --: ${program} [OPTIONS] -- COMMAND [ARG...]`);
  // stageOptions: the options the stage alone reads, as its keys (src/stage/protocol.ts, AGENT_OPTION_KEYS).
  return { kind: "run", cwd, env, keepFds, oomScoreAdj, confinement, privateJob, stageOptions: { nproc: String(nproc) }, command: parseCommand(program, argv.slice(i + 1)) };
}
