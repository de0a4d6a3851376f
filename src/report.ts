/*
 * The one writer of messages. Every refusal is one line on stderr:
 *   <program>: <what is wrong>; <how to fix it>
 * Policy refusals (Refusal) are kept apart from operating-system failures
 * (OsFailure), which carry the syscall, the path and the errno code.
 */
import { writeSync } from "node:fs";
import { EXIT } from "./constants.ts";

let programName = "clankie-separate";

export function setProgramName(name: string): void {
  programName = name;
}

/** A policy refusal: the situation is not one this program will act in. */
export class Refusal extends Error {
  readonly exitCode: number;
  readonly fix: string;
  constructor(exitCode: number, what: string, fix: string) {
    super(what);
    this.exitCode = exitCode;
    this.fix = fix;
  }
}

/** A system call that really failed. */
export class OsFailure extends Error {
  readonly exitCode = EXIT.osError;
  readonly syscall: string;
  readonly path: string;
  readonly code: string;
  constructor(syscall: string, path: string, code: string) {
    super(`${syscall} ${path}: ${code}`);
    this.syscall = syscall;
    this.path = path;
    this.code = code;
  }
}

/** Turns a Node fs error into an OsFailure naming the call and the path we used. */
export function osFailure(syscall: string, path: string | Buffer, error: unknown): OsFailure {
  return new OsFailure(syscall, printablePath(path), codeOf(error));
}

/** What a failed call says: its errno code (EACCES), else the error as text. */
export function codeOf(error: unknown): string {
  return (error as NodeJS.ErrnoException | undefined)?.code ?? String(error);
}

/** Runs one system call and turns its failure into the OsFailure that names the call and the path: the try/catch every phase would otherwise repeat. */
export function osCall<T>(syscall: string, path: string | Buffer, call: () => T): T {
  try {
    return call();
  } catch (error) {
    throw osFailure(syscall, path, error);
  }
}

/** Paths may be any bytes: show them without letting control characters reach a terminal or a log line. */
export function printablePath(path: string | Buffer): string {
  const text = typeof path === "string" ? path : path.toString("latin1");
  // eslint-disable-next-line no-control-regex
  return JSON.stringify(text).slice(1, -1).replace(/[\u007f-\u00ff]/g, (c) => `\\x${c.charCodeAt(0).toString(16)}`);
}

/** Text for one line of output: its line breaks become spaces. */
export function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, " ");
}

export function formatRefusal(what: string, fix: string): string {
  return `${programName}: ${oneLine(what)}; ${oneLine(fix)}`;
}

export function writeLine(fd: 1 | 2, line: string): void {
  const buffer = Buffer.from(`${line}\n`);
  let offset = 0;
  while (offset < buffer.length) {
    try {
      offset += writeSync(fd, buffer, offset);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EAGAIN") continue;
      return; // a closed stderr must not turn a refusal into a crash
    }
  }
}

/** Prints the one line for an error and returns the exit code to use. */
export function reportError(error: unknown): number {
  if (error instanceof Refusal) {
    writeLine(2, formatRefusal(error.message, error.fix));
    return error.exitCode;
  }
  if (error instanceof OsFailure) {
    writeLine(2, `${programName}: ${error.syscall} ${error.path} failed: ${error.code}`);
    return error.exitCode;
  }
  const text = error instanceof Error ? error.message : String(error);
  writeLine(2, `${programName}: internal error: ${oneLine(text)}; please report this with the command line used`);
  return EXIT.osError;
}
