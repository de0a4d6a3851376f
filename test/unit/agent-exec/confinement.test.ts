/*
 * The agent's seccomp program, run instruction by instruction by a classic
 * BPF interpreter written here from linux/filter.h (the kernel runs the same
 * bytes in test/sandbox/confinement.test.ts), and the stage keys of the
 * Landlock domain.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AGENT_DEVICE_PATHS, AGENT_WRITABLE_PATHS, confinementKeys, DENIED_IOCTLS, ENOSYS, EPERM, extraPathProblem, NEW_NAMESPACE_FLAGS, NO_EXTRA_CONFINEMENT, SECCOMP_ARCHES, SECCOMP_RET, seccompProgram } from "../../../src/confinement.ts";

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

test("x64: the x32 ABI's calls (bit 30 set) are refused whole", () => {
  assert.is(run(seccompProgram("x64"), { arch: SECCOMP_ARCHES.x64!.audit, nr: 0x40000000 + 1 }), DENY);
});

test("an architecture without a table is not guessed", () => {
  assert.throws(() => seccompProgram("mips"), /no seccomp table for mips/);
});

test("the stage keys: defaults, the service's extra paths and ports, strict", () => {
  const best = confinementKeys(NO_EXTRA_CONFINEMENT, "x64");
  assert.is(best[0], "confine=best");
  assert.equal(best.filter((k) => k.startsWith("rw=")), AGENT_WRITABLE_PATHS.map((p) => `rw=${p}`));
  assert.equal(best.filter((k) => k.startsWith("dev=")), AGENT_DEVICE_PATHS.map((p) => `dev=${p}`));
  assert.equal(best.filter((k) => k.startsWith("ro")), ["ro=/state/install"]);
  assert.ok(best.includes("hide=state"));
  assert.is(best.filter((k) => /^no(connect|bind)=/.test(k)).length, 0, "no port rules unless asked: they cost a rule per port");
  assert.is(best.at(-1), `seccomp=${seccompProgram("x64").toString("hex")}`);
  const extra = confinementKeys({ strict: true, allowWrite: ["/run/w"], allowRead: ["/opt/r"], denyConnect: [9000, 80, 9000], denyBind: [8080] }, "x64");
  assert.is(extra[0], "confine=strict");
  assert.ok(extra.includes("rw+=/run/w") && extra.includes("ro+=/opt/r"));
  assert.ok(extra.includes("noconnect=80,9000") && extra.includes("nobind=8080"));
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
