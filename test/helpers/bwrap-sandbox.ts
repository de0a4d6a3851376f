/*
 * The bubblewrap variant of the launch sandbox, used by the audit's tests
 * (test/sandbox/self-check.test.ts), which need bwrap's --ro-bind masks and
 * nsenter into a running body, and by `npm run bench` (bench/), which puts
 * bodies where it wants its trees (a tmpfs, a disk) and can share one body's
 * /state with another. bwrap always sets NoNewPrivs, so tests of a
 * launch without it use test/helpers/sandbox.ts (unshare + chroot) instead.
 *
 * Reproduces, with bubblewrap and setpriv, the container
 * launch of ADR 0272 on this machine:
 *
 *   docker run --user 0:0 --cap-drop ALL --cap-add CHOWN --cap-add DAC_OVERRIDE
 *     --cap-add FOWNER --cap-add SETPCAP --cap-add SETUID --cap-add SETGID
 *     --security-opt no-new-privileges IMAGE CMD...
 *
 * uid 0; those six capabilities in the permitted, effective and bounding sets;
 * empty inheritable and ambient sets; NoNewPrivs; its own pid namespace with
 * the entrypoint as pid 1; private /state, /workspace, /etc/passwd and
 * /etc/group. bwrap run by root leaves the bounding set full and fills the
 * inheritable and ambient sets, so setpriv shapes them before the exec.
 *
 * Inside: the built executable at /usr/local/sbin (as in the image), this
 * repository read-only at /opt/clankie, a fresh tmpfs at /tmp.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DIST, REPO } from "./paths.ts";

// The paths, ids, accounts and /proc parsing are the namespace sandbox's: one definition.
import { DEFAULT_GROUP, DEFAULT_PASSWD, IDS, ROOT_CAPS, SANDBOX_REPO, shellQuote, SYSTEM_PATH } from "./sandbox.ts";
export { DEFAULT_GROUP, DEFAULT_PASSWD, IDS, ROOT_CAPS, SANDBOX_FIXTURES, SANDBOX_NODE, SANDBOX_REPO, shellQuote, statusFields, SYSTEM_PATH, type StatusFields } from "./sandbox.ts";

/** What Docker gives a root launch: the environment the benchmark's hyperfine and launches run with. */
export const LAUNCH_ENV: Readonly<Record<string, string>> = { PATH: SYSTEM_PATH, HOME: "/root", HOSTNAME: "body" };

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
  /** Extra bwrap arguments. */
  extra?: readonly string[];
  /** More binds: [host path, path inside, "ro" | "rw"]. */
  binds?: readonly (readonly [string, string, "ro" | "rw"])[];
  timeoutMs?: number;
  input?: string;
}

export class Body {
  readonly dir: string;
  readonly state: string;
  readonly workspace: string;
  readonly passwdFile: string;
  readonly groupFile: string;

  readonly usr: string;

  /**
   * `dir`: where the body lives (default a new directory in the system's
   * temporary directory); `usr`: the directory bound as /usr (default the
   * host's); `state`, `workspace`: another body's, to share.
   */
  constructor(options: { passwd?: string; group?: string; dir?: string; usr?: string; state?: string; workspace?: string } = {}) {
    if (options.dir === undefined) {
      this.dir = mkdtempSync(join(tmpdir(), "clankie-body-"));
    } else {
      this.dir = options.dir;
      mkdirSync(this.dir, { recursive: true });
      chmodSync(this.dir, 0o755);
    }
    this.usr = options.usr ?? "/usr";
    this.state = options.state ?? join(this.dir, "state");
    this.workspace = options.workspace ?? join(this.dir, "workspace");
    mkdirSync(this.state, { recursive: true, mode: 0o755 });
    mkdirSync(this.workspace, { recursive: true, mode: 0o755 });
    this.passwdFile = join(this.dir, "passwd");
    this.groupFile = join(this.dir, "group");
    writeFileSync(this.passwdFile, options.passwd ?? DEFAULT_PASSWD, { mode: 0o644 });
    writeFileSync(this.groupFile, options.group ?? DEFAULT_GROUP, { mode: 0o644 });
  }

  /** argv of the whole launch, starting with bwrap. */
  argv(options: LaunchOptions): string[] {
    const as = options.as ?? "root";
    const nnp = options.noNewPrivs ?? as === "root";
    const bwrap = [
      "/usr/bin/bwrap",
      "--ro-bind", this.usr, "/usr",
      "--symlink", "usr/bin", "/bin",
      "--symlink", "usr/lib", "/lib",
      "--symlink", "usr/lib64", "/lib64",
      "--symlink", "usr/sbin", "/sbin",
      "--ro-bind", "/etc", "/etc",
      "--ro-bind", this.passwdFile, "/etc/passwd",
      "--ro-bind", this.groupFile, "/etc/group",
      "--bind", this.state, "/state",
      "--bind", this.workspace, "/workspace",
      "--ro-bind", DIST, "/usr/local/sbin",
      "--perms", "0755", "--dir", "/opt",
      "--ro-bind", REPO, SANDBOX_REPO,
      "--proc", "/proc",
      "--dev", "/dev",
      "--perms", "1777", "--tmpfs", "/tmp",
      "--unshare-pid",
      "--unshare-ipc",
      "--as-pid-1",
      "--die-with-parent",
      ...(options.binds ?? []).flatMap(([host, inside, how]) => [how === "rw" ? "--bind" : "--ro-bind", host, inside]),
      ...(options.extra ?? []),
      "--",
    ];
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
    const inner = [...bwrap, ...shape, ...program];
    if (!options.tty) return inner;
    return ["script", "-qefc", inner.map(shellQuote).join(" "), "/dev/null"];
  }

  environment(options: LaunchOptions): Record<string, string> {
    const base: Record<string, string> = { PATH: SYSTEM_PATH, HOME: options.as === "node" ? "/home/node" : "/root", HOSTNAME: "body" };
    return { ...base, ...(options.env ?? {}) };
  }

  run(options: LaunchOptions): SpawnSyncReturns<string> {
    const [file, ...args] = this.argv(options);
    return spawnSync(file!, args, {
      encoding: "utf8",
      env: this.environment(options),
      timeout: options.timeoutMs ?? 60_000,
      input: options.input,
      maxBuffer: 32 << 20,
    });
  }

  start(options: LaunchOptions): ChildProcess {
    const [file, ...args] = this.argv(options);
    return spawn(file!, args, { env: this.environment(options), stdio: ["pipe", "pipe", "pipe"] });
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export function haveBubblewrap(): boolean {
  return spawnSync("bwrap", ["--version"]).status === 0;
}
