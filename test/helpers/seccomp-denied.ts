/*
 * What the agent's seccomp filter must deny, written from the kernel's headers
 * and never read from src/seccomp-filter.ts (a test that iterated the filter's
 * own table would pass whatever was dropped from it). The unit test of the
 * program (test/unit/seccomp-filter.test.ts) and the attempts as the agent
 * (test/sandbox/confinement.test.ts) both hold the filter to these lists.
 */

/** The architectures the filter is built for, by process.arch, with AUDIT_ARCH_* of linux/audit.h. */
export const AUDIT = { x64: 0xc000003e, arm64: 0xc00000b7 } as const;
export type Arch = keyof typeof AUDIT;
/** A call's number per architecture: arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h. */
export type Numbers = Readonly<Record<Arch, number>>;

/**
 * Every call the filter answers EPERM, whatever the request: one line per
 * call. test/sandbox/confinement.test.ts attempts each of them as the agent,
 * beside its control, and fails for a call listed here without an attempt.
 */
export const DENIED_CALLS: Readonly<Record<string, Numbers>> = {
  ptrace: { x64: 101, arm64: 117 },
  process_vm_readv: { x64: 310, arm64: 270 },
  process_vm_writev: { x64: 311, arm64: 271 },
  setns: { x64: 308, arm64: 268 },
  keyctl: { x64: 250, arm64: 219 },
  add_key: { x64: 248, arm64: 217 },
  request_key: { x64: 249, arm64: 218 },
  bpf: { x64: 321, arm64: 280 },
  perf_event_open: { x64: 298, arm64: 241 },
  userfaultfd: { x64: 323, arm64: 282 },
  io_uring_setup: { x64: 425, arm64: 425 },
  io_uring_enter: { x64: 426, arm64: 426 },
  io_uring_register: { x64: 427, arm64: 427 },
  pidfd_getfd: { x64: 438, arm64: 438 },
  process_madvise: { x64: 440, arm64: 440 },
  process_mrelease: { x64: 448, arm64: 448 },
};

/** clone(2) and unshare(2) flags the filter refuses (linux/sched.h): one line per flag; every other bit passes. */
export const DENIED_CLONE_FLAGS: Readonly<Record<string, number>> = {
  CLONE_NEWTIME: 0x00000080,
  CLONE_NEWNS: 0x00020000,
  CLONE_NEWCGROUP: 0x02000000,
  CLONE_NEWUTS: 0x04000000,
  CLONE_NEWIPC: 0x08000000,
  CLONE_NEWUSER: 0x10000000,
  CLONE_NEWPID: 0x20000000,
  CLONE_NEWNET: 0x40000000,
};

/** clone(2) flags the filter refuses beyond those (linux/sched.h): unshare(2) has no use for them. */
export const DENIED_CLONE_ONLY_FLAGS: Readonly<Record<string, number>> = {
  CLONE_PARENT: 0x00008000,
};
