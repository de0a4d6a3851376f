import { spawnSync } from "node:child_process";
import { accessSync, chmodSync, chownSync, constants, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, rmdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { EXIT, SYSTEM_PATH } from "../../../src/constants.ts";
import { systemExec } from "../../../src/system-exec.ts";
import { checkTrustedExecutable, gateExec, MAX_SCRIPT_DEPTH, resolveCommand } from "../../../src/exec/rules.ts";
import { prepareExec } from "../../../src/exec/replace.ts";
import { runCapture } from "../../../src/exec/capture.ts";
import { REPO } from "../../helpers/paths.ts";
import { rootTest } from "../../helpers/privilege.ts";
import { withProcessEnv } from "../../helpers/process-env.ts";
import { assertRefusal, catchRefusal } from "../../helpers/refusal.ts";
import { lyingKernel } from "../../helpers/seccomp-wrap.ts";

const FIX = "install programs that root or the service run in a root-owned directory that only root can write (for example /usr/local/bin)";
const INTERPRETER_FIX = "name a #! interpreter installed in a root-owned directory that only root can write (for example /usr/bin)";
const EUID = process.geteuid!();
const TRUSTED = [...new Set([0, EUID])];
const octal = (path: string): string => (lstatSync(path).mode & 0o7777).toString(8);

function writeProgram(path: string, mode = 0o755): string {
  writeFileSync(path, "#!/bin/sh\nexit 0\n");
  chmodSync(path, mode);
  return path;
}

/** A directory with this mode (mkdir's is masked by the umask). */
function makeDirectory(path: string, mode: number): string {
  mkdirSync(path);
  chmodSync(path, mode);
  return path;
}

/** checkTrustedExecutable refuses `program` (126) because `why`, with the fix every such refusal gives. */
function assertNotTrusted(program: string, why: string, trusted: readonly number[] = TRUSTED): void {
  assertRefusal(() => checkTrustedExecutable(program, trusted), { exitCode: 126, what: `refusing to execute ${program}: ${why}`, fix: FIX });
}

/* --------------------------------------------------------- resolveCommand -- */

const resolve = suite("resolveCommand");

resolve("one gate for every audience: an argument or environment entry with a NUL byte is refused before anything starts (exec, capture, the service's systemExec, the spawner's grab, whose job is NUL-separated)", () => {
  const nul = { exitCode: EXIT.usage, what: "an argument or environment entry contains a NUL byte", fix: "pass arguments and environment values without NUL bytes" };
  assertRefusal(() => prepareExec({ command: "/bin/true", args: ["a\0b"], env: {}, trustedUids: [0] }), nul);
  assertRefusal(() => prepareExec({ command: "/bin/true", args: [], env: { A: "x\0y" }, trustedUids: [0] }), nul);
  assertRefusal(() => gateExec({ command: "/bin/true", args: [], env: { "A\0B": "x" }, trustedUids: [0] }), nul);
  assertRefusal(() => runCapture({ command: "/bin/true", args: ["a\0b"] }), nul);
  assertRefusal(() => systemExec("/bin/true", ["a\0b"]), nul);
});

resolve("refuses an empty command and a NUL byte (exit 64)", () => {
  assertRefusal(() => resolveCommand(""), { exitCode: EXIT.usage, what: "the command is empty", fix: "name a program to run" });
  assertRefusal(() => resolveCommand("env\0x"), { exitCode: EXIT.usage, what: "the command contains a NUL byte", fix: "name a program to run" });
  assertRefusal(() => resolveCommand("/usr/bin/env\0"), { exitCode: EXIT.usage, what: "the command contains a NUL byte", fix: "name a program to run" });
});

resolve("a path is taken as given, made absolute against cwd, without looking at the disk", () => {
  const cases: ReadonlyArray<readonly [string, string, string]> = [
    ["/no/such/program", "/opt", "/no/such/program"],
    ["./run.sh", "/opt/app", "/opt/app/run.sh"],
    ["bin/tool", "/opt/app", "/opt/app/bin/tool"],
    ["../tool", "/opt/app", "/opt/tool"],
    ["a/./b/../c", "/w", "/w/a/c"],
  ];
  for (const [command, cwd, want] of cases) assert.is(resolveCommand(command, cwd), want, command);
});

resolve("a bare name is found in the fixed system PATH", () => {
  assert.is(resolveCommand("env"), "/usr/bin/env");
  assert.is(resolveCommand("setpriv"), "/usr/bin/setpriv");
});

resolve("the caller's PATH is ignored", () => {
  const dir = mkdtempSync("/tmp/clankie-unit-path-");
  try {
    writeProgram(join(dir, "clankie-unit-planted"));
    withProcessEnv({ PATH: `${dir}:${process.env.PATH ?? ""}` }, () => {
      assertRefusal(() => resolveCommand("clankie-unit-planted"), {
        exitCode: EXIT.notFound,
        what: `clankie-unit-planted: not found in ${SYSTEM_PATH}`,
        fix: "install it in a system directory or give its absolute path",
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

resolve("not found: exit 127", () => {
  assert.is(EXIT.notFound, 127);
  assertRefusal(() => resolveCommand("clankie-no-such-command"), {
    exitCode: 127,
    what: `clankie-no-such-command: not found in ${SYSTEM_PATH}`,
    fix: "install it in a system directory or give its absolute path",
  });
});

resolve("works for absolute and bare names when the working directory was removed (docker exec, nsenter)", () => {
  const home = process.cwd();
  const gone = mkdtempSync(join(tmpdir(), "gone-"));
  process.chdir(gone);
  rmdirSync(gone);
  try {
    assert.throws(() => process.cwd(), /ENOENT/, "the control: the working directory is gone");
    assert.is(resolveCommand("/usr/bin/perl"), "/usr/bin/perl");
    assert.is(resolveCommand("perl"), "/usr/bin/perl");
  } finally {
    process.chdir(home);
  }
});

resolve.run();

/* ------------------------------------------------- checkTrustedExecutable -- */

const trust = suite("checkTrustedExecutable");

trust("a system program owned by root passes", () => {
  checkTrustedExecutable("/usr/bin/env", [0]);
  checkTrustedExecutable("/usr/bin/setpriv", [0, 1000]);
});

trust("a symlinked directory on the way counts by where it is, not by its own 0777 mode", () => {
  if (!lstatSync("/bin").isSymbolicLink()) return; // not a merged-/usr system
  checkTrustedExecutable("/bin/env", [0]);
});

trust("a missing file is not found (127)", () => {
  assertRefusal(() => checkTrustedExecutable("/usr/bin/clankie-no-such-program", [0]), {
    exitCode: EXIT.notFound,
    what: "/usr/bin/clankie-no-such-program: no such file",
    fix: "check the command's path",
  });
});

trust("an owner outside the trusted set is refused (126), naming the uid", () => {
  assert.is(EXIT.notExecutable, 126);
  assertRefusal(() => checkTrustedExecutable("/usr/bin/env", [1000]), {
    exitCode: 126,
    what: "refusing to execute /usr/bin/env: /usr/bin/env is owned by uid 0, not 1000",
    fix: FIX,
  });
  assertRefusal(() => checkTrustedExecutable("/usr/bin/env", [1000, 1001]), {
    exitCode: 126,
    what: "refusing to execute /usr/bin/env: /usr/bin/env is owned by uid 0, not 1000 or 1001",
    fix: FIX,
  });
  assertRefusal(() => checkTrustedExecutable("/usr/bin/env", []), { exitCode: 126, what: "refusing to execute /usr/bin/env: /usr/bin/env is owned by uid 0, not ", fix: FIX });
});

/** Runs fn in a scratch directory under /tmp (itself world-writable: nothing below it can pass), then removes it. */
function inScratch(fn: (dir: string) => void): void {
  const dir = mkdtempSync("/tmp/clankie-unit-trust-");
  chmodSync(dir, 0o700);
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

trust("a file in a 0777 directory is refused, naming that directory", () => {
  inScratch((dir) => {
  const open = makeDirectory(join(dir, "open"), 0o777);
  const program = writeProgram(join(open, "prog"));
  assertNotTrusted(program, `${open} is writable by group or other (mode 777)`);
  });
});

trust("group- or other-writable files and directories are refused, whatever else is set", () => {
  inScratch((dir) => {
  const cases: ReadonlyArray<readonly [number, string]> = [
    [0o775, "775"],
    [0o757, "757"],
    [0o4777, "4777"],
    [0o2775, "2775"],
  ];
  for (const [mode, shown] of cases) {
    const program = writeProgram(join(dir, `prog-${shown}`), mode);
    assertNotTrusted(program, `${program} is writable by group or other (mode ${shown})`);
  }
  const sticky = makeDirectory(join(dir, "sticky"), 0o1777);
  const program = writeProgram(join(sticky, "prog"));
  assertNotTrusted(program, `${sticky} is writable by group or other (mode 1777)`);
  });
});

trust("every directory up to / is checked: /tmp itself refuses what is below it", () => {
  inScratch((dir) => {
  const program = writeProgram(join(dir, "prog"));
  const top = dirname(dir);
  assert.ok((lstatSync(top).mode & 0o022) !== 0, `${top} is expected to be world-writable`);
  assertNotTrusted(program, `${top} is writable by group or other (mode ${octal(top)})`);
  });
});

trust("a symlink in a 0777 directory is refused even when its target is trusted (the path as given counts)", () => {
  inScratch((dir) => {
  const open = makeDirectory(join(dir, "open"), 0o777);
  const link = join(open, "env");
  symlinkSync("/usr/bin/env", link);
  assertNotTrusted(link, `${open} is writable by group or other (mode 777)`, [0, EUID]);
  });
});

rootTest(trust, "a file owned by another uid is refused (chown)", () => {
  inScratch((dir) => {
  const program = writeProgram(join(dir, "prog"));
  chownSync(program, 4242, 4242);
  assertNotTrusted(program, `${program} is owned by uid 4242, not 0`, [0]);
  // trusting that uid moves the refusal up to the first untrusted directory
  assertNotTrusted(program, `${dir} is owned by uid 0, not 4242`, [4242]);
  });
});

rootTest(trust, "a root-owned file in a directory owned by another uid is refused (chown)", () => {
  inScratch((dir) => {
  const sub = join(dir, "theirs");
  mkdirSync(sub, 0o755);
  chmodSync(sub, 0o755);
  chownSync(sub, 4242, 4242);
  const program = writeProgram(join(sub, "prog"));
  assertNotTrusted(program, `${sub} is owned by uid 4242, not 0`, [0]);
  });
});

/*
 * Cases that must pass need a directory chain nobody else can write. /tmp is
 * not one: use the repository's ignored tmp/ when the checkout's own chain is
 * clean (checked here independently of src/), otherwise skip loudly.
 */
function cleanChain(path: string): boolean {
  for (let p = path; ; p = dirname(p)) {
    const st = lstatSync(p);
    if (!TRUSTED.includes(st.uid) || (!st.isSymbolicLink() && (st.mode & 0o022) !== 0)) return false;
    if (p === "/") return true;
  }
}

/**
 * Where scratch directories that pass the rules can be made, decided once:
 * the repository's ignored tmp/, or, for root in a checkout under /tmp (as a
 * CI clone may be), a directory under /run.
 */
const SCRATCH_BASE = ((): string | undefined => {
  try {
    accessSync(REPO, constants.W_OK);
    if (cleanChain(REPO)) return join(REPO, "tmp");
  } catch {
    // not writable: try /run
  }
  if (process.geteuid?.() === 0 && cleanChain("/run")) return `/run/clankie-unit-scratch-${process.pid}`;
  return undefined;
})();

function withTrustedScratch(name: string, fn: (dir: string) => void, needsRoot = false): void {
  if (SCRATCH_BASE === undefined) {
    process.stderr.write(`SKIPPED (no scratch directory under ${REPO} that only a trusted uid can write): ${name}\n`);
    trust.skip(name);
    return;
  }
  const base = SCRATCH_BASE;
  const body = (): void => {
    if (!existsSync(base)) mkdirSync(base);
    chmodSync(base, 0o755);
    const dir = mkdtempSync(join(base, "unit-trust-"));
    chmodSync(dir, 0o755);
    try {
      fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      try {
        rmdirSync(base); // when no other run uses it
      } catch {
        // not empty: another run's scratch is there
      }
    }
  };
  if (needsRoot) rootTest(trust, name, body);
  else trust(name, body);
}

withTrustedScratch("what execve(2) would refuse is refused before it, each with its own line: a directory, a file without x, a relative #! interpreter, neither ELF nor #!, a path through a file; control: the same file made runnable passes", (dir) => {
  const gate = (command: string) => prepareExec({ command, args: [], env: {}, trustedUids: TRUSTED });
  assertRefusal(() => gate(dir), { exitCode: EXIT.notExecutable, what: `${dir}: not a regular file`, fix: "name an executable file" });
  const elf = join(dir, "elf");
  copyFileSync("/bin/true", elf);
  chmodSync(elf, 0o644);
  assertRefusal(() => gate(elf), { exitCode: EXIT.notExecutable, what: `${elf}: not executable by uid ${EUID}`, fix: "check the file's mode and owner" });
  chmodSync(elf, 0o755);
  assert.is(gate(elf).path, elf, "the control: an ELF with its x bits");
  const relative = join(dir, "relative");
  writeFileSync(relative, "#!sh\nexit 0\n", { mode: 0o755 });
  chmodSync(relative, 0o755);
  assertRefusal(() => gate(relative), { exitCode: EXIT.notExecutable, what: `${relative}: #! line names no absolute interpreter`, fix: "fix the script's #! line" });
  const text = join(dir, "text");
  writeFileSync(text, "exit 0\n");
  chmodSync(text, 0o755);
  assertRefusal(() => gate(text), { exitCode: EXIT.notExecutable, what: `${text}: not an ELF binary or #! script (execve would fail with ENOEXEC)`, fix: "name an executable program" });
  writeFileSync(text, "#!/bin/sh\nexit 0\n");
  assert.is(gate(text).path, text, "the control: the same file with a #! line");
  const through = join(text, "below");
  assertRefusal(() => gate(through), { exitCode: EXIT.notExecutable, what: `${through}: cannot be resolved (ENOTDIR)` });
});

withTrustedScratch("a file in a clean chain passes; making one directory group-writable refuses it", (dir) => {
  const program = writeProgram(join(dir, "prog"));
  checkTrustedExecutable(program, TRUSTED);
  chmodSync(dir, 0o775);
  assertNotTrusted(program, `${dir} is writable by group or other (mode 775)`);
});

withTrustedScratch("a symlink in a clean directory to a file in a 0777 directory is refused (the path as resolved counts)", (dir) => {
  const open = makeDirectory(join(dir, "open"), 0o777);
  const target = writeProgram(join(open, "prog"));
  const link = join(dir, "link");
  symlinkSync(target, link);
  assertNotTrusted(link, `${open} is writable by group or other (mode 777)`);
});

withTrustedScratch("a symlinked directory into a 0777 directory is refused", (dir) => {
  const open = makeDirectory(join(dir, "open"), 0o777);
  writeProgram(join(open, "prog"));
  symlinkSync(open, join(dir, "bin"));
  const program = join(dir, "bin", "prog");
  assertNotTrusted(program, `${open} is writable by group or other (mode 777)`);
});

withTrustedScratch("a clean symlink to a clean file passes", (dir) => {
  const target = writeProgram(join(dir, "prog"));
  const link = join(dir, "link");
  symlinkSync("prog", link);
  checkTrustedExecutable(link, TRUSTED);
  checkTrustedExecutable(target, TRUSTED);
});

withTrustedScratch(
  "a symlink in a clean directory to a file owned by another uid is refused (chown)",
  (dir) => {
    const target = writeProgram(join(dir, "prog"));
    chownSync(target, 4242, 4242);
    const link = join(dir, "link");
    symlinkSync(target, link);
    assertNotTrusted(link, `${target} is owned by uid 4242, not 0`, [0]);
  },
  true,
);

/* A script's #! interpreter runs with the caller's privileges: it is held to the same rule as the script. */

function writeScript(path: string, interpreter: string, mode = 0o755): string {
  writeFileSync(path, `#!${interpreter} -e\necho hello\n`);
  chmodSync(path, mode);
  return path;
}

/** The three ways in which every rule-following caller (exec, capture, service exec) refuses, each with one line. */
function assertEveryExecRefuses(program: string, want: { exitCode: number; what: string; fix?: string }): void {
  assertRefusal(() => prepareExec({ command: program, args: [], env: {}, trustedUids: TRUSTED }), want);
  assertRefusal(() => runCapture({ command: program, args: [], trustedUids: TRUSTED }), want);
  assertRefusal(() => systemExec(program, [], { trustedUids: TRUSTED }), want);
  const refusal = catchRefusal(() => prepareExec({ command: program, args: [], env: {}, trustedUids: TRUSTED }));
  assert.not.match(`${refusal.message}; ${refusal.fix}`, /[\r\n]/, "one line on stderr");
}

withTrustedScratch("a trusted script whose #! interpreter lies in a 0777 directory is refused (126); with /bin/sh it passes", (dir) => {
  const open = makeDirectory(join(dir, "open"), 0o777);
  const tool = writeProgram(join(open, "tool"));
  const script = writeScript(join(dir, "run.sh"), tool);
  assert.is(octal(script), "755");
  assertEveryExecRefuses(script, {
    exitCode: 126,
    what: `refusing to execute ${script} (#! ${tool}): ${open} is writable by group or other (mode 777)`,
    fix: INTERPRETER_FIX,
  });
  // The control: the same script with a trusted interpreter.
  writeScript(script, "/bin/sh");
  assert.is(prepareExec({ command: script, args: [], env: {}, trustedUids: TRUSTED }).path, script);
  assert.is(runCapture({ command: script, args: [], trustedUids: TRUSTED }).stdout.toString(), "hello\n");
});

withTrustedScratch("a #! interpreter writable by group or by other is refused, whatever else is set", (dir) => {
  for (const mode of [0o775, 0o757, 0o777]) {
    const tool = writeProgram(join(dir, `tool-${mode.toString(8)}`), mode);
    const script = writeScript(join(dir, `run-${mode.toString(8)}.sh`), tool);
    assertEveryExecRefuses(script, {
      exitCode: 126,
      what: `refusing to execute ${script} (#! ${tool}): ${tool} is writable by group or other (mode ${mode.toString(8)})`,
      fix: INTERPRETER_FIX,
    });
  }
});

withTrustedScratch(
  "a #! interpreter owned by another uid is refused (chown)",
  (dir) => {
    const tool = writeProgram(join(dir, "tool"));
    chownSync(tool, 4242, 4242);
    const script = writeScript(join(dir, "run.sh"), tool);
    assertEveryExecRefuses(script, {
      exitCode: 126,
      what: `refusing to execute ${script} (#! ${tool}): ${tool} is owned by uid 4242, not ${TRUSTED.join(" or ")}`,
      fix: INTERPRETER_FIX,
    });
  },
  true,
);

withTrustedScratch("the interpreter's interpreter is held to the rule too, and the refusal names the chain", (dir) => {
  const open = makeDirectory(join(dir, "open"), 0o777);
  const tool = writeProgram(join(open, "tool"));
  const middle = writeScript(join(dir, "middle"), tool);
  const script = writeScript(join(dir, "run.sh"), middle);
  assertEveryExecRefuses(script, {
    exitCode: 126,
    what: `refusing to execute ${script} (#! ${middle}, #! ${tool}): ${open} is writable by group or other (mode 777)`,
    fix: INTERPRETER_FIX,
  });
});

withTrustedScratch("a symlink to a script does not hide the script's #! line", (dir) => {
  const open = makeDirectory(join(dir, "open"), 0o777);
  const tool = writeProgram(join(open, "tool"));
  const script = writeScript(join(dir, "run.sh"), tool);
  const link = join(dir, "link");
  symlinkSync("run.sh", link);
  assertEveryExecRefuses(link, {
    exitCode: 126,
    what: `refusing to execute ${link} (#! ${tool}): ${open} is writable by group or other (mode 777)`,
    fix: INTERPRETER_FIX,
  });
});

withTrustedScratch("a missing #! interpreter is not found (127), named with its script", (dir) => {
  const script = writeScript(join(dir, "run.sh"), join(dir, "no-such-tool"));
  assertEveryExecRefuses(script, { exitCode: 127, what: `${join(dir, "no-such-tool")}: no such file (the #! interpreter of ${script})`, fix: "check the command's path" });
});

withTrustedScratch(`#! chains: ${MAX_SCRIPT_DEPTH} scripts in a row run, as the kernel allows; one more is refused (ELOOP)`, (dir) => {
  let interpreter = "/bin/sh";
  const scripts: string[] = [];
  for (let i = 0; i <= MAX_SCRIPT_DEPTH; i++) {
    interpreter = writeScript(join(dir, `s${i}`), interpreter);
    scripts.push(interpreter);
  }
  const longest = scripts[MAX_SCRIPT_DEPTH - 1]!;
  assert.is(runCapture({ command: longest, args: [], trustedUids: TRUSTED }).status, 0, "the kernel runs the longest chain it allows");
  const tooLong = scripts[MAX_SCRIPT_DEPTH]!;
  const kernel = runCapture({ command: "/bin/sh", args: ["-c", 'exec "$0"', tooLong] });
  assert.match(kernel.stderr.toString(), /Too many levels of symbolic links/, "the kernel refuses one more");
  assertEveryExecRefuses(tooLong, {
    exitCode: 126,
    what: `${tooLong}: more than ${MAX_SCRIPT_DEPTH} #! scripts in a row (execve would fail with ELOOP)`,
    fix: "make a shorter chain of #! interpreters",
  });
});

withTrustedScratch(
  "a script that cannot be read is refused for root and the service: its #! interpreter cannot be checked",
  (dir) => {
    const script = writeScript(join(dir, "run.sh"), "/bin/sh", 0o711);
    // As root (DAC_OVERRIDE) it can be read; a service uid could not.
    assert.is(prepareExec({ command: script, args: [], env: {}, trustedUids: TRUSTED }).path, script);
    const asService = runCapture({
      command: "/usr/bin/setpriv",
      args: ["--reuid=65534", "--regid=65534", "--clear-groups", "--", process.execPath, "--input-type=module", "-e", `import("${join(REPO, "src/exec/replace.ts")}").then((m) => { try { m.prepareExec({ command: ${JSON.stringify(script)}, args: [], env: {}, trustedUids: [0] }); console.log("passed"); } catch (e) { console.log(e.exitCode, e.message); } })`],
    });
    assert.is(asService.stdout.toString(), `126 refusing to execute ${script}: it cannot be read to check for a #! interpreter (EACCES)\n`, asService.stderr.toString());
  },
  true,
);

/*
 * A program that changes between realpath(3) and the checks after it: the
 * lstat(2) of a place above it, or the stat(2) of the program itself, fails.
 * No file can be made to do that on demand, so the kernel lies: statx(2)
 * (x86-64 332, what Node's lstatSync and statSync call) of /usr/bin/true
 * answers an errno on its Nth call. The control is the same run with no lie.
 */
const STATX = 332;
const EIO = 5;
const ENOENT = 2;
const STAT_FIX = "check the command's path and permissions";
function gateUnderLie(calls: number, errno: number | undefined): string {
  const wrap = errno === undefined ? [] : lyingKernel([{ nr: STATX, path: "/usr/bin/true", calls: [calls], errno }]);
  const argv = [...wrap, process.execPath, "--import", join(REPO, "scripts/text-modules.mjs"), join(REPO, "test/fixtures/gate-exec.ts"), "/usr/bin/true", "0"];
  const run = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8" });
  assert.is(run.status, 0, run.stderr);
  return run.stdout;
}

trust("a place that cannot be checked after realpath (lstat EIO) is refused (126); control: with no lie it passes", () => {
  assert.is(gateUnderLie(1, undefined), "ok /usr/bin/true\n");
  assert.is(gateUnderLie(1, EIO), `126 /usr/bin/true: cannot be checked (EIO); ${FIX}\n`);
});

trust("a program gone, or failing stat, after its checks is refused: no such file (127), cannot be executed (126)", () => {
  assert.is(gateUnderLie(2, ENOENT), "127 /usr/bin/true: no such file; check the command's path\n");
  assert.is(gateUnderLie(2, EIO), `126 /usr/bin/true: cannot be executed (EIO); ${STAT_FIX}\n`);
  assert.is(gateUnderLie(3, EIO), "ok /usr/bin/true\n", "a third stat is none of the gate's: the lie lands where the test says");
});

trust.after(() => {
  if (SCRATCH_BASE?.startsWith("/run/")) rmSync(SCRATCH_BASE, { recursive: true, force: true });
});
trust.run();
