/*
 * /proc/<pid>/stat: a process's group, session and controlling terminal
 * (proc(5)), for the shim's command-line run (src/agent-exec/run.ts). Apart
 * from proc-status.ts so that the resident spawner, which never reads a
 * session, does not load it (scripts/code-lines.mjs counts what it loads).
 */
import { readFileSync } from "node:fs";
import { osFailure } from "../report.ts";

/** Session id and controlling terminal from /proc/<pid>/stat (fields 6 and 7, proc(5)). */
export interface ProcessSession {
  pid: number;
  pgrp: number;
  session: number;
  ttyNr: number;
}

export function parseStat(text: string): ProcessSession {
  // comm (field 2) may hold spaces and parentheses: split after the last ')'.
  const close = text.lastIndexOf(")");
  const pid = Number(text.slice(0, text.indexOf(" ")));
  const rest = text.slice(close + 2).split(" ");
  // rest[0] is state (field 3); ppid 4, pgrp 5, session 6, tty_nr 7
  const session = { pid, pgrp: Number(rest[2]), session: Number(rest[3]), ttyNr: Number(rest[4]) };
  if (close < 0 || Object.values(session).some((n) => !Number.isInteger(n))) throw new Error(`/proc stat is malformed: ${JSON.stringify(text.slice(0, 80))}`);
  return session;
}

export function readSession(pid: number | "self" = "self"): ProcessSession {
  const path = `/proc/${pid}/stat`;
  try {
    return parseStat(readFileSync(path, "utf8"));
  } catch (error) {
    throw osFailure("read", path, error);
  }
}
