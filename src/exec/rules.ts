/*
 * The exec rules every program this project starts is held to:
 *
 *   1. PATH is SYSTEM_PATH, whatever the caller's says, and every command is
 *      resolved to an absolute path before exec.
 *   2. A program run by root or by the service must be a file that only a
 *      trusted owner (root, or the service uid for the service's own execs)
 *      can change: the file and every directory above it, on the path as
 *      given and on the path as resolved, are owned by a trusted uid and not
 *      writable by group or other; so must every #! interpreter the kernel
 *      would run on the way. Nothing under /workspace, and nothing the agent
 *      uid could have written, is ever executed by root or the service.
 *   3. No shell is involved, and the child's environment is built from an
 *      allowlist plus what the caller names (src/exec/environment.ts); the
 *      one exception is the service itself, which gets the launcher's
 *      environment less the code-loading and CLANKIE_* variables
 *      (src/entrypoint/service-env.ts), or all of it in a launch not as root.
 *
 * gateExec is the one check before every start; the modules that start
 * programs are src/exec/replace.ts (the executable's exec-replace),
 * src/exec/capture.ts (run-and-capture: the audit, the start's ACL walk,
 * a private job's cleanup stage) and src/system-exec.ts with src/service/
 * (the service's package API, on execa).
 */
import { accessSync, closeSync, constants, lstatSync, openSync, readSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { EXIT, SYSTEM_PATH, SYSTEM_PATH_DIRS } from "../constants.ts";
import { Refusal } from "../report.ts";

/** Finds a command in SYSTEM_PATH (or takes an absolute path) and returns its absolute path. */
export function resolveCommand(command: string, cwd?: string): string {
  if (command === "") throw new Refusal(EXIT.usage, "the command is empty", "name a program to run");
  if (command.includes("\0")) throw new Refusal(EXIT.usage, "the command contains a NUL byte", "name a program to run");
  // process.cwd() only when needed: it throws when the working directory was removed (docker exec, nsenter).
  if (command.includes("/")) return isAbsolute(command) ? command : resolve(cwd ?? process.cwd(), command);
  for (const dir of SYSTEM_PATH_DIRS) {
    const candidate = `${dir}/${command}`;
    try {
      if (statSync(candidate).isFile()) {
        accessSync(candidate, constants.X_OK);
        return candidate;
      }
    } catch {
      // not here: execvp(3) goes on to the next directory too
    }
  }
  throw new Refusal(EXIT.notFound, `${command}: not found in ${SYSTEM_PATH}`, "install it in a system directory or give its absolute path");
}

/** An absolute path, then each directory above it up to "/". */
function ancestors(path: string): string[] {
  const parts = [path];
  for (let at = path.lastIndexOf("/"); at > 0; at = path.lastIndexOf("/", at - 1)) parts.push(path.slice(0, at));
  return path === "/" ? parts : [...parts, "/"];
}

const TRUST_FIX = "install programs that root or the service run in a root-owned directory that only root can write (for example /usr/local/bin)";
const INTERPRETER_FIX = "name a #! interpreter installed in a root-owned directory that only root can write (for example /usr/bin)";

/**
 * Refuses unless `path` and every directory above it (as given and as
 * resolved) is owned by one of `trustedUids` and writable by nobody else.
 * `via`: the scripts whose `#!` lines led to `path`, first the one asked for;
 * the refusal names them. Returns the path as resolved, the file whose
 * header checkRunnable then reads.
 */
export function checkTrustedExecutable(path: string, trustedUids: readonly number[], via: readonly string[] = []): string {
  const subject = via.length === 0 ? path : `${via[0]} (${[...via.slice(1), path].map((p) => `#! ${p}`).join(", ")})`;
  const fix = via.length === 0 ? TRUST_FIX : INTERPRETER_FIX;
  let real: string;
  try {
    // realpath(3): one call where fs.realpathSync walks the path in JavaScript, with the same answer.
    real = realpathSync.native(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const whose = via.length === 0 ? "" : ` (the #! interpreter of ${via.at(-1)})`;
    if (code === "ENOENT") throw new Refusal(EXIT.notFound, `${path}: no such file${whose}`, "check the command's path");
    throw new Refusal(EXIT.notExecutable, `${path}: cannot be resolved (${code})${whose}`, fix);
  }
  const seen = new Set<string>();
  for (const place of [...ancestors(path), ...ancestors(real)]) {
    if (seen.has(place)) continue;
    seen.add(place);
    let st;
    try {
      st = lstatSync(place);
    } catch (error) {
      throw new Refusal(EXIT.notExecutable, `${place}: cannot be checked (${(error as NodeJS.ErrnoException).code})`, fix);
    }
    if (!trustedUids.includes(st.uid)) {
      throw new Refusal(EXIT.notExecutable, `refusing to execute ${subject}: ${place} is owned by uid ${st.uid}, not ${trustedUids.join(" or ")}`, fix);
    }
    // A symlink's own mode is always 0777 and means nothing; its directory is what counts.
    if (!st.isSymbolicLink() && (st.mode & 0o022) !== 0) {
      throw new Refusal(EXIT.notExecutable, `refusing to execute ${subject}: ${place} is writable by group or other (mode ${(st.mode & 0o7777).toString(8)})`, fix);
    }
  }
  return real;
}

/**
 * How many `#!` scripts execve(2) follows in a row before it fails with
 * ELOOP: fs/exec.c allows binfmt rewrites while depth <= 5, and a chain of
 * five scripts ending in an ELF ran here (kernel 6.18) where six failed.
 */
export const MAX_SCRIPT_DEPTH = 5;

/**
 * What execve(2) would refuse, found before the call (Node's execve binding
 * aborts the process on failure), and the trust rule for every `#!`
 * interpreter the kernel would run on the way: a trusted script is no better
 * than the program that reads it, since that program runs with the caller's
 * privileges. `real`: the path as checkTrustedExecutable resolved it.
 * (The agent's command is not gated here: the stage execs it, as the agent.)
 */
function checkRunnable(path: string, trustedUids: readonly number[], real: string, scripts: readonly string[] = []): void {
  let st;
  try {
    st = statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new Refusal(EXIT.notFound, `${path}: no such file`, "check the command's path");
    throw new Refusal(EXIT.notExecutable, `${path}: cannot be executed (${code})`, "check the command's path and permissions");
  }
  if (!st.isFile()) throw new Refusal(EXIT.notExecutable, `${path}: not a regular file`, "name an executable file");
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Refusal(EXIT.notExecutable, `${path}: not executable by uid ${process.geteuid?.()}`, "check the file's mode and owner");
  }
  let fd: number | undefined;
  const head = Buffer.alloc(256);
  let length = 0;
  try {
    // The file as resolved: a symlink (/usr/bin/python3 -> python3.11) must
    // not hide the #! line of what it points to. Both paths passed the trust rule.
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    length = readSync(fd, head, 0, head.length, 0);
  } catch (error) {
    // An execute-only file: the kernel reads a #! line we cannot, and would
    // run its interpreter with our privileges.
    throw new Refusal(
      EXIT.notExecutable,
      `refusing to execute ${path}: it cannot be read to check for a #! interpreter (${(error as NodeJS.ErrnoException).code})`,
      "make the program readable by the uid that runs it (mode 0755)",
    );
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (length >= 4 && head.readUInt32BE(0) === 0x7f454c46) return; // ELF
  if (length >= 2 && head[0] === 0x23 && head[1] === 0x21) {
    const line = head.subarray(2, length).toString("latin1").split("\n")[0]!.trim();
    const interpreter = line.split(/[ \t]/)[0] ?? "";
    if (!interpreter.startsWith("/")) throw new Refusal(EXIT.notExecutable, `${path}: #! line names no absolute interpreter`, "fix the script's #! line");
    const chain = [...scripts, path];
    if (chain.length > MAX_SCRIPT_DEPTH) {
      throw new Refusal(EXIT.notExecutable, `${chain[0]}: more than ${MAX_SCRIPT_DEPTH} #! scripts in a row (execve would fail with ELOOP)`, "make a shorter chain of #! interpreters");
    }
    checkRunnable(interpreter, trustedUids, checkTrustedExecutable(interpreter, trustedUids, chain), chain);
    return;
  }
  throw new Refusal(EXIT.notExecutable, `${path}: not an ELF binary or #! script (execve would fail with ENOEXEC)`, "name an executable program");
}

export interface ExecGate {
  /** Command name (looked up in SYSTEM_PATH) or absolute path. */
  command: string;
  args: readonly string[];
  /** The program's environment, when the caller builds it. */
  env?: Readonly<Record<string, string>> | undefined;
  /** Owners allowed for the program, its directories and its #! interpreters. */
  trustedUids: readonly number[];
}

/**
 * The one pre-exec gate of every exec, capture and service call: the
 * command resolved in SYSTEM_PATH, the trust rule for it and every #!
 * interpreter on the way, what execve(2) would refuse, and no NUL byte in
 * an argument or an environment entry. Returns the absolute path to execute.
 */
export function gateExec(request: ExecGate): string {
  const path = resolveCommand(request.command);
  checkRunnable(path, request.trustedUids, checkTrustedExecutable(path, request.trustedUids));
  for (const arg of [...request.args, ...Object.entries(request.env ?? {}).flat()]) {
    if (arg.includes("\0")) throw new Refusal(EXIT.usage, "an argument or environment entry contains a NUL byte", "pass arguments and environment values without NUL bytes");
  }
  return path;
}
