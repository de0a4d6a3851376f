/*
 * What the uid alone does not guard, attempted as agent work in the launch
 * sandbox (the stand-in service's "confinement" mode): each attempt must be
 * denied through the shim (the Landlock domain and seccomp filter of
 * src/agent-exec/confinement.ts), and the same attempt, made by the agent's
 * uid and groups without the domain, must succeed (the control), so that a
 * denial is the confinement's and not a broken attempt.
 */
import { chownSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rootTest } from "../helpers/privilege.ts";
import { Body, IDS, SANDBOX_FIXTURES, SANDBOX_NODE } from "../helpers/sandbox.ts";

const test = suite("confinement");
const SERVICE = [SANDBOX_NODE, `${SANDBOX_FIXTURES}/stand-in-service.mjs`];

interface Confinement {
  port: number;
  confined: Record<string, string>;
  confinedExit: number;
  confinedStderr: string;
  open: Record<string, string>;
  control: Record<string, string>;
  controlStderr: string;
}

function seededBody(): Body {
  const body = new Body();
  chownSync(body.state, IDS.service, IDS.service);
  chownSync(body.workspace, IDS.service, IDS.service);
  const seeded = body.run({ as: "node", command: [...SERVICE, "seed"] });
  assert.is(seeded.status, 0, seeded.stderr);
  return body;
}

function confinement(body: Body, options: object = {}): Confinement {
  const run = body.run({ as: "root", command: [...SERVICE, "confinement", JSON.stringify(options)], timeoutMs: 90_000 });
  const line = run.stdout.split("\n").find((l) => l.startsWith("{"));
  if (!line) throw new Error(`no JSON from the service (exit ${run.status}): ${run.stdout}\n${run.stderr}`);
  return JSON.parse(line) as Confinement;
}

/** Each attempt, the errno the confined agent must get (the control must get "ok"). */
const DENIED: Record<string, string> = {
  read: "EACCES", // Landlock: nothing of /state but install and agent
  oom: "EACCES", // Landlock: no write under /proc
  abstract: "EPERM", // Landlock ABI 6 scope
  environ: "EACCES", // Landlock: ptrace-mode access only within the domain
  kill: "EPERM", // Landlock ABI 6 scope: job B is another domain
  ptrace: "EPERM", // seccomp (and Landlock)
  connect: "EACCES", // Landlock ABI 4, --deny-connect
  bind: "EACCES", // Landlock ABI 4, --deny-bind
  io_uring: "EPERM",
  keyctl: "EPERM",
  vm_read: "EPERM",
  traceme: "EPERM",
  userfaultfd: "EPERM",
};

rootTest(test, "every attempt is denied to agent work and succeeds for the agent's uid without the domain", () => {
  const body = seededBody();
  try {
    const result = confinement(body);
    const ids = Object.keys(DENIED);
    assert.is(result.confinedExit, 0, result.confinedStderr);
    assert.equal(Object.keys(result.confined).sort(), Object.keys(result.control).sort(), result.controlStderr);
    const controlFailed = ids.filter((id) => result.control[id] !== "ok").map((id) => `${id}=${result.control[id]}`);
    assert.equal(controlFailed, [], "these attempts fail even without the domain: they prove nothing");
    const got = Object.fromEntries(ids.map((id) => [id, result.confined[id]]));
    assert.equal(got, DENIED);
    // A new user namespace is refused to a chrooted process anyway (the
    // sandbox chroots), so its control cannot succeed here; the filter's
    // answer to it is in the unit test of the program, and clone3, which it
    // answers ENOSYS so that glibc falls back to clone, shows the filter here.
    assert.is(result.confined.userns, "EPERM");
    assert.is(result.control.clone3, "EINVAL");
    assert.is(result.confined.clone3, "ENOSYS");
    // The port rules deny what they name, nothing else: without them the same connect and bind work.
    assert.equal(Object.values(result.open), ["ok", "ok"]);
  } finally {
    body.cleanup();
  }
});

test.run();
