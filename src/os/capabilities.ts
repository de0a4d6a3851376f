/*
 * Capability numbers and names, from linux/capability.h (capabilities(7)).
 * Masks are BigInt: the kernel prints 64-bit hex in /proc/<pid>/status.
 */

export const CAPABILITY_NAMES: readonly string[] = [
  "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
  "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
  "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
  "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
  "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
  "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
];

export type CapabilityMask = bigint;

export function capabilityBit(name: string): number {
  const index = CAPABILITY_NAMES.indexOf(name.toUpperCase().replace(/^CAP_/, ""));
  if (index < 0) throw new Error(`unknown capability ${name}`);
  return index;
}

export function maskOf(names: readonly string[]): CapabilityMask {
  return names.reduce((mask, name) => mask | (1n << BigInt(capabilityBit(name))), 0n);
}

/** Names of the bits set in a mask; unknown high bits are named by number. */
export function namesOf(mask: CapabilityMask): string[] {
  const names: string[] = [];
  for (let bit = 0; bit < 64; bit++) {
    if ((mask >> BigInt(bit)) & 1n) names.push(CAPABILITY_NAMES[bit] ?? `CAP_${bit}`);
  }
  return names;
}

/** The spelling setpriv(1) takes: "-all,+setuid,+setgid". */
export function setprivCapList(names: readonly string[]): string {
  return ["-all", ...names.map((name) => `+${name.toLowerCase()}`)].join(",");
}
