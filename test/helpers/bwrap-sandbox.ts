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
 *   docker run ADR_LAUNCH_FLAGS (src/constants.ts) IMAGE CMD...
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
import { spawnSync } from "node:child_process";
import { DIST, REPO } from "./paths.ts";

// The paths, ids, accounts and /proc parsing are the namespace sandbox's: one definition.
import { LaunchBody, launchTail, type LaunchOptions as BaseLaunchOptions, SANDBOX_REPO, SYSTEM_PATH, withTerminal } from "./sandbox.ts";
export { DEFAULT_GROUP, DEFAULT_PASSWD, IDS, ROOT_CAPS, SANDBOX_FIXTURES, SANDBOX_NODE, SANDBOX_REPO, shellQuote, statusFields, SYSTEM_PATH, type StatusFields } from "./sandbox.ts";

/** What Docker gives a root launch: the environment the benchmark's hyperfine and launches run with. */
export const LAUNCH_ENV: Readonly<Record<string, string>> = { PATH: SYSTEM_PATH, HOME: "/root", HOSTNAME: "body" };

export interface LaunchOptions extends BaseLaunchOptions {
  /** Extra bwrap arguments. */
  extra?: readonly string[];
}

export class Body extends LaunchBody<LaunchOptions> {
  readonly usr: string;

  /**
   * `dir`: where the body lives (default a new directory in the system's
   * temporary directory); `usr`: the directory bound as /usr (default the
   * host's); `state`, `workspace`: another body's, to share.
   */
  constructor(options: { passwd?: string; group?: string; dir?: string; usr?: string; state?: string; workspace?: string } = {}) {
    super(options);
    this.usr = options.usr ?? "/usr";
  }

  /** argv of the whole launch, starting with bwrap. */
  argv(options: LaunchOptions): string[] {
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
    return withTerminal(options, [...bwrap, ...launchTail(options)]);
  }
}

export function haveBubblewrap(): boolean {
  return spawnSync("bwrap", ["--version"]).status === 0;
}
