/*
 * One line out on an fd and one line back, synchronously: the audit's
 * question to the service that runs it (src/self-check/probe.ts, the probe
 * through the spawner). The fd is a socket the service handed over; no file
 * is written.
 */
import { readSync, writeSync } from "node:fs";

export function askLine(fd: number, line: string): string {
  writeSync(fd, `${line}\n`);
  const chunk = Buffer.alloc(1 << 16);
  let text = "";
  for (let n = readSync(fd, chunk); n > 0 && !text.endsWith("\n"); n = readSync(fd, chunk)) text += chunk.toString("utf8", 0, n);
  return text;
}
