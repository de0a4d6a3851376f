/*
 * The name of the abstract socket the audit's probe tries to reach from
 * inside the agent (src/self-check/probe.ts listens on it). In a separated
 * body the audit asks the service to start the probe, and the service hands
 * the name on only when it has this form (src/system-exec.ts, startProbe):
 * both ends read it here.
 */
import { randomBytes } from "node:crypto";

/** A name no other process can foresee: the audit's pid and 8 random bytes, in hex. */
export function drawProbeSocketName(pid: number = process.pid): string {
  return `clankie-probe-${pid}-${randomBytes(8).toString("hex")}`;
}

/** Pure: whether `name` has the form drawProbeSocketName gives. */
export function isProbeSocketName(name: unknown): name is string {
  return typeof name === "string" && /^clankie-probe-\d+-[0-9a-f]{16}$/.test(name);
}
