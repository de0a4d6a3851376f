/*
 * The agent's seccomp program, run instruction by instruction by a classic
 * BPF interpreter written here from linux/filter.h (the kernel runs the same
 * bytes in test/sandbox/confinement.test.ts), and the Landlock rules as the
 * stage receives them.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { lstatSync } from "node:fs";
import {
  AGENT_DEVICE_PATHS,
  AGENT_WRITABLE_PATHS,
  confinementKeys,
  DENIED_IOCTLS,
  ENOSYS,
  EPERM,
  extraPathProblem,
  FS_ACCESS,
  imageTopLevel,
  landlockRules,
  NET_ACCESS,
  NEW_NAMESPACE_FLAGS,
  NO_EXTRA_CONFINEMENT,
  portRules,
  SCOPE,
  SECCOMP_ARCHES,
  SECCOMP_RET,
  seccompProgram,
} from "../../../src/confinement.ts";

const test = suite("confinement");

interface Call {
  arch: number;
  nr: number;
  args?: readonly number[];
}

/** Runs a sock_filter program over one struct seccomp_data (only the opcodes an interpreter of ours needs). */
function run(program: Buffer, call: Call): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(call.nr, 0);
  data.writeUInt32LE(call.arch >>> 0, 4);
  (call.args ?? []).forEach((arg, i) => data.writeBigUInt64LE(BigInt(arg), 16 + 8 * i));
  let a = 0;
  for (let pc = 0, steps = 0; pc < program.length / 8 && steps < 1000; steps++) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    pc += 1;
    switch (code) {
      case 0x20: a = data.readUInt32LE(k); break; // BPF_LD | BPF_W | BPF_ABS
      case 0x15: pc += a === k ? jt : jf; break; // BPF_JMP | BPF_JEQ | BPF_K
      case 0x35: pc += a >= k ? jt : jf; break; // BPF_JGE
      case 0x45: pc += (a & k) !== 0 ? jt : jf; break; // BPF_JSET
      case 0x06: return k; // BPF_RET | BPF_K
      default: throw new Error(`unknown opcode 0x${code.toString(16)}`);
    }
  }
  throw new Error("the program fell off its end");
}

const ALLOW = SECCOMP_RET.allow;
const DENY = SECCOMP_RET.errno | EPERM;
const NOSYS = SECCOMP_RET.errno | ENOSYS;

for (const [arch, table] of Object.entries(SECCOMP_ARCHES)) {
  const program = seccompProgram(arch);
  const native = (nr: number, args?: number[]): number => run(program, { arch: table.audit, nr, args });

  test(`${arch}: every listed call is answered EPERM`, () => {
    for (const [name, nr] of Object.entries(table.deny)) assert.is(native(nr), DENY, name);
  });

  test(`${arch}: ordinary calls pass (read, write, openat, mmap, execve, landlock_*)`, () => {
    const ordinary = arch === "x64" ? [0, 1, 257, 9, 59, 444, 445, 446, 57] : [63, 64, 56, 222, 221, 444, 445, 446];
    for (const nr of ordinary) assert.is(native(nr), ALLOW, `nr ${nr}`);
  });

  test(`${arch}: clone3 is ENOSYS; clone and unshare pass without namespace flags and not with one`, () => {
    assert.is(native(table.clone3), NOSYS);
    for (const nr of [table.clone, table.unshare]) {
      assert.is(native(nr, [0x01200011]), ALLOW, "fork's flags (CLONE_CHILD_SETTID|CLEARTID|SIGCHLD)");
      assert.is(native(nr, [0x00000400]), ALLOW, "CLONE_FILES");
      for (let bit = 0; bit < 32; bit++) {
        const flag = 2 ** bit;
        if (NEW_NAMESPACE_FLAGS & flag) assert.is(native(nr, [flag | 0x11]), DENY, `flag 0x${flag.toString(16)}`);
      }
    }
  });

  test(`${arch}: TIOCSTI and TIOCLINUX are EPERM, other ioctls pass, also with high bits the kernel drops`, () => {
    assert.is(native(table.ioctl, [0, DENIED_IOCTLS.TIOCSTI]), DENY);
    assert.is(native(table.ioctl, [0, DENIED_IOCTLS.TIOCLINUX]), DENY);
    assert.is(native(table.ioctl, [0, 2 ** 32 + DENIED_IOCTLS.TIOCSTI]), DENY, "the request is an unsigned int");
    assert.is(native(table.ioctl, [0, 0x5401]), ALLOW, "TCGETS");
  });

  test(`${arch}: a call of another architecture is refused whole`, () => {
    for (const other of [0x40000003 /* i386 */, 0xc00000b7, 0xc000003e].filter((x) => x !== table.audit)) {
      assert.is(run(program, { arch: other, nr: 0 }), DENY);
    }
  });
}

test("with a Landlock domain in force the filter lets ptrace through, and nothing else more", () => {
  for (const [arch, table] of Object.entries(SECCOMP_ARCHES)) {
    const alone = seccompProgram(arch);
    const withDomain = seccompProgram(arch, { ptrace: true });
    assert.is(run(alone, { arch: table.audit, nr: table.deny.ptrace! }), DENY, `${arch}: alone`);
    assert.is(run(withDomain, { arch: table.audit, nr: table.deny.ptrace! }), ALLOW, `${arch}: in a domain`);
    for (const nr of [...Object.values(table.deny).filter((n) => n !== table.deny.ptrace), 0, 1, 59, 435, 999]) {
      for (const args of [[0, 0], [NEW_NAMESPACE_FLAGS, DENIED_IOCTLS.TIOCSTI]]) {
        assert.is(run(withDomain, { arch: table.audit, nr, args }), run(alone, { arch: table.audit, nr, args }), `${arch}: nr ${nr}`);
      }
    }
  }
});

test("x64: the x32 ABI's calls (bit 30 set) are refused whole", () => {
  assert.is(run(seccompProgram("x64"), { arch: SECCOMP_ARCHES.x64!.audit, nr: 0x40000000 + 1 }), DENY);
});

test("an architecture without a table is not guessed", () => {
  assert.throws(() => seccompProgram("mips"), /no seccomp table for mips/);
});

const TOP = ["/bin", "/etc", "/usr"];

test("the Landlock rules: read and execute the top level given, write the defaults, the service's paths must exist", () => {
  const rules = landlockRules({ ...NO_EXTRA_CONFINEMENT, allowWrite: ["/run/w"], allowRead: ["/opt/r"] }, TOP);
  const rx = FS_ACCESS.execute | FS_ACCESS.readFile | FS_ACCESS.readDir;
  const device = FS_ACCESS.writeFile | FS_ACCESS.readFile | FS_ACCESS.truncate | FS_ACCESS.ioctlDev;
  assert.equal(rules.paths, [
    { access: FS_ACCESS.readDir, must: false, path: "/" },
    ...TOP.map((path) => ({ access: rx, must: false, path })),
    ...AGENT_WRITABLE_PATHS.map((path) => ({ access: 0xffff, must: false, path })),
    { access: 0xffff, must: true, path: "/run/w" },
    ...AGENT_DEVICE_PATHS.map((path) => ({ access: device, must: false, path })),
    { access: rx, must: false, path: "/state/install" },
    { access: rx, must: true, path: "/opt/r" },
  ]);
  assert.is(rules.scope, SCOPE.abstractUnixSocket | SCOPE.signal);
  assert.is(rules.net, 0, "no port rules unless asked: they cost a rule per port");
  assert.equal(rules.ports, []);
});

test("the image's top level: directories only, never /state or a symbolic link", () => {
  const top = imageTopLevel();
  assert.ok(top.includes("/usr") && top.includes("/etc"), top.join(" "));
  assert.not.ok(top.includes("/state"));
  assert.ok(top.every((path) => !lstatSync(path).isSymbolicLink() && lstatSync(path).isDirectory()));
});

test("denied ports become an allow list in runs: every other port keeps every handled right", () => {
  const { net, ports } = portRules([9000, 80, 9000], [8080]);
  const both = NET_ACCESS.bindTcp | NET_ACCESS.connectTcp;
  assert.is(net, both);
  assert.equal(ports, [
    { access: both, low: 0, high: 79 },
    { access: NET_ACCESS.bindTcp, low: 80, high: 80 },
    { access: both, low: 81, high: 8079 },
    { access: NET_ACCESS.connectTcp, low: 8080, high: 8080 },
    { access: both, low: 8081, high: 8999 },
    { access: NET_ACCESS.bindTcp, low: 9000, high: 9000 },
    { access: both, low: 9001, high: 65535 },
  ]);
  // Only connect handled: a port denied to it gets no rule at all.
  assert.equal(portRules([22], []), { net: NET_ACCESS.connectTcp, ports: [{ access: NET_ACCESS.connectTcp, low: 0, high: 21 }, { access: NET_ACCESS.connectTcp, low: 23, high: 65535 }] });
});

test("the stage keys: every rule as data, in order, then the seccomp filter", () => {
  const best = confinementKeys(NO_EXTRA_CONFINEMENT, { arch: "x64", topLevel: ["/usr"] });
  assert.equal(best, [
    "confine=best",
    "net=0",
    "scope=3",
    "path=8:may:/",
    "path=d:may:/usr",
    ...AGENT_WRITABLE_PATHS.map((p) => `path=ffff:may:${p}`),
    ...AGENT_DEVICE_PATHS.map((p) => `path=c006:may:${p}`),
    "path=d:may:/state/install",
    `seccomp=${seccompProgram("x64", { ptrace: true }).toString("hex")}`,
    `seccomp-alone=${seccompProgram("x64").toString("hex")}`,
  ]);
  const extra = confinementKeys({ strict: true, allowWrite: ["/run/w"], allowRead: ["/opt/r"], denyConnect: [80], denyBind: [] }, { arch: "x64", topLevel: [] });
  assert.is(extra[0], "confine=strict");
  assert.ok(extra.includes("path=ffff:must:/run/w") && extra.includes("path=d:must:/opt/r"));
  assert.equal(extra.filter((k) => /^(net|port)=/.test(k)), ["net=2", "port=2:0-79", "port=2:81-65535"]);
});

test("extra paths: absolute and normal, never / or /state", () => {
  for (const ok of ["/run/worker", "/state/sockets/w1", "/a b/c"]) assert.is(extraPathProblem(ok), undefined, ok);
  const bad: [string, RegExp][] = [
    ["run/w", /not absolute/],
    ["/", /not a normal path/],
    ["/state", /all of \/state/],
    ["/a/../state", /not a normal path/],
    ["/a/./b", /not a normal path/],
    ["/a//b", /not a normal path/],
    ["/a/", /not a normal path/],
    ["/a\0b", /NUL/],
  ];
  for (const [path, why] of bad) assert.match(extraPathProblem(path) ?? "", why, path);
});

test.run();
