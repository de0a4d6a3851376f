/*
 * The spawn shim in the launch sandbox, run by the stand-in service
 * after a real ADR launch. Every "It cannot" of ADR 0272 is attempted from the
 * agent side and must be denied; every "It can still" must work; and each
 * attempt is shown to succeed when the service itself makes it, so a denial
 * means the boundary, not a broken attempt.
 */
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { Body, IDS, identitiesWithAgentUid, SANDBOX_NODE, SANDBOX_REPO, identitiesWithUids, inBody, ROOT_CAPS, statusFields, type LaunchOptions, unusedUid, unusedUids } from "../helpers/sandbox.ts";
import { type AgentResult, agentRun, seededBody, serviceJson as runService, type ServiceRun } from "../helpers/stand-in.ts";

const test = suite("agent-exec");
/** Reads through fd 20 itself: re-opening /proc/self/fd/20 would check the file's permissions instead. */
const READ_FD_20 = ["perl", "-e", 'open(my $f, "<&=", 20) or die "fd 20: $!\\n"; print <$f>'];
const ENV = { TERM: "xterm", LANG: "C.UTF-8", SERVICE_SECRET: "bearer-in-the-service-env" };

/** The stand-in service as the ADR launch, with the launcher's environment of these tests. */
function serviceJson<T>(body: Body, args: string[], options: Partial<LaunchOptions> = {}): ServiceRun<T> {
  return runService<T>(body, args, { env: ENV, ...options });
}

function agent(body: Body, options: object, command: string[], launch: Partial<LaunchOptions> = {}): AgentResult {
  return agentRun(body, options, command, { env: ENV, ...launch });
}

interface ModelRow {
  id: string;
  expect: string;
  row: string;
  outcome: string;
  ok: boolean;
  stderr?: string;
}

rootTest(test, "the scripted model: every 'cannot' is denied and every 'can' works", () => {
  inBody(seededBody(), (body) => {
    const { json, stderr, status } = serviceJson<{ results: ModelRow[] }>(body, ["model"]);
    process.stdout.write(`${stderr.split("\n").slice(1).join("\n")}\n`);
    assert.equal(json.results.filter((r) => !r.ok), []);
    assert.is(status, 0);
    assert.ok(json.results.length >= 30);
  });
});

rootTest(test, "controls: each attempt succeeds when the service makes it, so the denials are the boundary's", () => {
  inBody(seededBody(), (body) => {
    const { json } = serviceJson<{ results: { id: string; exitCode: number; stderr: string }[] }>(body, ["control"]);
    assert.ok(json.results.length >= 18, `only ${json.results.length} controls ran`);
    const notPossible = json.results.filter((r) => r.exitCode !== 0 && r.id !== "tiocsti");
    // Beyond ADR 0272 the service holds no capability (the spawner does): holding one, and setpriv to node or root, fail as the service too; the spawner's SETUID+SETGID is judged by test/sandbox/spawner.test.ts.
    assert.equal(notPossible.map((r) => r.id), ["capabilities", "setpriv-node", "setpriv-root"], "these attempts fail even as the service: they prove nothing");
  });
});

rootTest(test, "TIOCSTI: with a real controlling terminal, the service can inject into it and the agent cannot", () => {
  const legacy = readFileSync("/proc/sys/dev/tty/legacy_tiocsti", "utf8").trim();
  inBody(seededBody(), (body) => {
    const model = serviceJson<{ results: ModelRow[] }>(body, ["model"], { tty: true });
    const row = model.json.results.find((r) => r.id === "tiocsti")!;
    assert.is(row.outcome, "denied", JSON.stringify(row));
    if (legacy === "1") {
      const control = serviceJson<{ results: { id: string; exitCode: number }[] }>(body, ["control"], { tty: true });
      assert.is(control.json.results.find((r) => r.id === "tiocsti")!.exitCode, 0, "the service could not inject into its own terminal: the attempt proves nothing");
    } else {
      process.stderr.write("note: dev.tty.legacy_tiocsti=0 here: TIOCSTI is refused to everyone, the control cannot run\n");
    }
  });
});

rootTest(test, "what the agent gets: ids, groups, no capabilities, NoNewPrivs, own session without tty, umask, cwd, HOME, limits", () => {
  inBody(seededBody(), (body) => {
    const script = [
      "grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|SigIgn|SigBlk):' /proc/self/status",
      "echo umask=$(umask) cwd=$(pwd) pid=$$",
      "echo stat=$(cut -d' ' -f6,7 /proc/$$/stat) ppid=$(grep PPid /proc/$$/status | cut -f2)",
      "echo oom=$(cat /proc/$$/oom_score_adj) exe=$(readlink /proc/$$/exe)",
      "grep 'Max processes' /proc/$$/limits",
      "env | sort | grep -v '^PWD=' | sed 's/^/env:/'",
    ].join("; ");
    const result = agent(body, { env: { NAMED: "given by name" } }, ["/bin/sh", "-c", script]);
    assert.is(result.exitCode, 0, result.stderr);
    const st = statusFields(result.stdout);
    assert.equal(st.uids, [1001, 1001, 1001, 1001]);
    assert.equal(st.gids, [1001, 1001, 1001, 1001]);
    assert.equal(st.groups, [1001, 1002]);
    for (const set of [st.capInh, st.capPrm, st.capEff, st.capAmb]) assert.is(set, "0000000000000000");
    assert.is(st.noNewPrivs, "1");
    // The shim is Node, which ignores SIGPIPE and SIGXFSZ; the command starts with neither ignored nor blocked.
    assert.is(st.sigIgn, "0000000000000000");
    assert.is(st.sigBlk, "0000000000000000");
    // dash clears its signal mask at start; grep, exec'd by the stage itself, shows what the chain left.
    const bare = agent(body, {}, ["/bin/grep", "-E", "^Sig(Ign|Blk):", "/proc/self/status"]);
    assert.is(bare.stdout, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000", bare.stderr);
    assert.match(result.stdout, new RegExp(`umask=0002 cwd=/workspace pid=${result.pid}\\n`));
    assert.match(result.stdout, new RegExp(`stat=${result.pid} 0 `), "a session of its own, no controlling terminal");
    assert.match(result.stdout, /oom=500 exe=\/usr\/bin\/dash/, "no Node stays resident: the spawned pid is the command itself");
    assert.match(result.stdout, /Max processes\s+512\s+512\s+processes/);
    const env = result.stdout.split("\n").filter((l) => l.startsWith("env:")).map((l) => l.slice(4));
    assert.equal(env, [
      // stage.pl's trust_git: the agent's git trusts the service's repositories.
      "GIT_CONFIG_COUNT=1",
      "GIT_CONFIG_KEY_0=safe.directory",
      "GIT_CONFIG_VALUE_0=*",
      "HOME=/state/agent",
      "LANG=C.UTF-8",
      "LOGNAME=clankie-agent",
      "NAMED=given by name",
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      "TERM=xterm",
      "USER=clankie-agent",
    ]);
  });
});

rootTest(test, "the service sees the real pid, the exit status and the signal of the command", () => {
  inBody(seededBody(), (body) => {
    const exited = agent(body, {}, ["/bin/sh", "-c", "exit 42"]);
    assert.is(exited.exitCode, 42);
    const killed = agent(body, {}, ["/bin/sh", "-c", "kill -TERM $$"]);
    assert.is(killed.signal, "SIGTERM");
    const pid = agent(body, {}, ["/bin/sh", "-c", "echo $$"]);
    assert.is(pid.stdout.trim(), String(pid.pid));
  });
});

/*
 * Renaming an entry needs write permission on its directory only: every
 * /workspace directory is group-writable, so the agent moves the service's
 * entries aside whatever their owner and mode (documented, docs/security.md,
 * "/state: what holds"). The remedy the docs give: a sticky directory,
 * which the first start's walk keeps.
 */
rootTest(test, "/workspace: the agent moves aside the service's .git in a 2770 directory; in a sticky one (kept by the walk, 3770) it cannot, and still manages its own entries", () => {
  inBody(seededBody(), (body) => {
    for (const [dir, mode] of [["plain", 0o770], ["sticky", 0o1770]] as const) {
      mkdirSync(join(body.workspace, dir, ".git"), { recursive: true });
      chownSync(join(body.workspace, dir), 1000, 1000);
      chownSync(join(body.workspace, dir, ".git"), 1000, 1000);
      chmodSync(join(body.workspace, dir), mode);
    }
    const script = [
      'stat -c "%n %a %U" /workspace/plain /workspace/sticky /workspace/sticky/.git',
      "mv /workspace/plain/.git /workspace/plain/.git-aside && echo plain moved",
      "mv /workspace/sticky/.git /workspace/sticky/.git-aside 2>/dev/null || echo sticky refused",
      "touch /workspace/sticky/mine && mv /workspace/sticky/mine /workspace/sticky/mine2 && rm /workspace/sticky/mine2 && echo own entries ok",
    ].join("\n");
    const run = agent(body, {}, ["/bin/sh", "-c", script]);
    assert.is(run.stdout, ["/workspace/plain 2770 node", "/workspace/sticky 3770 node", "/workspace/sticky/.git 2775 node", "plain moved", "sticky refused", "own entries ok"].join("\n"), run.stderr);
  });
});

rootTest(test, "--oom-score-adj and --nproc are adjustable", () => {
  // The stage refuses a uid already over --nproc 64, counted across the host: the agent gets a uid nobody else runs here.
  inBody(seededBody(identitiesWithAgentUid(unusedUid())), (body) => {
    const result = agent(body, { oomScoreAdj: 900, nproc: 64 }, ["/bin/sh", "-c", "cat /proc/$$/oom_score_adj; grep 'Max processes' /proc/$$/limits"]);
    assert.match(result.stdout, /^900\nMax processes\s+64\s+64\s+processes/);
  });
});

rootTest(test, "fds: one named with --keep-fd reaches the agent, the same fd unnamed does not", () => {
  inBody(seededBody(), (body) => {
    const kept = agent(body, { passFile: "/state/settings.json", keepFds: [20] }, READ_FD_20);
    assert.is(kept.exitCode, 0, kept.stderr);
    assert.is(kept.stdout, '{"theme":"dark"}'); // execa strips the final newline
    const dropped = agent(body, { passFile: "/state/settings.json" }, READ_FD_20);
    assert.is.not(dropped.exitCode, 0);
    assert.is(dropped.stdout, "");
  });
});

rootTest(test, "--signal stops an agent process group the service cannot signal itself", () => {
  inBody(seededBody(), (body) => {
    const { json } = serviceJson<{ during: { pid: number; name: string }[]; direct: string; shimExit: number; signal: string; after: unknown[] }>(body, ["stop"]);
    assert.ok(json.during.length >= 2, `agent processes while running: ${JSON.stringify(json.during)}`);
    assert.is(json.direct, "EPERM");
    assert.is(json.shimExit, 0);
    assert.is(json.signal, "SIGTERM");
    assert.equal(json.after, [], "the whole process group is gone");
  });
});

rootTest(test, "a fork bomb under --nproc leaves the service able to start processes; agent work over the limit is refused by the stage (75, one line)", () => {
  // RLIMIT_NPROC counts every process of the uid on the host: the agent gets a uid nobody else runs here.
  inBody(seededBody(identitiesWithAgentUid(unusedUid())), (body) => {
    const { json } = serviceJson<{ agentCount: number; serviceExit: number; bombStderr: string; moreExit: number; moreStderr: string }>(body, ["forkbomb"]);
    assert.ok(json.agentCount <= 40 && json.agentCount >= 30, `agent processes: ${json.agentCount}`);
    assert.is(json.serviceExit, 0);
    assert.match(json.bombStderr, /fork/i);
    // The stage's fork probe under the limit + 2 fails (EAGAIN): the uid already runs more than --nproc tasks.
    assert.is(json.moreExit, 75);
    assert.match(json.moreStderr, /^clankie-agent-exec: the agent uid already runs more than \d+ tasks \(--nproc \d+\); try again when agent work has ended, or spawn with a higher --nproc$/);
  });
});

const refusals: [string, Partial<LaunchOptions>, string][] = [
  ["root", { as: "root", direct: true, command: ["/usr/local/sbin/clankie-agent-exec", "--", "/bin/true"] }, "clankie-agent-exec: started by root: only the spawner, as node, runs clankie-agent-exec; start agent work from the service (spawnAgent)"],
  ["a single-uid body", { as: "node", direct: true, command: ["/usr/local/sbin/clankie-agent-exec", "--", "/bin/true"] }, "clankie-agent-exec: the caller holds no SETGID, SETUID: only the spawner runs clankie-agent-exec, and only a body started as root with the flags of ADR 0272 has one; start agent work from the service (spawnAgent), in a body started as root with the flags of ADR 0272 (docs/launch.md), which configures the agent uid clankie-agent"],
];
for (const [who, launch, message] of refusals) {
  rootTest(test, `refused when called by ${who} (exit 77, one line)`, () => {
    const body = seededBody();
    try {
      const run = body.run(launch as LaunchOptions);
      assert.is(run.status, 77);
      assert.is(run.stderr, `${message}\n`);
    } finally {
      body.cleanup();
    }
  });
}

/*
 * The shim started directly as the service (no entrypoint, which checks perl
 * itself before the drop): root in the sandbox becomes node with SETUID and
 * SETGID ambient, as clankie-separate's drop leaves it, then runs the shim.
 */
const AS_SERVICE = ["/usr/bin/setpriv", `--reuid=${IDS.service}`, `--regid=${IDS.service}`, "--init-groups", "--inh-caps=-all,+setuid,+setgid", "--ambient-caps=-all,+setuid,+setgid", "--"];
const AS_CAPLESS_SERVICE = ["/usr/bin/setpriv", `--reuid=${IDS.service}`, `--regid=${IDS.service}`, "--init-groups", "--inh-caps=-all", "--ambient-caps=-all", "--"];
const SHIM_ECHO = ["/usr/local/sbin/clankie-agent-exec", "--", "/bin/echo", "ran"];

rootTest(test, "a shim that leads a session with a controlling terminal is refused (77, one line) before the drop; without the terminal it runs", () => {
  inBody(seededBody(), (body) => {
    // setsid --ctty takes the launch's pty (script(1)) as the controlling terminal of a new session, which needs CAP_SYS_ADMIN.
    const launch = { as: "root", direct: true, tty: true, caps: [...ROOT_CAPS, "sys_admin"] } as const;
    const run = body.run({ ...launch, command: ["/usr/bin/setsid", "--ctty", "--wait", ...AS_SERVICE, ...SHIM_ECHO] });
    assert.is(run.stdout.replace(/\r/g, ""), "clankie-agent-exec: the shim leads a session that has a controlling terminal; spawn it in a new session without a terminal (spawnAgent does)\n");
    assert.is(run.status, 77);
    // The control: the same session without the terminal (setsid alone) runs the command.
    const control = body.run({ ...launch, command: ["/usr/bin/setsid", "--wait", ...AS_SERVICE, ...SHIM_ECHO] });
    assert.is(control.stdout.replace(/\r/g, ""), "ran\n");
    assert.is(control.status, 0);
  });
});

rootTest(test, "a shim that leads its process group but not a session is refused (77, one line) before the drop", () => {
  inBody(seededBody(), (body) => {
    // perl makes itself the leader of a new process group, in its parent's session, and execs the shim.
    const leader = ["/usr/bin/perl", "-e", "setpgrp(0, 0); exec { $ARGV[0] } @ARGV or die"];
    const run = body.run({ as: "root", direct: true, command: [...AS_SERVICE, ...leader, ...SHIM_ECHO] });
    assert.is(run.stderr, "clankie-agent-exec: the shim leads a process group but not a session, and setsid(2) refuses a process-group leader; spawn it detached (a new session, as spawnAgent does) or inside its parent's process group\n");
    assert.is(run.status, 77);
    // The control: in its parent's process group the shim runs the command (the stage calls setsid).
    const control = body.run({ as: "root", direct: true, command: [...AS_SERVICE, ...SHIM_ECHO] });
    assert.is(control.stdout, "ran\n", control.stderr);
  });
});

rootTest(test, "a perl that others could write is refused by the shim's own exec rules (126, one line) although the launch trusted it", () => {
  inBody(seededBody(), (body) => {
    // A copy of perl, root's, bound over /usr/bin/perl: 0757 after the launch's own check, 0755 for the control.
    const perl = join(body.dir, "perl");
    writeFileSync(perl, readFileSync("/usr/bin/perl"));
    const run = (mode: number) => {
      chmodSync(perl, mode);
      return body.run({ as: "root", direct: true, command: [...AS_SERVICE, ...SHIM_ECHO], binds: [[perl, "/usr/bin/perl", "ro"]] });
    };
    const writable = run(0o757);
    assert.is(writable.stderr, "clankie-agent-exec: refusing to execute /usr/bin/perl: /usr/bin/perl is writable by group or other (mode 757); install programs that root or the service run in a root-owned directory that only root can write (for example /usr/local/bin)\n");
    assert.is(writable.status, 126);
    assert.is(writable.stdout, "");
    const control = run(0o755);
    assert.is(control.stderr, "");
    assert.is(control.stdout, "ran\n");
  });
});

rootTest(test, "spawnAgent refuses a perl that others could write (126, one line) before the holder starts; control: closed, it reaches the channel", () => {
  inBody(seededBody(), (body) => {
    // The holder is the service's perl: a copy of root's bound over /usr/bin/perl, 0757, then 0755 for the control. No spawner here (no launch): past the gate, the channel answers 77.
    const perl = join(body.dir, "perl");
    writeFileSync(perl, readFileSync("/usr/bin/perl"));
    const script = `import("${SANDBOX_REPO}/dist/lib/system-exec.js").then(async ({ spawnAgent }) => { try { const r = await spawnAgent("/bin/true", [], { reject: false }); console.log("ended", r.exitCode); } catch (e) { console.log("threw", e.exitCode, e.message); } })`;
    const run = (mode: number) => {
      chmodSync(perl, mode);
      return body.run({ as: "root", direct: true, command: [...AS_CAPLESS_SERVICE, SANDBOX_NODE, "-e", script], binds: [[perl, "/usr/bin/perl", "ro"]] });
    };
    const writable = run(0o757);
    assert.is(writable.stdout, "threw 126 refusing to execute /usr/bin/perl: /usr/bin/perl is writable by group or other (mode 757)\n", writable.stderr);
    const control = run(0o755);
    assert.is(control.stdout, "ended 77\n", control.stderr);
  });
});

rootTest(test, "refused when the agent calls it, and when the agent cannot enter --cwd", () => {
  inBody(seededBody(), (body) => {
    const nested = agent(body, {}, ["/usr/local/sbin/clankie-agent-exec", "--", "/bin/true"]);
    assert.is(nested.exitCode, 77);
    assert.is(nested.stderr, "clankie-agent-exec: started by the agent uid 1001: agent work cannot start agent work through clankie-agent-exec; run the program directly");
    const cwd = agent(body, { cwd: "/state/.clankie-separate" }, ["/bin/true"]);
    assert.is(cwd.exitCode, 77);
    assert.is(cwd.stderr, "clankie-agent-exec: the agent cannot enter /state/.clankie-separate (EACCES); pass a --cwd under /workspace that group clankie-workspace can search");
  });
});

rootTest(test, "the agent's variables reach the spawner's chain carried: a NODE_V8_COVERAGE for the agent makes nothing of the spawner's write coverage; the control: named for a Node the service starts, it writes its coverage there as node", () => {
  inBody(seededBody(), (body) => {
    const run = agent(body, { env: { NODE_V8_COVERAGE: "/workspace/cov-carried" } }, ["/bin/sh", "-c", 'printf %s "$NODE_V8_COVERAGE"']);
    assert.is(run.exitCode, 0, run.stderr);
    assert.is(run.stdout, "/workspace/cov-carried", "the agent's command gets it");
    assert.not.ok(existsSync(join(body.workspace, "cov-carried")), "nothing of the spawner's wrote coverage");
    const control = body.run({ command: ["--", "/bin/sh", "-c", `NODE_V8_COVERAGE=/workspace/cov-named ${SANDBOX_NODE} -e 0`], env: ENV });
    assert.is(control.status, 0, control.stderr);
    const written = existsSync(join(body.workspace, "cov-named")) ? readdirSync(join(body.workspace, "cov-named")) : [];
    assert.ok(written.some((name) => /^coverage-.*\.json$/.test(name)), `the control wrote ${written.join(",") || "nothing"}`);
  });
});

/*
 * A planted catalog reached a setpriv holding SETUID and SETGID when the
 * service started the per-spawn shim with its own environment, under a soft
 * RLIMIT_NPROC it set itself (so that setpriv printed a message). Beyond ADR
 * 0272 no privileged process inherits the service's environment: the
 * spawner's is the root phase's, which the service cannot read
 * (/proc/PID/environ asks for the target's capabilities within the
 * caller's, ptrace(2)'s access mode rule). It can still set the spawner's
 * resource limits: prlimit(2) compares uids only (docs/security.md, what a
 * compromised service can still do).
 */
rootTest(test, "the service cannot read the spawner's environment (the planted-catalog attack on setpriv needed the service's to reach it); it can set the spawner's limits, as prlimit(2) checks uids only; the controls: its own environment and limits", () => {
  inBody(seededBody(), (body) => {
    const script = [
      // The root phase starts the spawner beside the service: it may not have reached its own command line yet.
      "s=; n=0; while [ -z \"$s\" ] && [ $n -lt 100 ]; do for p in /proc/[0-9]*; do if [ \"$(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\" = 'clankie-agent-exec --spawner ' ]; then s=${p#/proc/}; fi; done; n=$((n + 1)); [ -n \"$s\" ] || sleep 0.05; done",
      'echo "spawner=$s"',
      'cat /proc/"$s"/environ >/dev/null 2>&1; echo "spawner-environ=$?"',
      'cat /proc/$$/environ >/dev/null 2>&1; echo "own-environ=$?"',
      'prlimit --core=0: --pid "$s" 2>&1; echo "spawner-prlimit=$?"',
      'prlimit --core=0: --pid $$ 2>&1; echo "own-prlimit=$?"',
    ].join("\n");
    const run = body.run({ command: ["--", "/bin/sh", "-c", script], env: ENV });
    assert.match(run.stdout, /^spawner=\d+$/m, `${run.stdout}${run.stderr}`);
    assert.match(run.stdout, /^spawner-environ=1$/m, run.stdout);
    assert.match(run.stdout, /^own-environ=0$/m, run.stdout);
    assert.match(run.stdout, /^spawner-prlimit=0$/m, run.stdout);
    assert.match(run.stdout, /^own-prlimit=0$/m, run.stdout);
  });
});

test.run();
