/*
 * src/seccomp-filter.ts: the agent's seccomp program, run instruction by
 * instruction by a classic BPF interpreter written here from linux/filter.h,
 * over a struct seccomp_data as the kernel fills it (the kernel runs the same
 * bytes in test/sandbox/confinement.test.ts, where each decision is also
 * checked by the attempt it must deny and a control that shows the attempt
 * works); and the table build.mjs defines, which the stage keys carry.
 *
 * Every expectation is written here, from the kernel's headers, and never read
 * from src/seccomp-filter.ts: a call, flag or number dropped from its table
 * must fail a test here, which iterating that table would not.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { confinementKeys, NO_EXTRA_CONFINEMENT, seccompHex, type SeccompOptions } from "../../src/confinement.ts";
import { SECCOMP_ARCHES, seccompProgram, seccompTable } from "../../src/seccomp-filter.ts";
import { type Arch, AUDIT, DENIED_CALLS, DENIED_CLONE_FLAGS, DENIED_CLONE_ONLY_FLAGS, type Numbers } from "../helpers/seccomp-denied.ts";

const seccomp = suite("seccomp");

interface Call {
  arch: number;
  nr: number;
  /** Each a 64-bit register value (a bigint where the high word matters). */
  args?: readonly (number | bigint)[];
}

/** Runs a sock_filter program over one struct seccomp_data; an opcode it does not know fails the test. */
function run(program: Buffer, call: Call): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(call.nr, 0);
  data.writeUInt32LE(call.arch >>> 0, 4);
  (call.args ?? []).forEach((arg, i) => data.writeBigUInt64LE(BigInt.asUintN(64, BigInt(arg)), 16 + 8 * i));
  let a = 0;
  for (let pc = 0, steps = 0; pc < program.length / 8 && steps < 4096; steps++) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    pc += 1;
    switch (code) {
      case 0x20: a = data.readUInt32LE(k); break; // BPF_LD | BPF_W | BPF_ABS
      case 0x54: a = (a & k) >>> 0; break; // BPF_ALU | BPF_AND | BPF_K
      case 0x15: pc += a === k ? jt : jf; break; // BPF_JMP | BPF_JEQ | BPF_K
      case 0x35: pc += a >= k ? jt : jf; break; // BPF_JGE
      case 0x45: pc += (a & k) !== 0 ? jt : jf; break; // BPF_JSET
      case 0x06: return k; // BPF_RET | BPF_K
      default: throw new Error(`unknown opcode 0x${code.toString(16)}`);
    }
  }
  throw new Error("the program fell off its end");
}

/* linux/seccomp.h: SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | errno; errno-base.h, errno.h. */
const ALLOW = 0x7fff0000;
const errnoRet = (errno: number): number => 0x00050000 | errno;
const DENY = errnoRet(1); // EPERM
const NOSYS = errnoRet(38); // ENOSYS
const NOFAMILY = errnoRet(97); // EAFNOSUPPORT
const NOPROTOCOL = errnoRet(93); // EPROTONOSUPPORT

/** SysV IPC (svipc(7)) and POSIX message queues (mq_overview(7)): ENOSYS to a private job. */
const IPC_CALLS: Readonly<Record<string, Numbers>> = {
  shmget: { x64: 29, arm64: 194 },
  shmat: { x64: 30, arm64: 196 },
  shmctl: { x64: 31, arm64: 195 },
  shmdt: { x64: 67, arm64: 197 },
  semget: { x64: 64, arm64: 190 },
  semop: { x64: 65, arm64: 193 },
  semctl: { x64: 66, arm64: 191 },
  semtimedop: { x64: 220, arm64: 192 },
  msgget: { x64: 68, arm64: 186 },
  msgsnd: { x64: 69, arm64: 189 },
  msgrcv: { x64: 70, arm64: 188 },
  msgctl: { x64: 71, arm64: 187 },
  mq_open: { x64: 240, arm64: 180 },
  mq_unlink: { x64: 241, arm64: 181 },
  mq_timedsend: { x64: 242, arm64: 182 },
  mq_timedreceive: { x64: 243, arm64: 183 },
  mq_notify: { x64: 244, arm64: 184 },
  mq_getsetattr: { x64: 245, arm64: 185 },
};

/** Calls whose first argument names the process they change: allowed for pid 0 (the caller) alone. */
const OWN_PID_CALLS: Readonly<Record<string, Numbers>> = {
  prlimit64: { x64: 302, arm64: 261 },
  sched_setparam: { x64: 142, arm64: 118 },
  sched_setscheduler: { x64: 144, arm64: 119 },
  sched_setaffinity: { x64: 203, arm64: 122 },
  sched_setattr: { x64: 314, arm64: 274 },
  migrate_pages: { x64: 256, arm64: 238 },
  move_pages: { x64: 279, arm64: 239 },
};

/** The calls the filter decides by their arguments. */
const NR: Readonly<Record<"clone" | "clone3" | "unshare" | "ioctl" | "socket" | "socketpair" | "setpriority" | "ioprioSet", Numbers>> = {
  clone: { x64: 56, arm64: 220 },
  clone3: { x64: 435, arm64: 435 },
  unshare: { x64: 272, arm64: 97 },
  ioctl: { x64: 16, arm64: 29 },
  socket: { x64: 41, arm64: 198 },
  socketpair: { x64: 53, arm64: 199 },
  setpriority: { x64: 141, arm64: 140 },
  ioprioSet: { x64: 251, arm64: 30 },
};

/** linux/tty.h (asm-generic/ioctls.h): TIOCSTI pushes input into a terminal, TIOCLINUX can too. */
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

const DEFAULT: SeccompOptions = { ptrace: false, network: "all" };
const HIGH = 2n ** 32n;

/* linux/socket.h, linux/net.h, linux/in.h, linux/netlink.h */
const AF = { UNIX: 1, INET: 2, INET6: 10, NETLINK: 16, PACKET: 17, ALG: 38, VSOCK: 40, SMC: 43, XDP: 44 };
const SOCK = { STREAM: 1, DGRAM: 2, RAW: 3, SEQPACKET: 5, NONBLOCK: 0o4000, CLOEXEC: 0o2000000 };
const IPPROTO = { ICMP: 1, TCP: 6, UDP: 17, ICMPV6: 58, SCTP: 132, UDPLITE: 136, SMC: 256, MPTCP: 262 };
const NETLINK = { ROUTE: 0, SOCK_DIAG: 4, AUDIT: 9, GENERIC: 16, KOBJECT_UEVENT: 15 };

const numbers = (calls: Readonly<Record<string, Numbers>>, arch: Arch): [string, number][] => Object.entries(calls).map(([name, nr]) => [name, nr[arch]]);

for (const arch of Object.keys(AUDIT) as Arch[]) {
  const program = seccompProgram(arch, DEFAULT);
  const audit = AUDIT[arch];
  const sys = Object.fromEntries(Object.entries(NR).map(([name, nr]) => [name, nr[arch]])) as Record<keyof typeof NR, number>;
  const call = (nr: number, args?: Call["args"], p: Buffer = program): number => run(p, { arch: audit, nr, args });

  seccomp(`${arch}: every denied call is answered EPERM`, () => {
    for (const [name, nr] of numbers(DENIED_CALLS, arch)) assert.is(call(nr), DENY, name);
  });

  seccomp(`${arch}: the filter's table denies the calls this test lists, no other (a new one needs its line here and its attempt in the sandbox)`, () => {
    assert.equal(Object.entries(SECCOMP_ARCHES[arch]!.deny).sort(), numbers(DENIED_CALLS, arch).sort());
  });

  seccomp(`${arch}: ipc (a private job): SysV IPC and POSIX message queues are ENOSYS; without it they pass`, () => {
    const privateJob = seccompProgram(arch, { ...DEFAULT, ipc: true });
    for (const [name, nr] of numbers(IPC_CALLS, arch)) {
      assert.is(call(nr, [], privateJob), NOSYS, name);
      assert.is(call(nr), ALLOW, name);
    }
    for (const [name, nr] of numbers(DENIED_CALLS, arch)) assert.is(call(nr, [], privateJob), DENY, name);
  });

  seccomp(`${arch}: ptrace: true leaves ptrace alone and keeps every other denial`, () => {
    const traced = seccompProgram(arch, { ...DEFAULT, ptrace: true });
    for (const [name, nr] of numbers(DENIED_CALLS, arch)) assert.is(call(nr, [], traced), name === "ptrace" ? ALLOW : DENY, name);
  });

  seccomp(`${arch}: ordinary calls pass (read, write, openat, mmap, execve, landlock_*, setrlimit-free getters)`, () => {
    const ordinary = arch === "x64" ? [0, 1, 257, 9, 59, 444, 445, 446, 57, 97 /* getrlimit */, 140 /* getpriority */] : [63, 64, 56, 222, 221, 444, 445, 446, 163 /* getrlimit */, 141 /* getpriority */];
    for (const nr of ordinary) assert.is(call(nr), ALLOW, `nr ${nr}`);
  });

  seccomp(`${arch}: clone3 is ENOSYS; clone and unshare pass without namespace flags and not with one; clone not with CLONE_PARENT`, () => {
    assert.is(call(sys.clone3), NOSYS);
    for (const nr of [sys.clone, sys.unshare]) {
      assert.is(call(nr, [0x01200011]), ALLOW, "fork's flags (CLONE_CHILD_SETTID|CLEARTID|SIGCHLD)");
      assert.is(call(nr, [0x00000400]), ALLOW, "CLONE_FILES");
      for (let bit = 0; bit < 32; bit++) {
        const flag = 2 ** bit;
        const denied = Object.values(DENIED_CLONE_FLAGS).includes(flag) || (nr === sys.clone && Object.values(DENIED_CLONE_ONLY_FLAGS).includes(flag));
        assert.is(call(nr, [flag | 0x11]), denied ? DENY : ALLOW, `flag 0x${flag.toString(16)}`);
      }
    }
  });

  seccomp(`${arch}: TIOCSTI and TIOCLINUX are EPERM, other ioctls pass, also with high bits the kernel drops`, () => {
    assert.is(call(sys.ioctl, [0, TIOCSTI]), DENY);
    assert.is(call(sys.ioctl, [0, TIOCLINUX]), DENY);
    assert.is(call(sys.ioctl, [0, HIGH + BigInt(TIOCSTI)]), DENY, "the request is an unsigned int");
    assert.is(call(sys.ioctl, [0, 0x5401]), ALLOW, "TCGETS");
  });

  seccomp(`${arch}: a call of another architecture is refused whole`, () => {
    for (const other of [0x40000003 /* i386 */, 0xc00000b7, 0xc000003e].filter((x) => x !== audit)) {
      assert.is(run(program, { arch: other, nr: 0 }), DENY);
    }
  });

  seccomp(`${arch}: limits, scheduling and memory placement of pid 0 only`, () => {
    for (const [name, nr] of numbers(OWN_PID_CALLS, arch)) {
      assert.is(call(nr, [0, 7, 0, 0]), ALLOW, `${name}(0): the caller`);
      for (const pid of [1, 4242, 0x3fffffff, -1, -4242]) assert.is(call(nr, [pid, 7, 0, 0]), DENY, `${name}(${pid})`);
      // The kernel takes a pid_t, the register's low word: a high word changes nothing either way.
      assert.is(call(nr, [HIGH + 4242n]), DENY, `${name}(2^32 + 4242) is 4242 to the kernel`);
      assert.is(call(nr, [HIGH]), ALLOW, `${name}(2^32) is 0, the caller, to the kernel`);
    }
  });

  seccomp(`${arch}: setpriority of the caller or its process group, never another process, group or user`, () => {
    const PRIO = { PROCESS: 0, PGRP: 1, USER: 2 };
    assert.is(call(sys.setpriority, [PRIO.PROCESS, 0, 5]), ALLOW, "nice, renice -p 0");
    assert.is(call(sys.setpriority, [PRIO.PGRP, 0, 5]), ALLOW, "its own process group");
    assert.is(call(sys.setpriority, [PRIO.PROCESS, HIGH, 5]), ALLOW, "who 2^32 is 0 to the kernel");
    assert.is(call(sys.setpriority, [PRIO.PROCESS, 4242, 19]), DENY, "another process");
    assert.is(call(sys.setpriority, [PRIO.PROCESS, HIGH + 4242n, 19]), DENY, "who's high word set");
    assert.is(call(sys.setpriority, [PRIO.PGRP, 4242, 19]), DENY, "another process group");
    assert.is(call(sys.setpriority, [PRIO.USER, 0, 19]), DENY, "PRIO_USER 0: every process of the agent uid");
    assert.is(call(sys.setpriority, [PRIO.USER, 1001, 19]), DENY, "PRIO_USER");
    assert.is(call(sys.setpriority, [3, 0, 19]), DENY, "no such which");
  });

  seccomp(`${arch}: ioprio_set of the caller or its process group, never another process, group or user`, () => {
    const WHO = { PROCESS: 1, PGRP: 2, USER: 3 };
    const idle = 3 << 13; // IOPRIO_CLASS_IDLE
    assert.is(call(sys.ioprioSet, [WHO.PROCESS, 0, idle]), ALLOW, "ionice -c3 COMMAND");
    assert.is(call(sys.ioprioSet, [WHO.PGRP, 0, idle]), ALLOW);
    assert.is(call(sys.ioprioSet, [WHO.PROCESS, 4242, idle]), DENY);
    assert.is(call(sys.ioprioSet, [WHO.PGRP, 4242, idle]), DENY);
    assert.is(call(sys.ioprioSet, [WHO.USER, 0, idle]), DENY);
    assert.is(call(sys.ioprioSet, [WHO.USER, 1001, idle]), DENY);
    assert.is(call(sys.ioprioSet, [0, 0, idle]), DENY, "no such which");
  });

  for (const nr of [sys.socket, sys.socketpair]) {
    const name = nr === sys.socket ? "socket" : "socketpair";
    const flags = SOCK.NONBLOCK | SOCK.CLOEXEC;

    seccomp(`${arch}: ${name}: unix of any type; TCP, UDP and ping of IPv4 and IPv6, with or without SOCK_NONBLOCK|SOCK_CLOEXEC`, () => {
      for (const type of [SOCK.STREAM, SOCK.DGRAM, SOCK.SEQPACKET, SOCK.STREAM | flags]) assert.is(call(nr, [AF.UNIX, type, 0]), ALLOW, `unix ${type}`);
      for (const family of [AF.INET, AF.INET6]) {
        for (const extra of [0, SOCK.NONBLOCK, SOCK.CLOEXEC, flags]) {
          for (const protocol of [0, IPPROTO.TCP]) assert.is(call(nr, [family, SOCK.STREAM | extra, protocol]), ALLOW, `${family} stream ${protocol} ${extra}`);
          for (const protocol of [0, IPPROTO.UDP, IPPROTO.ICMP, IPPROTO.ICMPV6]) assert.is(call(nr, [family, SOCK.DGRAM | extra, protocol]), ALLOW, `${family} dgram ${protocol} ${extra}`);
        }
      }
      assert.is(call(nr, [AF.NETLINK, SOCK.RAW | flags, NETLINK.ROUTE]), ALLOW, "NETLINK_ROUTE: getifaddrs(3)");
    });

    seccomp(`${arch}: ${name}: MPTCP, SMC, SCTP and other protocols or types of IPv4 and IPv6 are EPROTONOSUPPORT`, () => {
      for (const family of [AF.INET, AF.INET6]) {
        for (const protocol of [IPPROTO.MPTCP, IPPROTO.SMC, IPPROTO.SCTP, IPPROTO.UDPLITE, 255]) {
          assert.is(call(nr, [family, SOCK.STREAM, protocol]), NOPROTOCOL, `${family} stream ${protocol}`);
          assert.is(call(nr, [family, SOCK.STREAM | flags, protocol]), NOPROTOCOL, `${family} stream|flags ${protocol}`);
          assert.is(call(nr, [family, SOCK.DGRAM, protocol]), NOPROTOCOL, `${family} dgram ${protocol}`);
        }
        assert.is(call(nr, [family, SOCK.STREAM, HIGH + BigInt(IPPROTO.MPTCP)]), NOPROTOCOL, "the protocol's low word is what the kernel reads");
        assert.is(call(nr, [family, SOCK.SEQPACKET, 0]), NOPROTOCOL, "SOCK_SEQPACKET 0 is SCTP");
        assert.is(call(nr, [family, SOCK.RAW, IPPROTO.TCP]), NOPROTOCOL, "raw sockets");
        assert.is(call(nr, [family, 6 /* SOCK_DCCP */, 0]), NOPROTOCOL, "DCCP");
      }
    });

    seccomp(`${arch}: ${name}: other families are EAFNOSUPPORT, other netlink protocols EPROTONOSUPPORT`, () => {
      for (const family of [0, AF.PACKET, AF.ALG, AF.VSOCK, AF.SMC, AF.XDP, 4 /* AF_IPX */, 31 /* AF_BLUETOOTH */, 29 /* AF_CAN */, 21 /* AF_RDS */, 30 /* AF_TIPC */, 15 /* AF_KEY */]) {
        assert.is(call(nr, [family, SOCK.STREAM, 0]), NOFAMILY, `family ${family}`);
        assert.is(call(nr, [family, SOCK.DGRAM, 0]), NOFAMILY, `family ${family}`);
      }
      assert.is(call(nr, [HIGH + BigInt(AF.ALG), SOCK.STREAM, 0]), NOFAMILY, "the family's low word is what the kernel reads");
      for (const protocol of [NETLINK.SOCK_DIAG, NETLINK.AUDIT, NETLINK.GENERIC, NETLINK.KOBJECT_UEVENT]) {
        assert.is(call(nr, [AF.NETLINK, SOCK.RAW, protocol]), NOPROTOCOL, `netlink ${protocol}`);
      }
    });

    seccomp(`${arch}: ${name}: network "none" makes unix sockets only`, () => {
      const offline = seccompProgram(arch, { ...DEFAULT, network: "none" });
      for (const type of [SOCK.STREAM, SOCK.DGRAM, SOCK.SEQPACKET | flags]) assert.is(call(nr, [AF.UNIX, type, 0], offline), ALLOW, `unix ${type}`);
      for (const family of [AF.INET, AF.INET6, AF.NETLINK, AF.PACKET, AF.VSOCK, AF.SMC]) {
        for (const [type, protocol] of [[SOCK.STREAM, 0], [SOCK.STREAM, IPPROTO.TCP], [SOCK.DGRAM, 0], [SOCK.DGRAM, IPPROTO.ICMP], [SOCK.RAW, 0]]) {
          assert.is(call(nr, [family, type!, protocol!], offline), NOFAMILY, `family ${family} type ${type} protocol ${protocol}`);
        }
      }
      assert.is(call(nr, [HIGH + BigInt(AF.UNIX), SOCK.STREAM, 0], offline), ALLOW, "the family's low word: AF_UNIX to the kernel");
      // Everything else is the same filter.
      for (const [name, nr2] of numbers(DENIED_CALLS, arch)) assert.is(call(nr2, [], offline), DENY, name);
      assert.is(call(sys.setpriority, [0, 4242, 19], offline), DENY);
    });
  }
}

seccomp("x64: the x32 ABI's calls (bit 30 set) are refused whole", () => {
  assert.is(run(seccompProgram("x64", DEFAULT), { arch: AUDIT.x64, nr: 0x40000000 + 1 }), DENY);
});

seccomp("an architecture without a table is not guessed", () => {
  assert.throws(() => seccompProgram("mips", DEFAULT), /no seccomp table for mips/);
});

seccomp("the stage keys: the filter follows the request's network, and network=none asks the stage to refuse without it", () => {
  const all = confinementKeys(NO_EXTRA_CONFINEMENT, { arch: "x64", topLevel: [] });
  const none = confinementKeys({ ...NO_EXTRA_CONFINEMENT, network: "none" }, { arch: "x64", topLevel: [] });
  for (const [keys, network] of [[all, "all"], [none, "none"]] as const) {
    assert.ok(keys.includes(`network=${network}`));
    assert.ok(keys.includes(`seccomp=${seccompProgram("x64", { ptrace: true, network }).toString("hex")}`));
    assert.ok(keys.includes(`seccomp-alone=${seccompProgram("x64", { ptrace: false, network }).toString("hex")}`));
  }
  assert.is.not(all.at(-1), none.at(-1));
});

seccomp("seccompTable, the filters build.mjs carries, holds every filter confinementKeys asks for, byte for byte as seccompProgram assembles it", () => {
  for (const arch of ["x64", "arm64"]) {
    const table = seccompTable(arch);
    assert.is(Object.keys(table).length, 8, arch);
    for (const ptrace of [true, false]) {
      for (const network of ["all", "none"] as const) {
        const hex = seccompProgram(arch, { ptrace, network }).toString("hex");
        assert.is(table[`${arch}:${ptrace ? "ptrace" : "no-ptrace"}:${network}`], hex, `${arch} ptrace=${ptrace} network=${network}`);
        assert.is(seccompHex(arch, { ptrace, network }), hex);
      }
    }
  }
});

seccomp.run();
