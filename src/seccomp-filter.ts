/*
 * The agent's seccomp filter (seccomp(2)), assembled as classic BPF
 * (linux/filter.h). Build time only: build.mjs runs seccompTable with the
 * pinned Node and defines its output into the bundles (esbuild define), so
 * the executable carries every filter as data (src/confinement.ts,
 * seccompHex) and no line of this file; build.mjs refuses a bundle that
 * imports it. test/unit/seccomp-filter.test.ts runs the filters in a cBPF
 * interpreter, test/sandbox/confinement.test.ts in the kernel.
 *
 * What it answers EPERM to, and why, is said in src/confinement.ts's head.
 */
import { type SeccompOptions, seccompKey } from "./confinement.ts";
import { SYSCALLS } from "./os/syscalls.ts";

/** Every filter the agent's confinement can ask for on `arch`, as hex, by key (seccompKey): what build.mjs defines. */
export function seccompTable(arch: string = process.arch): Record<string, string> {
  const table: Record<string, string> = {};
  for (const ptrace of [true, false]) {
    for (const network of ["all", "none"] as const) {
      for (const ipc of [false, true]) table[seccompKey(arch, { ptrace, network, ipc })] = seccompProgram(arch, { ptrace, network, ipc }).toString("hex");
    }
  }
  return table;
}

interface SeccompArch {
  /** AUDIT_ARCH_* of linux/audit.h. */
  audit: number;
  /** x86-64 only: the x32 ABI's bit, whose calls are refused whole. */
  x32Bit?: number;
  deny: Readonly<Record<string, number>>;
  /** SysV IPC (svipc(7)) and POSIX message queues (mq_overview(7)): refused to a private job. */
  ipc: Readonly<Record<string, number>>;
  clone: number;
  clone3: number;
  unshare: number;
  ioctl: number;
  socket: number;
  socketpair: number;
  /** Calls whose first argument is a pid_t naming the process they change, 0 being the caller. */
  ownPid: Readonly<Record<string, number>>;
  /** setpriority(2) and ioprio_set(2): (which, who), who 0 being the caller or its process group. */
  setpriority: number;
  ioprioSet: number;
}

// process_mrelease(2) reaps the memory of another, dying process through a pidfd: no agent job needs it.
const COMMON_NEW = { io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, pidfd_getfd: 438, process_madvise: 440, process_mrelease: 448 };

/** arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h: the numbers the filter decides by. */
export const SECCOMP_ARCHES: Readonly<Record<string, SeccompArch>> = {
  x64: {
    audit: 0xc000003e,
    x32Bit: 0x40000000,
    deny: { ...COMMON_NEW, ptrace: 101, process_vm_readv: 310, process_vm_writev: 311, setns: 308, keyctl: 250, add_key: 248, request_key: 249, bpf: 321, perf_event_open: 298, userfaultfd: 323 },
    ipc: { shmget: 29, shmat: 30, shmctl: 31, semget: 64, semop: 65, semctl: 66, shmdt: 67, msgget: 68, msgsnd: 69, msgrcv: 70, msgctl: 71, semtimedop: 220, mq_open: 240, mq_unlink: 241, mq_timedsend: 242, mq_timedreceive: 243, mq_notify: 244, mq_getsetattr: 245 },
    clone: 56,
    clone3: 435,
    unshare: 272,
    ioctl: SYSCALLS.x64.ioctl,
    socket: 41,
    socketpair: 53,
    ownPid: { prlimit64: SYSCALLS.x64.prlimit, sched_setparam: 142, sched_setscheduler: 144, sched_setaffinity: 203, sched_setattr: 314, migrate_pages: 256, move_pages: 279 },
    setpriority: 141,
    ioprioSet: 251,
  },
  arm64: {
    audit: 0xc00000b7,
    deny: { ...COMMON_NEW, ptrace: 117, process_vm_readv: 270, process_vm_writev: 271, setns: 268, keyctl: 219, add_key: 217, request_key: 218, bpf: 280, perf_event_open: 241, userfaultfd: 282 },
    ipc: { mq_open: 180, mq_unlink: 181, mq_timedsend: 182, mq_timedreceive: 183, mq_notify: 184, mq_getsetattr: 185, msgget: 186, msgctl: 187, msgrcv: 188, msgsnd: 189, semget: 190, semctl: 191, semtimedop: 192, semop: 193, shmget: 194, shmctl: 195, shmat: 196, shmdt: 197 },
    clone: 220,
    clone3: 435,
    unshare: 97,
    ioctl: SYSCALLS.arm64.ioctl,
    socket: 198,
    socketpair: 199,
    ownPid: { prlimit64: SYSCALLS.arm64.prlimit, sched_setparam: 118, sched_setscheduler: 119, sched_setaffinity: 122, sched_setattr: 274, migrate_pages: 238, move_pages: 239 },
    setpriority: 140,
    ioprioSet: 30,
  },
};

/** CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME (linux/sched.h). */
export const NEW_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080;
/**
 * CLONE_PARENT (linux/sched.h): the new process gets the caller's parent
 * (clone(2)). A job's main process is the service's child, and the service
 * (Node, libuv) waits only for the children it spawned, by pid: such a child
 * would stay a zombie of the service for the container's life, holding its
 * groups and counting against the agent uid's RLIMIT_NPROC.
 */
export const CLONE_PARENT = 0x00008000;
/** TIOCSTI pushes input into a terminal; TIOCLINUX can too (CVE-2023-1523 and kin). */
export const DENIED_IOCTLS = { TIOCSTI: 0x5412, TIOCLINUX: 0x541c };
/** setpriority(2)'s PRIO_PROCESS and PRIO_PGRP (PRIO_USER, 2, is never allowed); ioprio_set(2)'s IOPRIO_WHO_PROCESS and IOPRIO_WHO_PGRP (IOPRIO_WHO_USER, 3, never). */
export const PRIO_WHICH = { process: 0, pgrp: 1 } as const;
export const IOPRIO_WHICH = { process: 1, pgrp: 2 } as const;

/** linux/socket.h, linux/net.h, linux/in.h, linux/netlink.h. */
export const SOCKET = {
  AF_UNIX: 1,
  AF_INET: 2,
  AF_INET6: 10,
  AF_NETLINK: 16,
  SOCK_STREAM: 1,
  SOCK_DGRAM: 2,
  /** socket(2)'s type carries SOCK_NONBLOCK and SOCK_CLOEXEC above these four bits. */
  SOCK_TYPE_MASK: 0xf,
  NETLINK_ROUTE: 0,
} as const;
/**
 * The protocols agent work may name for AF_INET and AF_INET6: 0 (the type's
 * default: TCP for SOCK_STREAM, UDP for SOCK_DGRAM), TCP, UDP and ICMP and
 * ICMPv6 (unprivileged ping sockets). Everything else, IPPROTO_MPTCP (262)
 * and IPPROTO_SMC (256) above all, would be a connection Landlock's TCP port
 * rules do not see.
 */
export const INET_PROTOCOLS = { default: 0, ICMP: 1, TCP: 6, UDP: 17, ICMPV6: 58 } as const;

export const SECCOMP_RET = { allow: 0x7fff0000, errno: 0x00050000 } as const;
export const EPERM = 1;
export const ENOSYS = 38;
export const EPROTONOSUPPORT = 93;
export const EAFNOSUPPORT = 97;

/* struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]. Little-endian: the low word of args[i] is at 16 + 8i. */
const DATA_NR = 0;
const DATA_ARCH = 4;
const dataArgLow = (i: number) => 16 + 8 * i;

const BPF = { ldAbsW: 0x20, andK: 0x54, jeqK: 0x15, jgeK: 0x35, jsetK: 0x45, retK: 0x06 } as const;

export type Insn =
  | { op: "ld"; offset: number }
  | { op: "and"; k: number }
  | { op: "jeq" | "jge" | "jset"; k: number; then: string; else?: string }
  | { op: "ret"; k: number }
  | { op: "label"; name: string };

/** Assembles labelled instructions into struct sock_filter records (u16 code, u8 jt, u8 jf, u32 k). */
export function assemble(program: readonly Insn[]): Buffer {
  const code = program.filter((insn): insn is Exclude<Insn, { op: "label" }> => insn.op !== "label");
  const at = new Map<string, number>();
  let index = 0;
  for (const insn of program) {
    if (insn.op === "label") at.set(insn.name, index);
    else index += 1;
  }
  const out = Buffer.alloc(code.length * 8);
  code.forEach((insn: Exclude<Insn, { op: "label" }>, i) => {
    const jump = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const target = at.get(label);
      if (target === undefined) throw new Error(`seccomp: no label ${label}`);
      const offset = target - (i + 1);
      if (offset < 0 || offset > 255) throw new Error(`seccomp: jump to ${label} out of range (${offset})`);
      return offset;
    };
    let opcode: number;
    let jt = 0;
    let jf = 0;
    let k: number;
    if (insn.op === "ld") {
      opcode = BPF.ldAbsW;
      k = insn.offset;
    } else if (insn.op === "and") {
      opcode = BPF.andK;
      k = insn.k;
    } else if (insn.op === "ret") {
      opcode = BPF.retK;
      k = insn.k;
    } else {
      opcode = insn.op === "jeq" ? BPF.jeqK : insn.op === "jge" ? BPF.jgeK : BPF.jsetK;
      jt = jump(insn.then);
      jf = jump(insn.else);
      k = insn.k;
    }
    out.writeUInt16LE(opcode, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

/**
 * What socket(2) and socketpair(2) may make: unix sockets always; with the
 * network, TCP, UDP and ping sockets of IPv4 and IPv6, and NETLINK_ROUTE
 * (getifaddrs(3), behind glibc's getaddrinfo with AI_ADDRCONFIG and Node's
 * os.networkInterfaces(); it reads addresses, and changing them needs
 * CAP_NET_ADMIN). Another family answers EAFNOSUPPORT and another protocol
 * or type EPROTONOSUPPORT: the errors a program that can use something else
 * (an MPTCP-capable client, TCP) falls back from.
 */
function socketRules(network: SeccompOptions["network"]): Insn[] {
  if (network === "none") {
    return [
      { op: "label", name: "socket" },
      { op: "ld", offset: dataArgLow(0) },
      { op: "jeq", k: SOCKET.AF_UNIX, then: "allow", else: "eafnosupport" },
    ];
  }
  const protocols = Object.values(INET_PROTOCOLS);
  return [
    { op: "label", name: "socket" },
    { op: "ld", offset: dataArgLow(0) },
    { op: "jeq", k: SOCKET.AF_UNIX, then: "allow" },
    { op: "jeq", k: SOCKET.AF_INET, then: "inet" },
    { op: "jeq", k: SOCKET.AF_INET6, then: "inet" },
    { op: "jeq", k: SOCKET.AF_NETLINK, then: "netlink", else: "eafnosupport" },
    // Stream and datagram only: SOCK_SEQPACKET with protocol 0 is SCTP, SOCK_RAW needs CAP_NET_RAW.
    { op: "label", name: "inet" },
    { op: "ld", offset: dataArgLow(1) },
    { op: "and", k: SOCKET.SOCK_TYPE_MASK },
    { op: "jeq", k: SOCKET.SOCK_STREAM, then: "inet-protocol" },
    { op: "jeq", k: SOCKET.SOCK_DGRAM, then: "inet-protocol", else: "eprotonosupport" },
    { op: "label", name: "inet-protocol" },
    { op: "ld", offset: dataArgLow(2) },
    ...protocols.map((k, i): Insn => ({ op: "jeq", k, then: "allow", ...(i === protocols.length - 1 ? { else: "eprotonosupport" } : {}) })),
    { op: "label", name: "netlink" },
    { op: "ld", offset: dataArgLow(2) },
    { op: "jeq", k: SOCKET.NETLINK_ROUTE, then: "allow", else: "eprotonosupport" },
  ];
}

/**
 * The agent's seccomp filter for `arch` (process.arch spelling), as struct
 * sock_filter records.
 *
 * Only the low word of an argument is ever compared: every argument checked
 * here is an int or unsigned int in the call's SYSCALL_DEFINE, whose wrapper
 * converts the 64-bit register to that type (include/linux/syscalls.h,
 * __SC_CAST), so the kernel acts on the low word alone. A pid whose high word
 * is set and whose low word is 0 is the caller to the kernel too; one whose
 * low word names another process is refused by its low word. `ptrace`: allow
 * ptrace(2), for a process a Landlock domain already confines.
 */
export function seccompProgram(arch: string = process.arch, options: SeccompOptions): Buffer {
  const a = SECCOMP_ARCHES[arch];
  if (!a) throw new Error(`no seccomp table for ${arch}`);
  const deny = Object.entries(a.deny).filter(([name]) => !(options.ptrace && name === "ptrace"));
  return assemble([
    // A call of another ABI (i386 through int 0x80, x32) has other numbers: refuse them all.
    { op: "ld", offset: DATA_ARCH },
    { op: "jeq", k: a.audit, then: "native", else: "eperm" },
    { op: "label", name: "native" },
    { op: "ld", offset: DATA_NR },
    ...(a.x32Bit === undefined ? [] : [{ op: "jge" as const, k: a.x32Bit, then: "eperm" }]),
    ...deny.map(([, nr]) => ({ op: "jeq" as const, k: nr, then: "eperm" })),
    // SysV IPC and POSIX message queues live in the IPC namespace, which
    // every job shares, and are guarded by modes a job of the same uid
    // passes: a private job gets none of them, in either direction. ENOSYS,
    // what a kernel without CONFIG_SYSVIPC or CONFIG_POSIX_MQUEUE answers,
    // so that programs that probe for them fall back (to mmap and files).
    ...(options.ipc ? Object.values(a.ipc).map((nr) => ({ op: "jeq" as const, k: nr, then: "enosys" })) : []),
    { op: "jeq", k: a.clone3, then: "enosys" },
    { op: "jeq", k: a.clone, then: "clone" },
    { op: "jeq", k: a.unshare, then: "flags" },
    { op: "jeq", k: a.ioctl, then: "ioctl" },
    { op: "jeq", k: a.socket, then: "socket" },
    { op: "jeq", k: a.socketpair, then: "socket" },
    ...Object.values(a.ownPid).map((nr) => ({ op: "jeq" as const, k: nr, then: "own-pid" })),
    { op: "jeq", k: a.setpriority, then: "setpriority" },
    { op: "jeq", k: a.ioprioSet, then: "ioprio" },
    { op: "ret", k: SECCOMP_RET.allow },
    // clone(2) and unshare(2) take their flags in the first argument; the namespace flags and CLONE_PARENT are in its low word.
    { op: "label", name: "clone" },
    { op: "ld", offset: dataArgLow(0) },
    { op: "jset", k: NEW_NAMESPACE_FLAGS | CLONE_PARENT, then: "eperm" },
    { op: "ret", k: SECCOMP_RET.allow },
    { op: "label", name: "flags" },
    { op: "ld", offset: dataArgLow(0) },
    { op: "jset", k: NEW_NAMESPACE_FLAGS, then: "eperm" },
    { op: "ret", k: SECCOMP_RET.allow },
    // ioctl(2)'s request is an unsigned int: the kernel reads only the low word too.
    { op: "label", name: "ioctl" },
    { op: "ld", offset: dataArgLow(1) },
    { op: "jeq", k: DENIED_IOCTLS.TIOCSTI, then: "eperm" },
    { op: "jeq", k: DENIED_IOCTLS.TIOCLINUX, then: "eperm" },
    { op: "ret", k: SECCOMP_RET.allow },
    // Limits, scheduling and memory placement of the caller only (pid 0). The
    // kernel lets a process change these for any other of its uid
    // (prlimit(2), sched_setattr(2), migrate_pages(2)): another agent job, or
    // the shim's next spawn before it confines itself. Its own pid is refused
    // too, and so is a thread's id (pthread_setaffinity_np(3) names its tid).
    { op: "label", name: "own-pid" },
    { op: "ld", offset: dataArgLow(0) },
    { op: "jeq", k: 0, then: "allow", else: "eperm" },
    // setpriority(2) and ioprio_set(2): the caller (who 0) or its own process
    // group; never a user's processes, which are every job of the agent uid.
    { op: "label", name: "setpriority" },
    { op: "ld", offset: dataArgLow(0) },
    { op: "jeq", k: PRIO_WHICH.process, then: "who" },
    { op: "jeq", k: PRIO_WHICH.pgrp, then: "who", else: "eperm" },
    { op: "label", name: "ioprio" },
    { op: "ld", offset: dataArgLow(0) },
    { op: "jeq", k: IOPRIO_WHICH.process, then: "who" },
    { op: "jeq", k: IOPRIO_WHICH.pgrp, then: "who", else: "eperm" },
    { op: "label", name: "who" },
    { op: "ld", offset: dataArgLow(1) },
    { op: "jeq", k: 0, then: "allow", else: "eperm" },
    ...socketRules(options.network),
    { op: "label", name: "allow" },
    { op: "ret", k: SECCOMP_RET.allow },
    { op: "label", name: "eperm" },
    { op: "ret", k: SECCOMP_RET.errno | EPERM },
    { op: "label", name: "enosys" },
    { op: "ret", k: SECCOMP_RET.errno | ENOSYS },
    { op: "label", name: "eafnosupport" },
    { op: "ret", k: SECCOMP_RET.errno | EAFNOSUPPORT },
    { op: "label", name: "eprotonosupport" },
    { op: "ret", k: SECCOMP_RET.errno | EPROTONOSUPPORT },
  ]);
}
