/*
 * Black-box tests of the built single executable: it is run as a program and
 * its stdout, stderr and exit code are compared exactly. No privileges needed.
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, closeSync, constants, copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AGENT_EXEC, ENTRYPOINT, NODE24, REPO } from "../helpers/paths.ts";

const test = suite("binary");
const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string };

function run(file: string, args: string[], env: Record<string, string> = { PATH: "/usr/bin:/bin" }) {
  return spawnSync(file, args, { encoding: "utf8", env });
}

test("--version names the program version, Node 24.20.0 and the embedded bundle's sha256", () => {
  const bundle = createHash("sha256").update(readFileSync(join(REPO, ".build/bundle.cjs"))).digest("hex");
  for (const [file, name] of [[ENTRYPOINT, "clankie-separate"], [AGENT_EXEC, "clankie-agent-exec"]] as const) {
    const result = run(file, ["--version"]);
    assert.is(result.status, 0);
    assert.is(result.stderr, "");
    assert.is(result.stdout, `${name} ${pkg.version}\nnode v24.20.0\nbundle sha256 ${bundle}\n`);
  }
});

test("the two names are one file (a hard link)", () => {
  const a = spawnSync("stat", ["-c", "%i %h", ENTRYPOINT], { encoding: "utf8" }).stdout;
  const b = spawnSync("stat", ["-c", "%i %h", AGENT_EXEC], { encoding: "utf8" }).stdout;
  assert.is(a, b);
  assert.match(a, / 2\n$/);
});

test("--help lists both roles, their options and every exit code", () => {
  const result = run(ENTRYPOINT, ["--help"]);
  assert.is(result.status, 0);
  for (const text of ["clankie-separate [--] SERVICE-COMMAND", "--self-check [--json] [--probe]", "clankie-agent-exec [--cwd DIR]", "--signal SIGNAL --pgid PGID", "--keep-fd N", "--nproc N", "--oom-score-adj N"]) {
    assert.ok(result.stdout.includes(text), `missing ${text}`);
  }
  for (const code of [0, 1, 64, 65, 67, 70, 71, 77, 126, 127]) assert.match(result.stdout, new RegExp(`^ +${code}  `, "m"));
});

const usage: [string, string, string[], string][] = [
  ["no service command", ENTRYPOINT, [], 'clankie-separate: no service command given; name the service command: clankie-separate -- COMMAND [ARG...] (see clankie-separate --help)'],
  ["an unknown option", ENTRYPOINT, ["--frobnicate"], 'clankie-separate: unknown option "--frobnicate"; put the service command after --: clankie-separate -- COMMAND [ARG...] (see clankie-separate --help)'],
  ["an empty command after --", ENTRYPOINT, ["--"], "clankie-separate: no command given; put the command after --: clankie-separate -- COMMAND [ARG...] (see clankie-separate --help)"],
  ["a missing -- for the shim", AGENT_EXEC, ["ls"], 'clankie-agent-exec: missing -- before the command "ls"; put the command after --: clankie-agent-exec [OPTIONS] -- COMMAND [ARG...] (see clankie-agent-exec --help)'],
  ["an unknown shim option", AGENT_EXEC, ["--user", "root", "--", "ls"], 'clankie-agent-exec: unknown option "--user"; put the command after --: clankie-agent-exec [OPTIONS] -- COMMAND [ARG...] (see clankie-agent-exec --help)'],
  ["an empty shim command", AGENT_EXEC, ["--cwd", "/workspace", "--"], "clankie-agent-exec: no command given; put the command after --: clankie-agent-exec -- COMMAND [ARG...] (see clankie-agent-exec --help)"],
  ["a value in --env", AGENT_EXEC, ["--env", "TOKEN=abc", "--", "ls"], 'clankie-agent-exec: --env needs a variable name, got "TOKEN=abc"; give the NAME only: its value is taken from the shim\'s environment, never from argv (see clankie-agent-exec --help)'],
  ["--keep-fd 2", AGENT_EXEC, ["--keep-fd", "2", "--", "ls"], 'clankie-agent-exec: --keep-fd needs a whole number from 3 to 1048575, got "2"; give --keep-fd a number in range (see clankie-agent-exec --help)'],
];
for (const [name, file, args, line] of usage) {
  test(`usage: ${name} is one line on stderr, exit 64, nothing executed`, () => {
    const result = run(file, args);
    assert.is(result.status, 64);
    assert.is(result.stdout, "");
    assert.is(result.stderr, `${line}\n`);
  });
}

test("it runs nothing but its embedded code: NODE_OPTIONS --require and --import are ignored", () => {
  const dir = mkdtempSync(join(tmpdir(), "clankie-node-options-"));
  try {
    const marker = join(dir, "ran");
    const hook = join(dir, "hook.cjs");
    writeFileSync(hook, `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "x");`);
    const env = { PATH: "/usr/bin:/bin", NODE_OPTIONS: `--require ${hook} --import ${hook}` };
    // Control: the same variable makes plain Node 24 run the file.
    assert.is(spawnSync(NODE24, ["-e", "0"], { env }).status, 0);
    assert.ok(existsSync(marker), "control failed: NODE_OPTIONS did not run the hook under plain node");
    rmSync(marker);
    const result = run(ENTRYPOINT, ["--version"], env);
    assert.is(result.status, 0, result.stderr);
    assert.not.ok(existsSync(marker), "the single executable ran code from NODE_OPTIONS");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/*
 * A real OpenSSL provider module: its constructor runs when OpenSSL dlopen()s
 * it and writes a marker; it then fails the provider's initialisation, which
 * Node turns into an abort. Node reads OPENSSL_CONF (section nodejs_conf) and
 * loads the providers it names before any JavaScript runs.
 */
const PROVIDER_SOURCE = `
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
  const char *path = getenv("PROVIDER_MARKER");
  if (path) { int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600); if (fd >= 0) { (void)write(fd, "loaded\\n", 7); close(fd); } }
}
int OSSL_provider_init(const void *handle, const void *in, const void **out, void **ctx) { return 0; }
`;

const haveCc = spawnSync("cc", ["--version"]).status === 0;
if (!haveCc) process.stderr.write("SKIPPED: no C compiler (cc) to build the OpenSSL provider module\n");
(haveCc ? test : test.skip)("OPENSSL_CONF loads no provider into it: --openssl-config=/dev/null is in the SEA's execArgv (plain Node as the control)", () => {
  const dir = mkdtempSync(join(tmpdir(), "clankie-openssl-"));
  try {
    writeFileSync(join(dir, "provider.c"), PROVIDER_SOURCE);
    const cc = spawnSync("cc", ["-shared", "-fPIC", "-o", join(dir, "provider.so"), join(dir, "provider.c")], { encoding: "utf8" });
    assert.is(cc.status, 0, cc.stderr);
    const conf = join(dir, "openssl.cnf");
    writeFileSync(conf, `nodejs_conf = init\nopenssl_conf = init\n[init]\nproviders = providers\n[providers]\nplanted = planted\n[planted]\nmodule = ${join(dir, "provider.so")}\nactivate = 1\n`);
    const marker = join(dir, "loaded");
    const env = { PATH: "/usr/bin:/bin", OPENSSL_CONF: conf, PROVIDER_MARKER: marker };
    // Control: plain Node 24 loads the module (and aborts on its failed init).
    spawnSync(NODE24, ["-e", "0"], { env });
    assert.ok(existsSync(marker), "control failed: plain node did not load the provider named by OPENSSL_CONF");
    rmSync(marker);
    for (const file of [ENTRYPOINT, AGENT_EXEC]) {
      const result = run(file, ["--version"], env);
      assert.is(result.status, 0, result.stderr);
      assert.is(result.stderr, "");
      assert.not.ok(existsSync(marker), `${file} loaded the provider named by OPENSSL_CONF`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/*
 * Sends SIGUSR1 to a program while it is blocked writing to a full pipe (its
 * stdout: a FIFO this test fills to its 64 KiB, pipe(7)), then lets it
 * finish, and returns how it ended and what it printed on stderr. Node's
 * answer to SIGUSR1 is to start its inspector ("Debugger listening on
 * ws://...") as soon as its main thread runs again: anyone who may signal the
 * process could then run code in it.
 */
async function sigusr1WhileBlocked(file: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), "clankie-sigusr1-"));
  const fifo = join(dir, "full");
  assert.is(spawnSync("mkfifo", [fifo]).status, 0);
  const fd = openSync(fifo, "r+"); // read and write: the open does not wait for a reader
  const drain = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    writeSync(fd, Buffer.alloc(65536));
    const child = spawn(file, args, { stdio: ["ignore", fd, "pipe"], env: { PATH: "/usr/bin:/bin" } });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const ended = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    const wchan = () => {
      try {
        return readFileSync(`/proc/${child.pid}/wchan`, "utf8");
      } catch {
        return "";
      }
    };
    for (let i = 0; i < 400 && !wchan().includes("pipe_write"); i++) await sleep(25);
    assert.match(wchan(), /pipe_write/, `${file} did not block writing to the full pipe`);
    child.kill("SIGUSR1");
    await sleep(300);
    const buffer = Buffer.alloc(1 << 16);
    for (let i = 0; i < 250 && child.exitCode === null && child.signalCode === null; i++) {
      try {
        while (readSync(drain, buffer) > 0);
      } catch {
        // EAGAIN: empty for now
      }
      await sleep(20);
    }
    child.kill("SIGKILL");
    return { code: await ended, stderr };
  } finally {
    closeSync(drain);
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

test("SIGUSR1 does not start Node's inspector: --disable-sigusr1 is in the SEA's execArgv (plain Node as the control)", async () => {
  const control = await sigusr1WhileBlocked(NODE24, ["-e", 'require("fs").writeSync(1, "x".repeat(100000))']);
  assert.match(control.stderr, /Debugger listening on ws:\/\//, "control failed: plain node started no inspector on SIGUSR1");
  for (const file of [ENTRYPOINT, AGENT_EXEC]) {
    const result = await sigusr1WhileBlocked(file, ["--help"]);
    assert.is(result.stderr, "");
    assert.is(result.code, 0);
  }
});

test("the role follows the name it is started as (argv[0]), even through a symlink", () => {
  const dir = mkdtempSync(join(tmpdir(), "clankie-name-"));
  try {
    symlinkSync(ENTRYPOINT, join(dir, "clankie-agent-exec"));
    const result = run(join(dir, "clankie-agent-exec"), ["ls"]);
    assert.is(result.status, 64);
    assert.match(result.stderr, /^clankie-agent-exec: missing -- before the command/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/*
 * The entrypoint's bundle, the audit's and the private-job shim's are the SEA
 * assets clankie-separate.cjs, clankie-self-check.cjs and
 * clankie-private-job.cjs, and the main script pins
 * the SHA-256 of each (build.mjs). --self-check's image.bundle compares them:
 * an asset changed after the build fails it, though the executable runs the
 * changed code (no start hashes it); the control is the same change with the
 * pin updated to match, which passes.
 */
function buildWithAsset(dir: string, name: string, asset: string, text: string, mainScript: string): string {
  const out = join(dir, name);
  mkdirSync(out);
  writeFileSync(join(out, asset), text);
  writeFileSync(join(out, "bundle.cjs"), mainScript);
  // The build's record of the main script's hash, as build.mjs writes it.
  writeFileSync(join(out, "bundle.sha256"), `${createHash("sha256").update(mainScript).digest("hex")}\n`);
  const config = JSON.parse(readFileSync(join(REPO, "sea-config.json"), "utf8")) as { assets: Record<string, string> };
  const own = new Set([asset, "bundle.sha256"]);
  const assets = Object.fromEntries(Object.entries(config.assets).map(([key, path]) => [key, own.has(key) ? join(out, key) : join(REPO, path)]));
  writeFileSync(join(out, "sea-config.json"), JSON.stringify({ ...config, main: join(out, "bundle.cjs"), output: join(out, "blob"), assets }));
  const blob = spawnSync(NODE24, ["--experimental-sea-config", join(out, "sea-config.json")], { encoding: "utf8" });
  assert.is(blob.status, 0, blob.stderr);
  const exe = join(out, "clankie-separate");
  copyFileSync(join(REPO, ".build/node"), exe);
  chmodSync(exe, 0o755);
  const inject = spawnSync(process.execPath, [join(REPO, "node_modules/postject/dist/cli.js"), exe, "NODE_SEA_BLOB", join(out, "blob"), "--sentinel-fuse", "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2"], { encoding: "utf8" });
  assert.is(inject.status, 0, inject.stderr);
  return exe;
}

/** Each asset, a text in it to change, and a start that shows the changed text runs. */
const ASSETS = [
  { asset: "clankie-separate.cjs", what: "the entrypoint's code", pin: "ENTRYPOINT_SHA256", from: "no service command given", to: "no service command CHANGED", shows: [] as string[], stream: "stderr" as const, name: "clankie-separate" },
  { asset: "clankie-self-check.cjs", what: "the audit's code", pin: "SELF_CHECK_SHA256", from: "run model-directed work as a second uid", to: "run model-directed work as a CHANGED uid", shows: ["--help"], stream: "stdout" as const, name: "clankie-separate" },
  // Started as the shim with --private-cleanup, which only the private-job bundle runs: the changed refusal shows that it ran.
  { asset: "clankie-private-job.cjs", what: "the private-job shim's code", pin: "PRIVATE_JOB_SHA256", from: "--private-cleanup takes no other option", to: "--private-cleanup takes no CHANGED option", shows: ["--private-cleanup", "2", "extra"], stream: "stderr" as const, name: "clankie-agent-exec" },
];
for (const { asset, what, pin, from, to, shows, stream, name } of ASSETS) {
  test(`${asset} changed after the build fails --self-check's image.bundle (control: the same change with its pin passes)`, () => {
    const dir = mkdtempSync(join(tmpdir(), "clankie-asset-"));
    try {
      const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
      const original = readFileSync(join(REPO, ".build", asset), "utf8");
      const mainScript = readFileSync(join(REPO, ".build/bundle.cjs"), "utf8");
      assert.ok(mainScript.includes(`const ${pin} = "${sha256(original)}";`), `the main script does not pin ${asset}'s SHA-256`);
      const changed = original.replace(from, to);
      assert.is.not(changed, original);
      const bundleCheck = (exe: string) => {
        const audit = run(exe, ["--self-check", "--json"]);
        return (JSON.parse(audit.stdout) as { checks: Array<{ id: string; status: string; summary: string }> }).checks.find((c) => c.id === "image.bundle")!;
      };
      const start = (exe: string) => spawnSync(exe, shows, { encoding: "utf8", env: { PATH: "/usr/bin:/bin" }, argv0: name });
      const control = buildWithAsset(dir, "control", asset, changed, mainScript.replace(sha256(original), sha256(changed)));
      assert.ok(start(control)[stream].includes(to.split(" ").at(-2)!), `the changed ${asset} does not run`);
      assert.is(bundleCheck(control).status, "pass", "control failed: the change with a matching pin does not pass");
      const tampered = buildWithAsset(dir, "changed", asset, changed, mainScript);
      assert.ok(start(tampered)[stream].includes(to.split(" ").at(-2)!), `the changed ${asset} does not run`);
      const check = bundleCheck(tampered);
      assert.is(check.status, "fail");
      assert.is(check.summary, `${what} (SEA asset ${asset}) has sha256 ${sha256(changed)}, but the embedded bundle pins ${sha256(original)}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/*
 * The main script picks a bundle by name and first argument: a service
 * command is the entrypoint's bundle, which holds no help text and no audit;
 * --help, --version and --self-check are the audit's; a name that is neither
 * role's is refused, whatever follows.
 */
test("the entrypoint's bundle holds the root start alone: no help text, audit or agent confinement tables", () => {
  const entrypoint = readFileSync(join(REPO, ".build/clankie-separate.cjs"), "utf8");
  for (const text of ["run model-directed work as a second uid", "image.bundle", "no system call numbers for", "no seccomp filter was built for", "--probe-agent"]) assert.not.ok(entrypoint.includes(text), `the entrypoint's bundle holds ${text}`);
  assert.ok(entrypoint.includes("no service command given"));
  const audit = readFileSync(join(REPO, ".build/clankie-self-check.cjs"), "utf8");
  assert.ok(audit.includes("run model-directed work as a second uid") && audit.includes("image.bundle"));
});

test("the shim's own bundle, which every ordinary spawn runs, holds no help text and no private job's code; the private-job bundle does hold it", () => {
  const shim = readFileSync(join(REPO, ".build/clankie-agent-exec.cjs"), "utf8");
  for (const text of ["run model-directed work as a second uid", "private-job groups are leased", "the cleanup stage of"]) assert.not.ok(shim.includes(text), `the shim's bundle holds ${text}`);
  const privateJob = readFileSync(join(REPO, ".build/clankie-private-job.cjs"), "utf8");
  assert.ok(privateJob.includes("private-job groups are leased") && privateJob.includes("the cleanup stage of"));
  // --help and --version of the shim's name run the audit's bundle, alike.
  const help = spawnSync(AGENT_EXEC, ["--help"], { encoding: "utf8", env: { PATH: "/usr/bin:/bin" } });
  assert.is(help.status, 0);
  assert.match(help.stdout, /run model-directed work as a second uid/);
});

test("-- --help is a service command named --help, not the help text; an unknown name is refused before any argument", () => {
  // A hard link: the name in argv[0] and the file it runs from (a symlink resolves to the executable's own name).
  const dir = mkdtempSync(join(REPO, ".build", "name-"));
  try {
    const help = run(ENTRYPOINT, ["--", "--help"]);
    // Not root: today's launch, which execs the command as given (not found in PATH).
    assert.is(help.stdout, "");
    assert.not.match(help.stderr, /second uid/);
    assert.is.not(help.status, 0);
    linkSync(ENTRYPOINT, join(dir, "other-name"));
    for (const args of [["--help"], ["--self-check"], ["--", "/bin/true"]]) {
      const result = spawnSync(join(dir, "other-name"), args, { encoding: "utf8", env: { PATH: "/usr/bin:/bin" }, argv0: "other-name" });
      assert.is(result.status, 64, args.join(" "));
      assert.is(result.stderr, 'clankie-separate: started under an unknown name "other-name"; start it as clankie-separate or clankie-agent-exec\n');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
