/*
 * Issue 34's breaks 1, 2 and 7, replayed as the agent in the launch sandbox
 * (test/fixtures/private-guard.mjs, run as the service), each beside its
 * control: a private job renames and links across directories; its guard
 * is the last agent process the OOM killer would pick, and a release whose
 * guard was killed before the job ended fails and keeps the lease; no job
 * leaves a zombie under the service with clone(CLONE_PARENT).
 */
import { withControlRunner } from "../helpers/control-runner.ts";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { type Body, DEFAULT_GROUP, inBody, type LaunchOptions, SANDBOX_FIXTURES, SANDBOX_NODE } from "../helpers/sandbox.ts";
import { seededBody } from "../helpers/stand-in.ts";
import { WITHOUT_SECCOMP } from "../helpers/seccomp-wrap.ts";
import { REPO } from "../helpers/paths.ts";

const test = suite("private guard");
const FIXTURE = [SANDBOX_NODE, `${SANDBOX_FIXTURES}/private-guard.mjs`];
const ONE_GROUP = DEFAULT_GROUP.split("\n").filter((l) => !/^clankie-private-(?!0:)/.test(l)).join("\n");

function fixture<T>(body: Body, mode: string, launch: Partial<LaunchOptions> = {}): { json: T; log: string } {
  const run = body.run({ as: "root", direct: true, command: withControlRunner([...FIXTURE, mode]), timeoutMs: 120_000, ...launch });
  const line = run.stdout.split("\n").find((l) => l.startsWith("{"));
  if (!line) throw new Error(`no JSON from the fixture (exit ${run.status}): ${run.stdout}\n${run.stderr}`);
  return { json: JSON.parse(line) as T, log: `${line}\n${run.stderr}` };
}

/** clone-parent.c built for the sandbox's /opt/guard (cc, from scripts/setup-debian.sh's gcc). */
function withCloneParent<T>(run: (launch: Partial<LaunchOptions>) => T): T {
  const dir = mkdtempSync(join(tmpdir(), "clankie-guard-"));
  try {
    const cc = spawnSync("cc", ["-O2", "-o", join(dir, "clone-parent"), join(REPO, "test/fixtures/clone-parent.c")], { encoding: "utf8" });
    assert.is(cc.status, 0, cc.stderr);
    chmodSync(dir, 0o755);
    return run({ binds: [[dir, "/opt/guard", "ro"]] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type Outcome = { exitCode: number | null; signal: string | null; stdout: string; stderr: string; release?: { exitCode: number; stderr: string } };
const lines = (stdout: string) => Object.fromEntries(stdout.split("\n").filter((l) => /^\S+ \S+$/.test(l)).map((l) => l.split(" ")));
const MOVES = ["home-rename", "home-link", "tmp-rename", "tmp-link", "workspace-rename", "workspace-link", "home-to-tmp", "tmp-to-home"];

rootTest(test, "a private job renames and hard-links between two directories of its HOME, its TMPDIR and /workspace, and across them; under a layer that handles only scoping (the control) each is EXDEV", () => {
  inBody(seededBody(), (body) => {
    const { json: r, log } = fixture<{ fixed: Outcome; control: Outcome; after: string[] }>(body, "moves");
    assert.equal(lines(r.fixed.stdout), Object.fromEntries(MOVES.map((m) => [m, "ok"])), log);
    assert.is(r.fixed.release?.exitCode, 0, log);
    // The control: one more layer that handles no filesystem right denies every one of them (Landlock's REFER).
    assert.equal(lines(r.control.stdout), Object.fromEntries(MOVES.map((m) => [m, "EXDEV"])), log);
    assert.equal(r.after, [], log);
  });
});

rootTest(test, "a private job's guard holds a lower oom_score_adj than the job (the lowest the kernel allows), which the job cannot raise", () => {
  inBody(seededBody(), (body) => {
    const { json: r, log } = fixture<{ job: string; guard: string; raise: Outcome; release: { exitCode: number }; after: string[] }>(body, "oom");
    process.stdout.write(`\n   oom_score_adj: job ${r.job}, guard ${r.guard}\n`);
    // The shim's default for agent work is 500; the floor here is the launch's own (0), inherited as oom_score_adj_min.
    assert.is(r.job, "500", log);
    assert.is(r.guard, "0", log);
    assert.match(r.raise.stderr, /Permission denied/, log);
    assert.is.not(r.raise.stdout, "raised", log);
    assert.is(r.release.exitCode, 0, log);
  });
});

rootTest(test, "a private job whose guard was killed before the job ended: its release fails (75, one line), the lease stays and the next private job is refused (75); the control, not killed, is released (0)", () => {
  inBody(seededBody({ group: ONE_GROUP }), (body) => {
    type Left = Outcome & { guard: boolean; killed: number | null; leftover: number; after: string[] };
    const { json: r, log } = fixture<{ control: Left; killed: Left; next: Outcome }>(body, "guard-killed");
    // The control: the guard fires when the job ends; the release finds nothing left and gives the lease back.
    assert.ok(r.control.guard, log);
    assert.equal([r.control.exitCode, r.control.stdout, r.control.release?.exitCode, r.control.leftover, r.control.after], [0, "refused", 0, 0, []], log);
    // Killed from outside (as the OOM killer would): before the fix the release's scan killed the setsid process and answered 0.
    assert.is(r.killed.killed, 0, log);
    assert.is(r.killed.exitCode, 0, log);
    // The job cannot write its lease's mark: its nested domain grants it the lease's home and tmp only.
    assert.is(r.killed.stdout, "refused", log);
    assert.is(r.killed.release?.exitCode, 75, log);
    assert.is(
      r.killed.release?.stderr,
      "clankie-agent-exec: the guard of the private job in /run/clankie-private/0 ended before its job (killed by the OOM killer or a signal), so what the job started may run on unseen; the lease stays and its group out of the pool; restart the container to get it back",
    );
    assert.ok(r.killed.after.includes("0"), log);
    assert.is(r.next.exitCode, 75, log);
  });
});

rootTest(test, "clone(CLONE_PARENT) is refused (EPERM) to a plain and a private job: no zombie under the service, the release ends 0; the control (no filter) leaves zombies of the service holding the group, and the pool of one refuses the next private job (75)", () => {
  withCloneParent((launch) => {
    inBody(seededBody({ group: ONE_GROUP }), (body) => {
      type Zombie = { pid: number; groups: string };
      type Clone = { plain: Outcome; zombiesAfterPlain: Zombie[]; private: Outcome; zombiesAfterPrivate: Zombie[]; control: Outcome; zombiesAfterControl: Zombie[]; next: Outcome };
      const { json: r, log } = fixture<Clone>(body, "clone-parent", launch);
      assert.is(r.plain.stdout, "refused EPERM", log);
      assert.equal(r.zombiesAfterPlain, [], log);
      assert.is(r.private.stdout, "refused EPERM", log);
      assert.is(r.private.release?.exitCode, 0, log);
      assert.equal(r.zombiesAfterPrivate, [], log);
      // The control: the same clones without the filter, run by the launch's root side as the agent's uid, are children nobody reaps, holding group 1100.
      assert.is(r.control.stdout, "made 8", log);
      assert.is(r.zombiesAfterControl.length, 8, log);
      assert.ok(r.zombiesAfterControl.every((z) => z.groups.split(/\s+/).includes("1100")), log);
      assert.is(r.next.exitCode, 75, log);
    });
  });
});

rootTest(test, "clone(CLONE_PARENT) from a plain job on a kernel without seccomp filters: the clones are made, and their parent, the job's grab, reaps them while the job runs; no zombie of the agent's anywhere, then or after", () => {
  withCloneParent((launch) => {
    inBody(seededBody(), (body) => {
      type Zombie = { pid: number; ppid: number };
      const { json: r, log } = fixture<{ plain: Outcome; during: Zombie[]; after: Zombie[] }>(body, "clone-plain", { ...launch, wrap: WITHOUT_SECCOMP });
      // The attack ran: no filter refused the clones (with the chain the spawner's child, as before the grab forked, they were 8 zombies of the spawner).
      assert.is(r.plain.stdout, "made 8", log);
      assert.is(r.plain.exitCode, 0, log);
      assert.equal(r.during, [], log);
      assert.equal(r.after, [], log);
    });
  });
});

test.run();
