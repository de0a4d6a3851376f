/*
 * clankie-separate --self-check in the launch sandbox, black-box: the built
 * executable, run the three ways the issue names:
 *
 *   - by the service, as its child (doctor): the stand-in service is `sh -c`
 *     or a node script that starts the audit through runSelfCheck;
 *   - by root and by node from outside the service's tree, as `docker exec`
 *     does (nsenter into the running sandbox: root with the launch's six
 *     capabilities, node with none and without NoNewPrivs, moby#37667);
 *   - as the only process of a legacy single-uid body.
 *
 * For each check a passing case and a failing case: the fault is planted
 * (by the service, by the launcher, or by a bind mount standing in for the
 * image) and the exact set of failing check ids is compared, with the fix.
 *
 * The sandbox's /usr and /etc are the host's. The image of ADR 0272 strips
 * every set-user-ID bit and file capability; the host has some, so every
 * launch here binds a plain file over each of them, and an empty tmpfs over
 * each host directory that node cannot read (as the image has none).
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { chmodSync, chownSync, copyFileSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Body, DEFAULT_GROUP, haveBubblewrap, IDS, ROOT_CAPS, SANDBOX_FIXTURES, SANDBOX_NODE, SANDBOX_REPO, SYSTEM_PATH } from "../helpers/bwrap-sandbox.ts";
import { inBody } from "../helpers/sandbox.ts";
import { DIST, NODE24, REPO } from "../helpers/paths.ts";
import { IS_ROOT, rootTest } from "../helpers/privilege.ts";

const AUDIT = "/usr/local/sbin/clankie-separate";
const SelfCheck = suite("self-check");

/* ---------------------------------------------------------------- setup -- */

const scratch = mkdtempSync(join(tmpdir(), "clankie-selfcheck-"));
const PLAIN = join(scratch, "plain");
writeFileSync(PLAIN, "not a program\n", { mode: 0o644 });

function lines(command: string, args: string[]): string[] {
  const result = spawnSync(command, args, { encoding: "utf8", maxBuffer: 64 << 20 });
  return (result.stdout ?? "").split("\n").filter((line) => line !== "");
}

/** bwrap arguments that make the host's /usr and /etc look like the stripped image. */
function imageMasks(): string[] {
  if (!IS_ROOT) return [];
  const privileged = lines("find", ["/usr", "/etc", "-xdev", "-type", "f", "-perm", "/6000"]);
  const capped = lines("getcap", ["-r", "/usr", "/etc"]).map((line) => line.split(" ")[0]!);
  const sealed = lines("find", ["/usr", "/etc", "-xdev", "-type", "d", "!", "-perm", "-o=rx"]);
  return [...[...new Set([...privileged, ...capped])].flatMap((path) => ["--ro-bind", PLAIN, path]), ...sealed.flatMap((dir) => ["--tmpfs", dir])];
}
const MASKS = imageMasks();

interface Audit {
  status: number | null;
  stdout: string;
  stderr: string;
  doc: Doc;
}
interface CheckDoc {
  id: string;
  status: "pass" | "warn" | "fail";
  summary: string;
  found: Record<string, any>;
  fix: string | null;
}
interface Doc {
  ok: boolean;
  mode: string;
  boundary: { label: string; declared: boolean | null; source: string | null };
  judged: { pid: number; name: string; uid: number; reason: string };
  auditor: { pid: number; uid: number; capabilities: string[]; noNewPrivs: number; relation: string };
  counts: Record<string, number>;
  checks: CheckDoc[];
}

function parse(result: SpawnSyncReturns<string>): Audit {
  let doc: Doc;
  try {
    doc = JSON.parse(result.stdout) as Doc;
  } catch {
    throw new Error(`no JSON document (exit ${result.status}):\n${result.stdout}\n${result.stderr}`);
  }
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, doc };
}

function check(audit: Audit, id: string): CheckDoc {
  const found = audit.doc.checks.find((c) => c.id === id);
  if (!found) throw new Error(`no check ${id} in ${audit.doc.checks.map((c) => c.id).join(", ")}`);
  return found;
}

function withStatus(audit: Audit, status: string): string[] {
  return audit.doc.checks.filter((c) => c.status === status).map((c) => c.id).sort();
}

const KERNEL_SETTINGS: ReadonlyArray<readonly [string, string, readonly string[]]> = [
  ["kernel.legacy-tiocsti", "/proc/sys/dev/tty/legacy_tiocsti", ["0"]],
  ["kernel.protected-hardlinks", "/proc/sys/fs/protected_hardlinks", ["1"]],
  ["kernel.protected-symlinks", "/proc/sys/fs/protected_symlinks", ["1"]],
  ["kernel.protected-regular", "/proc/sys/fs/protected_regular", ["1", "2"]],
  ["kernel.protected-fifos", "/proc/sys/fs/protected_fifos", ["1", "2"]],
];

function sysctlValue(path: string): string | undefined {
  try {
    return readFileSync(path, "latin1").trim();
  } catch {
    return undefined;
  }
}

const KERNEL_WARNINGS = KERNEL_SETTINGS.filter(([, path, good]) => !good.includes(sysctlValue(path) ?? "")).map(([id]) => id);

/** What this kernel answers perl's landlock_create_ruleset(NULL, 0, VERSION), and whether seccomp filters can fail a call with errno. */
const HOST_LANDLOCK = spawnSync("/usr/bin/perl", ["-e", 'my $v = syscall(444, 0, 0, 1); print $v >= 0 ? $v : "none"'], { encoding: "utf8" }).stdout;
const HOST_SECCOMP_ERRNO = (() => {
  try {
    return readFileSync("/proc/sys/kernel/seccomp/actions_avail", "latin1").split(/\s+/).includes("errno");
  } catch {
    return false;
  }
})();
const CONFINEMENT_WARNINGS = [...(Number(HOST_LANDLOCK) >= 6 && HOST_SECCOMP_ERRNO ? [] : ["agent.confinement"]), ...(HOST_LANDLOCK !== "none" && HOST_SECCOMP_ERRNO ? [] : ["agent.stop-route"])];

/**
 * The warnings every healthy separated body in this sandbox has: what the
 * sandbox cannot change, and its /state/agent on /state's filesystem (the
 * launch of ADR 0272 without the agent's own volume).
 */
const SANDBOX_WARNINGS = ["boundary", "image.read-only-root", "state.agent-volume", ...KERNEL_WARNINGS, ...CONFINEMENT_WARNINGS];

/** The checks only a Landlock domain or a seccomp filter of the spawn's own makes pass: "not confined" warns where the kernel does not offer them, and fails where it does. */
const CONFINED_PROBES = ["probe.seccomp", "probe.lower-oom-score", "probe.abstract-socket"];

function assertFailing(audit: Audit, expected: string[]): void {
  assert.equal(withStatus(audit, "fail"), [...expected].sort(), `failing checks; document:\n${audit.stdout}\n${audit.stderr}`);
  for (const id of expected) {
    const fix = check(audit, id).fix;
    assert.ok(typeof fix === "string" && fix.length > 10, `${id} has a fix`);
  }
  assert.is(audit.status, expected.length > 0 ? 1 : 0, "exit code");
  assert.is(audit.doc.ok, expected.length === 0);
}

/** A body whose volumes node owns and whose state a previous single-uid run seeded, as today's bodies are. */
function seededBody(options: { group?: string } = {}): Body {
  const body = new Body(options);
  chownSync(body.state, IDS.service, IDS.service);
  chownSync(body.workspace, IDS.service, IDS.service);
  const seeded = body.run({ as: "node", command: ["--", SANDBOX_NODE, `${SANDBOX_FIXTURES}/stand-in-service.mjs`, "seed"], extra: MASKS });
  assert.is(seeded.status, 0, seeded.stderr);
  return body;
}

/** The stand-in service is `sh -c`: it plants `plant` as node, then runs the audit as its child. */
function shDoctor(body: Body, plant: string, args: string[], options: { extra?: string[]; env?: Record<string, string>; timeoutMs?: number } = {}): SpawnSyncReturns<string> {
  const script = `set -e\n${plant}\nset +e\n${AUDIT} --self-check "$@"\nexit $?`;
  return body.run({ command: ["--", "/bin/sh", "-c", script, "doctor", ...args], extra: [...MASKS, ...(options.extra ?? [])], env: options.env, timeoutMs: options.timeoutMs });
}

/** The stand-in service is node, starting the audit through the package's runSelfCheck as the real service does. */
const NODE_DOCTOR = `
import { readFileSync } from "node:fs";
import { runSelfCheck, spawnAgent } from "${SANDBOX_REPO}/dist/lib/system-exec.js";
if (process.env.DOCTOR_GROUPS) process.setgroups(process.env.DOCTOR_GROUPS.split(",").map(Number));
if (process.env.DOCTOR_DECLARE) process.env.CLANKIE_BOUNDARY = "complete";
// DOCTOR_JOB: an agent job runs through the audit; its parent's status goes to stderr.
const job = process.env.DOCTOR_JOB ? spawnAgent("/usr/bin/sleep", ["30"], { reject: false }) : undefined;
for (let i = 0; job && i < 200 && job.pid === undefined; i++) await new Promise((go) => setTimeout(go, 25));
const parent = job?.pid && readFileSync("/proc/" + job.pid + "/status", "latin1").match(/^PPid:\\s+(\\d+)/m)[1];
const r = await runSelfCheck(process.argv.slice(2), { reject: false, pass: ["CLANKIE_BOUNDARY"] });
if (job) process.stderr.write("job's parent: " + readFileSync("/proc/" + parent + "/status", "latin1").split("\\n").filter((l) => /^(Name|Uid|CapPrm|CapEff|CapAmb):/.test(l)).join(" ").replace(/\\s+/g, " ") + "\\n");
job?.kill();
await job;
process.stdout.write(r.stdout);
process.stderr.write(r.stderr);
process.exitCode = r.exitCode;
`;

function nodeDoctor(body: Body, args: string[], env: Record<string, string> = {}): SpawnSyncReturns<string> {
  return body.run({ command: ["--", SANDBOX_NODE, "--input-type=module", "-e", NODE_DOCTOR, "--", "--self-check", ...args], extra: MASKS, env });
}

/** A running separated body (the stand-in service serving), to `docker exec` into. */
interface Running {
  pid1: number;
  stop(): void;
}

async function startBody(body: Body): Promise<Running> {
  const child = body.start({ command: ["--", SANDBOX_NODE, `${SANDBOX_FIXTURES}/stand-in-service.mjs`, "serve"], extra: MASKS });
  let stderr = "";
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const deadline = Date.now() + 30_000;
  while (!stderr.includes("listening")) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the body did not start: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const pid1 = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim().split(/\s+/)[0]);
  return {
    pid1,
    stop() {
      // The sandbox's init changed credentials, which clears bwrap's parent-death signal: end its pid namespace.
      try {
        process.kill(pid1, "SIGKILL");
      } catch {
        /* already gone */
      }
      child.kill("SIGKILL");
    },
  };
}

/** What `docker exec [--user node]` does: a process in the body's namespaces that is not in the service's tree. */
function execInto(running: Running, as: "root" | "node", argv: string[], env: Record<string, string> = {}): SpawnSyncReturns<string> {
  const bounding = `--bounding-set=-all${ROOT_CAPS.map((c) => `,+${c}`).join("")}`;
  const shape =
    as === "root"
      ? ["--inh-caps=-all", "--ambient-caps=-all", bounding, "--no-new-privs"]
      : [`--reuid=${IDS.service}`, `--regid=${IDS.service}`, "--init-groups", "--inh-caps=-all", "--ambient-caps=-all", bounding];
  return spawnSync("nsenter", ["-t", String(running.pid1), "-m", "-p", "-i", "--wd=/", "--", "/usr/bin/setpriv", ...shape, "--", ...argv], {
    encoding: "utf8",
    env: { PATH: SYSTEM_PATH, HOME: as === "root" ? "/root" : "/home/node", ...env },
    timeout: 60_000,
    maxBuffer: 32 << 20,
  });
}

/* ---------------------------------------------- a tiny JSON Schema check -- */

const SCHEMA = JSON.parse(readFileSync(join(REPO, "docs/self-check.schema.json"), "utf8"));

/** The subset of draft 2020-12 the published schema uses: type, const, enum, required, properties, items, $ref, minimum, pattern, allOf, if/then. */
function validate(value: unknown, schema: any, path = "$"): string[] {
  if (schema.$ref) return validate(value, SCHEMA.$defs[schema.$ref.replace("#/$defs/", "")], path);
  const errors: string[] = [];
  for (const part of schema.allOf ?? []) {
    if (part.if && validate(value, part.if, path).length > 0) continue;
    errors.push(...validate(value, part.then ?? part, path));
  }
  const typeOf = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v);
  if (schema.type) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    const actual = typeOf(value);
    if (!types.includes(actual) && !(actual === "integer" && types.includes("number"))) return [`${path}: ${actual}, want ${types.join("|")}`];
  }
  if ("const" in schema && value !== schema.const) errors.push(`${path}: ${JSON.stringify(value)}, want ${schema.const}`);
  if (schema.enum && !schema.enum.includes(value)) errors.push(`${path}: ${JSON.stringify(value)} not in ${schema.enum.join(",")}`);
  if (schema.minimum !== undefined && typeof value === "number" && value < schema.minimum) errors.push(`${path}: below ${schema.minimum}`);
  if (schema.pattern && typeof value === "string" && !new RegExp(schema.pattern, "u").test(value)) errors.push(`${path}: ${value} does not match ${schema.pattern}`);
  if (value && typeof value === "object" && !Array.isArray(value)) {
    for (const key of schema.required ?? []) if (!(key in value)) errors.push(`${path}: no ${key}`);
    for (const [key, sub] of Object.entries(schema.properties ?? {})) {
      if (key in value) errors.push(...validate((value as Record<string, unknown>)[key], sub, `${path}.${key}`));
    }
  }
  if (Array.isArray(value) && schema.items) value.forEach((item, i) => errors.push(...validate(item, schema.items, `${path}[${i}]`)));
  return errors;
}

/* ---------------------------------------------------------------- tests -- */

if (!haveBubblewrap()) process.stderr.write("SKIPPED: bubblewrap is not installed\n");

rootTest(SelfCheck, "doctor on a healthy separated body: every check passes but the sandbox's warnings; exit 0; the document follows the schema", () => {
  inBody(seededBody(), (body) => {
    const audit = parse(shDoctor(body, ":", ["--json"]));
    assertFailing(audit, []);
    assert.equal(withStatus(audit, "warn"), [...SANDBOX_WARNINGS].sort(), audit.stdout);
    assert.equal(validate(audit.doc, SCHEMA), []);
    assert.is(audit.doc.mode, "separated");
    assert.is(audit.doc.boundary.label, "not a boundary yet: workers still run as node");
    assert.is(audit.doc.boundary.declared, false);
    // It judged the service (the sh under tini), not itself, and says so.
    assert.is(audit.doc.judged.name, "sh");
    assert.is(audit.doc.judged.uid, IDS.service);
    assert.is(audit.doc.auditor.relation, "descendant");
    // Beyond ADR 0272: the service holds nothing, the bounding set included (the spawner holds SETUID+SETGID: processes.spawner).
    for (const set of ["CapInh", "CapPrm", "CapEff", "CapAmb", "CapBnd"]) assert.equal(check(audit, "process.capabilities").found.sets[set], { mask: "0x0000000000000000", names: [] }, set);
    assert.is(check(audit, "processes.spawner").status, "pass", check(audit, "processes.spawner").summary);
    assert.ok(check(audit, "state.layout").found.checked >= 10);
    assert.is(check(audit, "state.layout").found.umaskGroupBits, 0);
    assert.is(check(audit, "image.bundle").found.sha256, readFileSync(join(DIST, "SHA256SUMS"), "utf8").split(/\s+/)[0]);
    for (const [id, path] of KERNEL_SETTINGS) assert.is(check(audit, id).found.value, sysctlValue(path) ?? null, id);
    // The ABI the audit reports is the one the kernel gives perl outside the sandbox.
    assert.is(String(check(audit, "agent.confinement").found.landlock.abi ?? "none"), HOST_LANDLOCK);
    assert.is(check(audit, "agent.confinement").found.seccomp.filtersAvailable, HOST_SECCOMP_ERRNO);
  });
});

rootTest(SelfCheck, "the agent's home on a filesystem of its own (a tmpfs at /state/agent) passes state.agent-volume and the layout checks; on /state's filesystem it warns with the launcher flag", () => {
  inBody(seededBody(), (body) => {
    const own = parse(shDoctor(body, ":", ["--json"], { extra: ["--tmpfs", "/state/agent"] }));
    assertFailing(own, []);
    assert.equal(withStatus(own, "warn"), SANDBOX_WARNINGS.filter((id) => id !== "state.agent-volume").sort(), own.stdout);
    const volume = check(own, "state.agent-volume");
    assert.is(volume.status, "pass");
    assert.ok(volume.found.dev !== volume.found.stateDev);
    assert.is(check(own, "state.agent-home").status, "pass", "the mount's root was given to the agent");
    assert.equal(check(own, "state.layout").found.violations.count, 0, "a mount at /state/agent is not 'another filesystem mounted inside'");

    const shared = parse(shDoctor(body, ":", ["--json"]));
    const same = check(shared, "state.agent-volume");
    assert.is(same.status, "warn");
    assert.is(same.found.dev, same.found.stateDev);
    assert.match(same.summary, /^\/state\/agent is on the filesystem of \/state: the agent can fill it, and the service's writes to \/state then fail with ENOSPC$/);
    assert.match(same.fix!, /--tmpfs \/state\/agent:rw,exec,nosuid,nodev,size=/);
  });
});

rootTest(SelfCheck, "what the service writes to /state after the start under its umask (node:node 0660, 0770) passes state.layout, counted; a file it makes readable by others fails", () => {
  inBody(seededBody(), (body) => {
    const umask = parse(shDoctor(body, "echo '{}' > /state/credentials.json.new && mv /state/credentials.json.new /state/credentials.json; mkdir /state/spool", ["--json"]));
    assertFailing(umask, []);
    const layout = check(umask, "state.layout");
    assert.is(layout.found.umaskGroupBits, 2, layout.summary);
    assert.match(layout.summary, /\(2 made by the service since the start keep its umask's group bits/);
    const exposed = parse(shDoctor(body, "echo '{}' > /state/settings.json && chmod 0644 /state/settings.json", ["--json"]));
    assertFailing(exposed, ["state.layout"]);
    assert.equal(check(exposed, "state.layout").found.violations.shown.map((v: any) => `${v.path} ${v.mode}`), ["/state/settings.json 0644"]);
  });
});

/** Each level's path kept, as the ACL walk kept it: depth^2 x 255 / 2 bytes, gigabytes at a few thousand levels. */
const KEEP_EVERY_PATH = 'my ($p, @paths) = (""); for (1..$ARGV[0]) { $p .= "/" . ("d" x 255); push @paths, $p } print scalar(@paths), "\\n"';

rootTest(SelfCheck, "a chain 20,000 levels deep of 255-byte names, made by the service after the start: the audit reads it to the depth limit in 2 GiB of address space and fails state.layout; nothing below the limit is read", () => {
  inBody(seededBody(), (body) => {
    // As the service (node), after the start; then the audit under an address-space limit (ulimit -v, KiB), as docker run --memory 2g bounds it.
    const plant = `perl -e 'my $d = "d" x 255; mkdir "/state/deep" or die; chmod 0777, "/state/deep"; chdir "/state/deep" or die; for (1..20000) { mkdir $d or die; chmod 0777, $d; chdir $d or die } open(my $f, ">", "leaf") or die'\nulimit -v ${2 << 20}`;
    try {
      // The control of the limit: keeping each level's path of the chain, as the ACL walk did, does not fit in it.
      const kept = shDoctor(body, `ulimit -v ${2 << 20}; perl -e '${KEEP_EVERY_PATH}' 20000 || echo "died $?" >&2; exit 3`, [], { timeoutMs: 180_000 });
      assert.is(kept.status, 3, kept.stderr);
      assert.match(kept.stderr, /Out of memory[^]*died/);
      const audit = parse(shDoctor(body, plant, ["--json"], { timeoutMs: 180_000 }));
      assertFailing(audit, ["state.layout"]);
      const layout = check(audit, "state.layout");
      // The chain's top and its 4,095 levels below it, down to the directory DEPTH_LIMIT levels below /state, each 0777.
      assert.is(layout.found.violations.count, 4096, layout.summary);
      assert.equal(layout.found.deep.count, 1);
      assert.match(layout.found.deep.examples[0], /^\/state\/deep\/d{108}\.\.\.$/, "the path cut to 120 characters");
    } finally {
      spawnSync("rm", ["-rf", join(body.state, "deep")]);
    }
  });
});

rootTest(SelfCheck, "an ACL with a named entry below /state fails state.layout (in the release root, state.release), named as getfacl writes it; the modes alone pass", () => {
  inBody(seededBody(), (body) => {
    // A mask of r-- shows as group bits r--, which the umask's excuse (node's own group) would let pass.
    const audit = parse(shDoctor(body, "setfacl -m u:1001:r /state/settings.json && setfacl -d -m u:1001:r /state && setfacl -m u:1001:r /state/install/current/server.js", ["--json"]));
    assertFailing(audit, ["state.layout", "state.release"]);
    const layout = check(audit, "state.layout");
    assert.equal(layout.found.acls.shown, ["/state (default ACL: user:1001:r--)", "/state/settings.json (ACL: user:1001:r--)"]);
    assert.match(layout.summary, /^2 entries carry ACLs, which the layout does not allow/);
    assert.match(layout.fix!, /^restart the container/);
    assert.equal(check(audit, "state.release").found.acls.shown, ["/state/install/current/server.js (ACL: user:1001:r--)"]);
    // The next start removes them: the audit passes again.
    assertFailing(parse(shDoctor(body, "true", ["--json"])), []);
  });
});

rootTest(SelfCheck, "a default ACL the agent sets on its own directory in /workspace warns workspace.default-acl, naming it (the service's new files there would not be 0660); control: the same directory without it passes", () => {
  inBody(seededBody(), (body) => {
    // As the agent, through the spawner (the service's spawnAgent, from a node child of the sh service): a directory of its own, then (or not) a default ACL that opens new files to other.
    const spawn = `import { spawnAgent } from "${SANDBOX_REPO}/dist/lib/system-exec.js"; const r = await spawnAgent("/bin/sh", ["-c", process.argv.at(-1)], { stdio: "inherit", reject: false }); process.exitCode = r.exitCode ?? 1;`;
    const agent = (script: string) => `${SANDBOX_NODE} --input-type=module -e '${spawn}' -- '${script}'`;
    const control = parse(shDoctor(body, agent("mkdir -p /workspace/agent-dir/sub"), ["--json"]));
    assertFailing(control, []);
    const clean = check(control, "workspace.default-acl");
    assert.is(clean.status, "pass", clean.summary);
    assert.ok(clean.found.visited >= 3, "the walk read the directories below /workspace");
    const planted = parse(shDoctor(body, agent("setfacl -d -m u::rwx,g::-,o::rw /workspace/agent-dir/sub && touch /workspace/agent-dir/sub/probe"), ["--json"]));
    assertFailing(planted, []);
    const acl = check(planted, "workspace.default-acl");
    assert.is(acl.status, "warn");
    assert.equal(acl.found.defaultAcls.shown, ["/workspace/agent-dir/sub"]);
    assert.match(acl.summary, /^1 directory below \/workspace carries a default ACL, which sets the modes of what the service creates there instead of its umask \(0660 and 2770 do not hold there\): \/workspace\/agent-dir\/sub$/);
    assert.match(acl.fix!, /setfacl -k/);
  });
});

rootTest(SelfCheck, "text form: one line per check, failures first with their fix, then the verdict", () => {
  inBody(seededBody(), (body) => {
    const result = shDoctor(body, "touch /state/planted; chmod 0664 /state/planted", []);
    assert.is(result.status, 1);
    const out = result.stdout.trimEnd().split("\n");
    assert.is(out.length, 34, result.stdout); // 33 checks without --probe (processes.spawner and workspace.default-acl among them), and the verdict
    assert.match(out[0]!, /^FAIL state\.layout: 1 entry breaks the layout contract: \/state\/planted \(file 0664 1000:1000, want 0600 1000:1000\); fix: restart the container/);
    const statuses = out.slice(0, -1).map((line) => line.split(" ")[0]);
    assert.equal(statuses, [...statuses].sort((a, b) => ["FAIL", "WARN", "PASS"].indexOf(a!) - ["FAIL", "WARN", "PASS"].indexOf(b!)));
    assert.match(out.at(-1)!, /^verdict: FAILED: 1 failed, \d+ warnings, \d+ passed; separated; not a boundary yet: workers still run as node; judged pid \d+ \(sh, uid 1000\)/);
  });
});

rootTest(SelfCheck, "faults the service can plant in /state, /workspace and its own processes fail exactly their checks", () => {
  inBody(seededBody(), (body) => {
    const plant = [
      // state.layout: 60 files readable by others (output bounded to 50, with the count)
      "for i in $(seq 1 60); do touch /state/readable-$i; chmod 0664 /state/readable-$i; done",
      // state.release: a release file anyone may write
      "chmod 0666 /state/install/current/server.js",
      // state.agent-home: the agent's home replaced by one of the service's
      "mv /state/agent /state/agent.old; mkdir -m 0700 /state/agent",
      // workspace.top: set-group-ID removed
      "chmod g-s /workspace",
      // workspace.marker: removed
      "rm /state/.clankie-separate/workspace-layout",
      // processes.workspace-exe: the service runs a program from /workspace
      "cp /usr/bin/sleep /workspace/sleeper; /workspace/sleeper 30 &",
    ].join("\n");
    const audit = parse(shDoctor(body, plant, ["--json"]));
    // The sleeper, started by the service, holds nothing (the service holds nothing): processes.capabilities passes.
    assertFailing(audit, ["state.layout", "state.release", "state.agent-home", "workspace.top", "workspace.marker", "processes.workspace-exe"]);
    const layout = check(audit, "state.layout").found.violations;
    assert.is(layout.count, 61, "60 planted files and /state/agent.old");
    assert.is(layout.shown.length, 50);
    assert.ok(layout.shown.some((v: any) => v.path === "/state/readable-1" && v.mode === "0664" && v.want.mode === "0600"));
    assert.equal(check(audit, "state.release").found.violations.shown, [{ path: "/state/install/current/server.js", kind: "file", mode: "0666", uid: 1000, gid: 1000, want: { uid: 1000, gid: 1000, mode: "0644" } }]);
    assert.match(check(audit, "state.agent-home").summary, /owned by 1000:1000, want 1001:1001/);
    assert.match(check(audit, "workspace.top").summary, /mode 0775, want 2775/);
    assert.match(check(audit, "workspace.marker").summary, /no readable layout marker: read \/state\/\.clankie-separate\/workspace-layout: ENOENT/);
    assert.is(check(audit, "processes.workspace-exe").found.underWorkspace.shown[0].exe, "/workspace/sleeper");
  });
});

/*
 * What processes.capabilities is about. A program the service starts holds
 * nothing, as the service holds nothing, and cannot become uid 0 with
 * setpriv. The control is ADR 0272's shape, made by hand: a service holding
 * ambient SETUID and SETGID, whose plain child inherits them (capabilities(7))
 * and could become uid 0. The audit passes the first and flags the second.
 */
rootTest(SelfCheck, "processes.capabilities: a child of the service holds nothing and cannot become uid 0, and the check passes past the spawner; a process of node's uid that holds SETUID+SETGID beside a service (ADR 0272's shape, made by hand) fails it", () => {
  inBody(seededBody(), (body) => {
    const becomeRoot = "/usr/bin/setpriv --reuid=0 --regid=0 --clear-groups -- /usr/bin/id -u";
    const clean = shDoctor(body, `set +e\n/bin/sh -c '${becomeRoot}' >&2\necho "exit $?" >&2\nset -e\n/usr/bin/sleep 30 &\nsleep 0.2`, ["--json"]);
    assert.match(clean.stderr, /setresuid failed: Operation not permitted\nexit 127$/m, clean.stderr);
    const passed = parse(clean);
    assertFailing(passed, []);
    assert.is(check(passed, "processes.capabilities").status, "pass", check(passed, "processes.capabilities").summary);

    // The control: a sleeper holding SETUID and SETGID beside a capable service, as ADR 0272's shape left them.
    const asCapableService = ["/usr/bin/setpriv", `--reuid=${IDS.service}`, `--regid=${IDS.service}`, "--init-groups", "--inh-caps=-all,+setuid,+setgid", "--ambient-caps=-all,+setuid,+setgid", "--bounding-set=-all,+setuid,+setgid", "--no-new-privs", "--"];
    const held = body.run({ as: "root", direct: true, command: [...asCapableService, "/bin/sh", "-c", `/usr/bin/sleep 30 &\nsleep 0.2\n${AUDIT} --self-check --json; exit $?`], extra: MASKS });
    const flagged = parse(held);
    assert.is(check(flagged, "processes.capabilities").status, "fail", check(flagged, "processes.capabilities").summary);
    const holder = check(flagged, "processes.capabilities").found.holders.shown.find((h: any) => h.name === "sleep");
    assert.equal([holder?.name, holder?.exe, holder?.capabilities], ["sleep", "/usr/bin/sleep", ["SETGID", "SETUID"]]);
  });
});

/*
 * The image walk lists /tmp, which every agent job writes. The audit started
 * by the service holds nothing (under ADR 0272's shape it held the service's
 * SETUID and SETGID); the walk reads only, and starts through systemExec's
 * capability drop all the same. A
 * poller inside the body finds the walker (perl, its program in argv) while
 * it runs and prints its /proc status and its parent's (the audit).
 */
const WALKER_POLLER = String.raw`
my $marker = "The image " . "scan of src/self-check";
my $deadline = time + 90;
while (time < $deadline) {
  for my $dir (glob "/proc/[0-9]*") {
    open my $c, "<", "$dir/cmdline" or next;
    my $cmdline = do { local $/; <$c> };
    next unless defined $cmdline && index($cmdline, "/usr/bin/perl\0-e\0") == 0 && index($cmdline, $marker) >= 0;
    open my $s, "<", "$dir/status" or next;
    my $status = do { local $/; <$s> };
    my ($name) = $status =~ /^Name:\s+(\S+)/m;
    next unless $name eq "perl";
    my ($ppid) = $status =~ /^PPid:\s+(\d+)/m;
    open my $p, "<", "/proc/$ppid/status" or next;
    my $parent = do { local $/; <$p> };
    my %cap = map { my ($set) = $status =~ /^$_:\s+(\S+)/m; ($_ => $set) } qw(CapInh CapPrm CapEff CapAmb);
    my ($auditor) = $parent =~ /^CapEff:\s+(\S+)/m;
    my ($uid) = $status =~ /^Uid:\s+(\d+)/m;
    print "walker uid $uid CapInh $cap{CapInh} CapPrm $cap{CapPrm} CapEff $cap{CapEff} CapAmb $cap{CapAmb}; auditor CapEff $auditor
";
    exit 0;
  }
}
print "no walker seen
";
`;

rootTest(SelfCheck, "the image walk over agent-writable /tmp holds no capability (CapEff 0), nor does the audit the service started (beyond ADR 0272, where it held SETUID and SETGID)", () => {
  inBody(seededBody(), (body) => {
    const script = [
      "set -e",
      `/usr/bin/perl -e "$POLLER" > /tmp/walker &`,
      `${AUDIT} --self-check --json > /dev/null || true`,
      "wait",
      "cat /tmp/walker",
    ].join("\n");
    const result = body.run({ command: ["--", "/bin/sh", "-c", script], extra: MASKS, env: { POLLER: WALKER_POLLER } });
    assert.is(result.status, 0, result.stderr);
    assert.match(result.stdout, /^walker uid 1000 CapInh 0{16} CapPrm 0{16} CapEff 0{16} CapAmb 0{16}; auditor CapEff 0{16}$/m, result.stdout);
  });
});

rootTest(SelfCheck, "image faults fail exactly their checks: a group-writable executable, a wrong bundle hash, a set-group-ID tool, a set-user-ID file and a file capability in bind-mounted dirs", () => {
  const body = seededBody();
  const sbin = join(scratch, "sbin");
  const tools = join(scratch, "tools");
  // The exec gate takes a root-owned set-group-ID tini (it checks owners, not set-ID bits), so the body starts; the audit does not.
  const tini = join(scratch, "tini");
  try {
    mkdirSync(sbin, { mode: 0o755 });
    // A copy whose embedded bundle (the main script) differs from the one
    // built in by one letter of its own comment, which no SEA asset holds
    // (the SEA asset bundle.sha256 still names the original).
    const exe = readFileSync(join(DIST, "clankie-separate"));
    const mainScriptText = "The single executable's main script, written by build.mjs";
    const at = exe.indexOf(mainScriptText);
    assert.ok(at > 0 && exe.indexOf(mainScriptText, at + 1) < 0, "the main script's comment is in the executable, once");
    exe[at + 1] = "a".charCodeAt(0);
    writeFileSync(join(sbin, "clankie-separate"), exe);
    chmodSync(join(sbin, "clankie-separate"), 0o775);
    linkSync(join(sbin, "clankie-separate"), join(sbin, "clankie-agent-exec"));
    mkdirSync(tools, { mode: 0o755 });
    copyFileSync("/usr/bin/true", join(tools, "escalate"));
    chmodSync(join(tools, "escalate"), 0o4755);
    copyFileSync("/usr/bin/true", join(tools, "raw"));
    chmodSync(join(tools, "raw"), 0o755);
    const setcap = spawnSync("setcap", ["cap_net_raw+ep", join(tools, "raw")], { encoding: "utf8" });
    assert.is(setcap.status, 0, `setcap: ${setcap.stderr}`);
    copyFileSync("/usr/bin/tini", tini);
    chmodSync(tini, 0o2755);
    const extra = ["--ro-bind", sbin, "/usr/local/sbin", "--ro-bind", tools, "/opt/tools", "--ro-bind", tini, "/usr/bin/tini"];
    const audit = parse(shDoctor(body, ":", ["--json"], { extra }));
    assertFailing(audit, ["image.executable", "image.bundle", "image.tools", "image.setuid", "image.file-capabilities"]);
    assert.match(check(audit, "image.executable").summary, /\/usr\/local\/sbin\/clankie-separate is writable by group or other \(mode 775\)/);
    const builtIn = readFileSync(join(DIST, "SHA256SUMS"), "utf8").split(/\s+/)[0];
    assert.is(check(audit, "image.bundle").found.expected, builtIn);
    assert.is(check(audit, "image.bundle").found.expectedFrom, "the SEA asset bundle.sha256");
    assert.match(check(audit, "image.bundle").found.sha256, /^[0-9a-f]{64}$/);
    assert.is.not(check(audit, "image.bundle").found.sha256, builtIn);
    assert.match(check(audit, "image.tools").summary, /\/usr\/bin\/tini has mode 2755: set-user-ID or set-group-ID/);
    assert.equal(check(audit, "image.setuid").found.files.shown, [
      { path: "/usr/bin/tini", mode: "2755", uid: 0, gid: 0, bits: ["setgid"], mount: "/usr/bin/tini", nosuid: true },
      { path: "/opt/tools/escalate", mode: "4755", uid: 0, gid: 0, bits: ["setuid"], mount: "/opt/tools", nosuid: true },
    ]);
    const capped = check(audit, "image.file-capabilities").found.files.shown;
    assert.is(capped.length, 1);
    assert.is(capped[0].path, "/opt/tools/raw");
    assert.equal(capped[0].permitted, ["NET_RAW"]);
    assert.is(capped[0].effective, true);
  } finally {
    body.cleanup();
    rmSync(sbin, { recursive: true, force: true });
    rmSync(tools, { recursive: true, force: true });
    rmSync(tini, { force: true });
  }
});

/*
 * What SETUID and SETGID would give code running as node (ADR 0272's service;
 * in this build the spawner): it becomes uid 0 with setpriv, still without
 * DAC_OVERRIDE, CHOWN or FOWNER, and owns every root-owned file on a writable
 * root. The service here holds neither, and its setpriv fails. bubblewrap's root is a tmpfs, as
 * writable as a container's layer; /opt/etc/passwd is a root-owned 0644 file
 * on it (--file from stdin). With a read-only / (--read-only) the same writes
 * fail with EROFS, and image.read-only-root passes.
 */
const AS_ROOT_WITHOUT_DAC = [
  "{",
  'try() { if sh -c "$2" 2>/dev/null; then echo "$1: ok"; else echo "$1: refused"; fi; }',
  'try "node appends to /opt/etc/passwd" "echo x >> /opt/etc/passwd"',
  "/usr/bin/setpriv --reuid=0 --regid=0 --clear-groups -- /bin/sh -c '",
  '  try() { if sh -c "$2" 2>/dev/null; then echo "$1: ok"; else echo "$1: refused"; fi; }',
  '  grep -E "^(Uid|CapEff|CapBnd|NoNewPrivs):" /proc/self/status | tr -s "\t " " "',
  '  try "uid 0 reads /state/credentials.json (node 0600)" "cat /state/credentials.json >/dev/null"',
  '  try "uid 0 appends to /opt/etc/passwd (root 0644)" "echo evil:x:0:0::/:/bin/sh >> /opt/etc/passwd"',
  '  try "uid 0 creates /opt/planted (root 0755 directory)" "echo x > /opt/planted"',
  '  try "uid 0 makes /opt/etc/passwd 0666" "chmod 0666 /opt/etc/passwd"',
  "'",
  "cat /opt/etc/passwd",
  "} >&2",
].join("\n");

function uidZeroAttempt(body: Body, readOnly: boolean): { audit: Audit; said: string[]; passwd: string } {
  const layer = ["--perms", "0755", "--dir", "/opt/etc", "--perms", "0644", "--file", "0", "/opt/etc/passwd", ...(readOnly ? ["--remount-ro", "/"] : [])];
  const result = body.run({ command: ["--", "/bin/sh", "-c", `set +e\n${AS_ROOT_WITHOUT_DAC}\n${AUDIT} --self-check --json\nexit $?`], extra: [...MASKS, ...layer], input: "root:x:0:0:root:/root:/bin/sh\n" });
  const said = result.stderr.split("\n").filter((line) => /^(Uid|CapEff|CapBnd|NoNewPrivs):|: (ok|refused)$|^setpriv: /.test(line));
  return { audit: parse(result), said, passwd: result.stderr.split("\n").filter((line) => line.includes(":x:0:0:")).join("\n") };
}

rootTest(SelfCheck, "code in the service cannot reach uid 0 (beyond ADR 0272 it holds no SETUID: setpriv EPERM) and writes no root-owned file; a writable / still warns (the spawner's SETUID), a read-only / passes image.read-only-root", () => {
  inBody(seededBody(), (body) => {
    const writable = uidZeroAttempt(body, false);
    // Under ADR 0272's shape setpriv made it uid 0 (CapEff c0) and its appends to /opt/etc/passwd succeeded.
    assert.equal(writable.said, ["node appends to /opt/etc/passwd: refused", "setpriv: setresuid failed: Operation not permitted"]);
    assert.not.match(writable.passwd, /evil/);
    assertFailing(writable.audit, []);
    assert.is(check(writable.audit, "image.read-only-root").status, "warn");
    assert.match(check(writable.audit, "image.read-only-root").summary, /^\/ is writable \(tmpfs, rw\): the spawner's SETUID and SETGID let code that takes it over become uid 0/);
    assert.match(check(writable.audit, "image.read-only-root").fix!, /--read-only/);

    const readOnly = uidZeroAttempt(body, true);
    assert.equal(readOnly.said, ["node appends to /opt/etc/passwd: refused", "setpriv: setresuid failed: Operation not permitted"]);
    assertFailing(readOnly.audit, []);
    assert.is(check(readOnly.audit, "image.read-only-root").status, "pass", check(readOnly.audit, "image.read-only-root").summary);
    assert.is(check(readOnly.audit, "image.mounts").status, "pass", check(readOnly.audit, "image.mounts").summary);
  });
});

rootTest(SelfCheck, "kernel.protected-regular and -fifos judge the value the kernel file holds: the host's, and 0, 1 and 2 bound over it", () => {
  const body = seededBody();
  const fake = join(scratch, "sysctl");
  try {
    mkdirSync(fake, { recursive: true });
    const host = parse(shDoctor(body, ":", ["--json"]));
    for (const id of ["kernel.protected-regular", "kernel.protected-fifos"]) {
      const path = `/proc/sys/fs/${id.slice("kernel.".length).replace("-", "_")}`;
      const value = sysctlValue(path);
      assert.is(check(host, id).found.value, value ?? null);
      assert.is(check(host, id).status, value === "1" || value === "2" ? "pass" : "warn", check(host, id).summary);
      for (const [written, status] of [["0", "warn"], ["1", "pass"], ["2", "pass"]] as const) {
        writeFileSync(join(fake, written), `${written}\n`);
        const audit = parse(shDoctor(body, ":", ["--json"], { extra: ["--ro-bind", join(fake, written), path] }));
        assert.is(check(audit, id).found.value, written);
        assert.is(check(audit, id).status, status, check(audit, id).summary);
        if (status === "warn") assert.match(check(audit, id).fix!, new RegExp(`sysctl -w fs\\.${path.split("/").pop()}=2`));
      }
    }
  } finally {
    body.cleanup();
  }
});

/*
 * The attack kernel.protected-regular warns about, as the control: in a sticky
 * world-writable directory the agent creates the name first (mode 0666), and
 * the service's Node writes its secret with writeFileSync (O_CREAT|O_TRUNC,
 * no O_EXCL, mode 0600). With fs.protected_regular=0 the secret lands in the
 * agent's file; with 1 the kernel refuses the open (EACCES). The setting is
 * host-wide: it is set for the two attempts and restored in `finally`.
 */
rootTest(SelfCheck, "control: with fs.protected_regular=0 the agent's pre-created /tmp file receives the service's 0600 write; with 1 the open is refused", () => {
  const path = "/proc/sys/fs/protected_regular";
  const original = sysctlValue(path);
  if (original === undefined) {
    process.stderr.write("SKIPPED (no fs.protected_regular: Linux before 4.19)\n");
    return;
  }
  const tmp = mkdtempSync(join(tmpdir(), "clankie-sticky-"));
  chmodSync(tmp, 0o1777);
  const target = join(tmp, "service-secret");
  const as = (uid: number, argv: string[]) => spawnSync("/usr/bin/setpriv", [`--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "--", ...argv], { encoding: "utf8" });
  const attempt = (setting: string) => {
    writeFileSync(path, setting);
    rmSync(target, { force: true });
    const planted = as(IDS.agent, ["/bin/sh", "-c", 'umask 0; : > "$1"', "agent", target]);
    assert.is(planted.status, 0, planted.stderr);
    const wrote = as(IDS.service, [NODE24, "-e", `try { require("node:fs").writeFileSync(${JSON.stringify(target)}, "bearer s3cret", { mode: 0o600 }); console.log("written") } catch (e) { console.log(e.code) }`]);
    return { said: wrote.stdout.trim(), uid: statSync(target).uid, mode: statSync(target).mode & 0o777, content: readFileSync(target, "utf8") };
  };
  try {
    const open = attempt("0");
    assert.equal(open, { said: "written", uid: IDS.agent, mode: 0o666, content: "bearer s3cret" }, "with protected_regular=0 the agent's file holds the secret");
    const shut = attempt("1");
    assert.equal(shut, { said: "EACCES", uid: IDS.agent, mode: 0o666, content: "" }, "with protected_regular=1 the open is refused");
  } finally {
    writeFileSync(path, original);
    rmSync(tmp, { recursive: true, force: true });
  }
  assert.is(sysctlValue(path), original, "the host's setting is restored");
});

rootTest(SelfCheck, "node doctor through runSelfCheck: --probe verifies from inside the agent; the service's declaration turns the label into a boundary", () => {
  inBody(seededBody(), (body) => {
    const audit = parse(nodeDoctor(body, ["--json", "--probe"], { DOCTOR_DECLARE: "1" }));
    assertFailing(audit, []);
    const probes = ["probe", "probe.identity", "probe.capabilities", "probe.no-new-privs", "probe.write-state", "probe.read-credentials", "probe.signal-service", "probe.setpriv-node"];
    for (const id of probes) assert.is(check(audit, id).status, "pass", `${id}: ${check(audit, id).summary}`);
    // Confinement beyond the uid, shown by attempts inside the agent: either outcome, never a failure and never "could not tell".
    const confined = { "probe.seccomp": /a filter of its own$/, "probe.lower-oom-score": /^the agent cannot lower its oom_score_adj: open \/proc\/self\/oom_score_adj for writing: EACCES$/, "probe.abstract-socket": /^the agent cannot connect to an abstract unix socket outside its domain: connect\(@clankie-probe-\d+-[0-9a-f]{16}\), the audit's socket outside the agent's domain: EPERM$/ };
    const open = { "probe.seccomp": /^not confined: the agent runs under 0 seccomp filters \(Seccomp: 0\), no more than this audit's 0/, "probe.lower-oom-score": /^the agent CAN lower its oom_score_adj \(not confined: a raise the shim made can be undone\): wrote 499 over 500 to \/proc\/self\/oom_score_adj$/, "probe.abstract-socket": /^the agent CAN connect to an abstract unix socket outside its domain \(not confined\): connect\(@clankie-probe-\d+-[0-9a-f]{16}\), the audit's socket outside the agent's domain: connected$/ };
    // Where this kernel offers Landlock ABI 6 and seccomp filters, the probe must be confined (the stage did it); elsewhere "not confined" warns.
    const offered = CONFINEMENT_WARNINGS.length === 0;
    for (const id of CONFINED_PROBES) {
      const found = check(audit, id);
      if (offered) {
        assert.is(found.status, "pass", `${id}: ${found.summary}`);
        assert.match(found.summary, confined[id as keyof typeof confined], id);
      } else {
        assert.is(found.status, "warn", `${id}: ${found.summary}`);
        assert.match(found.summary, open[id as keyof typeof open], `${id}: ${found.summary}`);
        assert.match(found.fix!, /agent\.confinement/);
      }
    }
    assert.equal(check(audit, "probe.identity").found.uids, [IDS.agent, IDS.agent, IDS.agent, IDS.agent]);
    assert.match(check(audit, "probe.read-credentials").summary, /EACCES/);
    assert.match(check(audit, "probe.signal-service").summary, new RegExp(`kill\\(${audit.doc.judged.pid}, 0\\): EPERM`));
    assert.match(check(audit, "probe.setpriv-node").summary, /Operation not permitted/);
    assert.is(check(audit, "boundary").status, "pass");
    assert.is(audit.doc.boundary.declared, true);
    assert.match(audit.doc.boundary.source!, /handed to this audit by the service/);
    const confinedWarnings = CONFINED_PROBES.filter((id) => check(audit, id).status === "warn");
    assert.equal(withStatus(audit, "warn"), [...SANDBOX_WARNINGS.filter((id) => id !== "boundary"), ...confinedWarnings].sort());
  });
});

rootTest(SelfCheck, "doctor while a job runs: the job's parent, its grab (perl, node's uid, exactly SETUID and SETGID, its exe closed to the audit), passes processes.capabilities and processes.workspace-exe", () => {
  inBody(seededBody(), (body) => {
    const run = nodeDoctor(body, ["--json"], { DOCTOR_JOB: "1" });
    assert.match(run.stderr, new RegExp(`job's parent: Name: perl Uid: ${IDS.service} ${IDS.service} ${IDS.service} ${IDS.service} CapPrm: 0+c0 CapEff: 0+c0 CapAmb: 0+c0`), run.stderr);
    const audit = parse(run);
    assertFailing(audit, []);
    for (const id of ["processes.capabilities", "processes.workspace-exe", "processes.spawner"]) assert.is(check(audit, id).status, "pass", `${id}: ${check(audit, id).summary}`);
  });
});

rootTest(SelfCheck, "credentials readable by mode: the audit fails state.layout, and the probe, confined by Landlock, still cannot read them", () => {
  inBody(seededBody(), (body) => {
    // The node doctor: --probe needs the service's runSelfCheck, which asks the spawner for the probe (a shell cannot).
    const audit = parse(body.run({ command: ["--", "/bin/sh", "-c", 'set -e\nchmod 0644 /state/credentials.json\nexec "$@"', "doctor", SANDBOX_NODE, "--input-type=module", "-e", NODE_DOCTOR, "--", "--self-check", "--json", "--probe"], extra: MASKS }));
    assertFailing(audit, ["state.layout"]);
    assert.match(check(audit, "probe.read-credentials").summary, /^the agent cannot read the credentials: open \/state\/credentials\.json: EACCES/);
    assert.is(check(audit, "probe.write-state").status, "pass");
  });
});

rootTest(SelfCheck, "process.ids fails when the service's groups differ from node's", () => {
  inBody(seededBody(), (body) => {
    // The capless service cannot change its groups (setgroups EPERM): made by hand, as the root phase leaves it but for the groups.
    const service = ["/usr/bin/setpriv", `--reuid=${IDS.service}`, `--regid=${IDS.service}`, `--groups=${IDS.service}`, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"];
    const env = ["/usr/bin/env", "CLANKIE_SEPARATION=1", `CLANKIE_AGENT_UID=${IDS.agent}`, "CLANKIE_AGENT_USER=clankie-agent", "CLANKIE_AGENT_EXEC=/usr/local/sbin/clankie-agent-exec"];
    const audit = parse(body.run({ as: "root", direct: true, command: [...service, ...env, "/bin/sh", "-c", `${AUDIT} --self-check --json; exit $?`], extra: MASKS }));
    assert.is(check(audit, "process.ids").status, "fail", audit.stdout);
    assert.match(check(audit, "process.ids").summary, /groups 1000 \(want 1000,1002\)/);
  });
});

rootTest(SelfCheck, "a service that holds any capability is misconfigured: mode and process.capabilities fail (beyond ADR 0272, the service holds none); control: the launch's own capless service passes (the healthy doctor above)", () => {
  inBody(seededBody(), (body) => {
    // ADR 0272's shape, made by hand: the service's uid with SETUID+SETGID in every set, as the root phase left it before the spawner.
    const asCapableService = ["/usr/bin/setpriv", `--reuid=${IDS.service}`, `--regid=${IDS.service}`, "--init-groups", "--inh-caps=-all,+setuid,+setgid", "--ambient-caps=-all,+setuid,+setgid", "--bounding-set=-all,+setuid,+setgid", "--no-new-privs", "--"];
    const script = `${AUDIT} --self-check --json; exit $?`;
    const result = body.run({ as: "root", direct: true, command: [...asCapableService, "/bin/sh", "-c", script], extra: MASKS });
    const audit = parse(result);
    assert.is(audit.doc.mode, "misconfigured", audit.stdout);
    assert.ok(withStatus(audit, "fail").includes("mode"), audit.stdout);
    assert.ok(withStatus(audit, "fail").includes("process.capabilities"), audit.stdout);
    assert.match(check(audit, "mode").summary, /the service holds capabilities \(CapInh, CapPrm, CapEff, CapAmb, CapBnd not 0\): it must hold none, the spawner starts agent work/);
    assert.is(audit.doc.boundary.label, "no boundary: the separation is misconfigured");
  });
});

rootTest(SelfCheck, "legacy single-uid body: mode single-uid (a warning), exit 0", () => {
  inBody(seededBody(), (body) => {
    const audit = parse(body.run({ as: "node", command: ["--", AUDIT, "--self-check", "--json", "--probe"], extra: MASKS }));
    assertFailing(audit, []);
    assert.is(audit.doc.mode, "single-uid");
    assert.match(check(audit, "mode").summary, /no agent uid is configured/);
    assert.is(audit.doc.boundary.label, "no boundary: single-uid body, no agent uid is configured");
    assert.is(audit.doc.judged.pid, 1);
    assert.is(audit.doc.auditor.relation, "self");
    assert.is(check(audit, "probe").status, "warn");
    // The layout is the entrypoint's to apply: not applied here, reported, not failed.
    assert.is(check(audit, "state.layout").status, "warn");
    assert.is(check(audit, "workspace.top").status, "warn");
  });
});

rootTest(SelfCheck, "a forged CLANKIE_SEPARATION in a single-uid launch is misconfigured", () => {
  inBody(seededBody(), (body) => {
    const audit = parse(body.run({ as: "node", command: ["--", AUDIT, "--self-check", "--json"], extra: MASKS, env: { CLANKIE_SEPARATION: "1" } }));
    assert.is(audit.doc.mode, "misconfigured");
    assert.ok(withStatus(audit, "fail").includes("mode"));
    assert.is(audit.status, 1);
  });
});

rootTest(SelfCheck, "environment: LD_PRELOAD fails a legacy body; the entrypoint drops it from a separated one", () => {
  inBody(seededBody(), (body) => {
    const env = { LD_PRELOAD: "/nonexistent/preload.so", NODE_OPTIONS: "--require /nonexistent.js" };
    const legacy = parse(body.run({ as: "node", command: ["--", AUDIT, "--self-check", "--json"], extra: MASKS, env }));
    assertFailing(legacy, ["environment"]);
    assert.equal(check(legacy, "environment").found.self, ["LD_PRELOAD", "NODE_OPTIONS"]);
    const separated = parse(shDoctor(body, ":", ["--json"], { env }));
    assertFailing(separated, []);
    assert.equal(check(separated, "environment").found.service.variables, []);
  });
});

rootTest(SelfCheck, "accounts: a missing clankie-workspace group fails, and what depends on it cannot run (never passes)", () => {
  inBody(seededBody({ group: DEFAULT_GROUP.replace(/^clankie-workspace:.*\n/m, "") }), (body) => {
    const audit = parse(body.run({ as: "node", command: ["--", AUDIT, "--self-check", "--json"], extra: MASKS }));
    assertFailing(audit, ["accounts", "state.layout", "state.release", "state.agent-home", "workspace.top", "workspace.marker", "agent.private-jobs"]);
    assert.is(check(audit, "accounts").summary, "group clankie-workspace is missing from /etc/group");
    assert.match(check(audit, "accounts").fix!, /rebuild the image/);
    assert.match(check(audit, "state.layout").summary, /could not check \/state: the users and groups of ADR 0272 are not all defined/);
  });
});

rootTest(SelfCheck, "docker exec as root and as node judge the service, not themselves", async () => {
  const body = seededBody();
  const running = await startBody(body);
  try {
    const root = parse(execInto(running, "root", [AUDIT, "--self-check", "--json", "--probe"]));
    assert.is(root.doc.mode, "separated");
    assert.is(root.doc.judged.name, "MainThread"); // node's main thread: the stand-in service under tini
    assert.is(root.doc.auditor.uid, 0);
    assert.is(root.doc.auditor.relation, "outside");
    // The service's environment is not readable without CAP_SYS_PTRACE: said, never passed.
    assert.is(root.doc.boundary.declared, null);
    assert.is(check(root, "environment").status, "warn");
    assert.is(check(root, "processes.workspace-exe").status, "warn");
    assert.is(check(root, "processes.root").status, "pass");
    assertFailing(root, ["probe"]);
    assert.is(check(root, "probe").summary, "cannot start the probe: this audit has no relay to the spawner (no CLANKIE_PROBE_FD)");
    assert.match(check(root, "probe").fix!, /^run the probe with runSelfCheck\(\["--probe"\]\) in the service process itself/);

    const node = parse(execInto(running, "node", [AUDIT, "--self-check", "--json", "--probe"]));
    assert.is(node.doc.mode, "separated");
    assert.is(node.doc.judged.pid, root.doc.judged.pid);
    assert.equal(node.doc.auditor.capabilities, []);
    assert.is(node.doc.auditor.noNewPrivs, 0);
    assert.is(check(node, "process.capabilities").status, "pass", "the body is judged by the service's credentials, not the exec's");
    assertFailing(node, ["probe"]);
    assert.is(check(node, "probe").summary, check(root, "probe").summary, "node holds no channel to the spawner either");
  } finally {
    running.stop();
    body.cleanup();
  }
});

rootTest(SelfCheck, "processes.root fails while a root process outlives startup", async () => {
  const body = seededBody();
  const running = await startBody(body);
  const sleeper = spawnSync("sh", ["-c", `nsenter -t ${running.pid1} -m -p -i --wd=/ -- /usr/bin/setpriv --no-new-privs -- /usr/bin/sleep 60 >/dev/null 2>&1 & echo $!`], { encoding: "utf8" });
  try {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const audit = parse(execInto(running, "node", [AUDIT, "--self-check", "--json"]));
    assertFailing(audit, ["processes.root"]);
    assert.ok(check(audit, "processes.root").found.processes.shown.some((p: any) => p.name === "sleep"), check(audit, "processes.root").summary);
  } finally {
    running.stop();
    try {
      process.kill(Number(sleeper.stdout.trim()), "SIGKILL");
    } catch {
      /* ended with the namespace */
    }
    body.cleanup();
  }
});

rootTest(SelfCheck, "a directory the doctor cannot read is a failure, never a pass; root reads it", async () => {
  await inBody(seededBody(), async (body) => {
    const doctor = parse(shDoctor(body, "mkdir -m 0700 /state/sealed; touch /state/sealed/inside; chmod 0 /state/sealed", ["--json"]));
    assertFailing(doctor, ["state.layout"]);
    // The walk opens a directory to read it (O_DIRECTORY|O_NOFOLLOW, checked to be the inode lstat saw), and names that call.
    assert.match(check(doctor, "state.layout").summary, /could not read 1 entry under \/state: open \/state\/sealed: EACCES/);
    const running = await startBody(body);
    try {
      const root = parse(execInto(running, "root", [AUDIT, "--self-check", "--json"]));
      assert.is(check(root, "state.layout").status, "pass", check(root, "state.layout").summary);
    } finally {
      running.stop();
    }
  });
});

rootTest(SelfCheck, "a bad option is a usage error: exit 64, one line", () => {
  inBody(seededBody(), (body) => {
    const result = shDoctor(body, ":", ["--bogus"]);
    assert.is(result.status, 64);
    assert.is(result.stdout, "");
    assert.match(result.stderr, /^clankie-separate: unknown --self-check option "--bogus"; use --json and --probe only \(see clankie-separate --help\)$/m);
  });
});

SelfCheck.after(() => rmSync(scratch, { recursive: true, force: true }));
SelfCheck.run();
