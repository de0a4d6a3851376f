/*
 * The fixed paths, names, capabilities, defaults and exit codes the program
 * relies on. Elsewhere, each beside the code that decides by it: the
 * environment policy (src/exec/environment.ts), the system call numbers
 * (src/os/syscalls.ts for perl, src/seccomp-filter.ts for the filter)
 * and the text of the exit codes (src/help.ts). Nothing here is read
 * from the environment: the environment of a privileged program is attacker
 * input until proven otherwise.
 */

/** The only PATH any program started by this project ever sees. */
export const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
export const SYSTEM_PATH_DIRS: readonly string[] = SYSTEM_PATH.split(":");

/** Absolute paths of the tools this program execs. Never resolved through PATH. */
export const TOOLS = {
  setpriv: "/usr/bin/setpriv",
  tini: "/usr/bin/tini",
  /** Runs the verification stage (src/stage/); perl-base is Essential in Debian. */
  perl: "/usr/bin/perl",
  /** A private job's cleanup (find -delete); findutils is Essential in Debian. */
  find: "/usr/bin/find",
} as const;

/** Where the image installs this single executable, under its two names. */
export const INSTALL_DIR = "/usr/local/sbin";
export const ENTRYPOINT_NAME = "clankie-separate";
/** The internal first argument of the inside half of --self-check --probe. */
export const PROBE_AGENT_FLAG = "--probe-agent";
export const AGENT_EXEC_NAME = "clankie-agent-exec";
export const AGENT_EXEC_PATH = `${INSTALL_DIR}/${AGENT_EXEC_NAME}`;

/** Users and groups of ADR 0272. */
export const SERVICE_USER = "node";
export const AGENT_USER = "clankie-agent";
export const WORKSPACE_GROUP = "clankie-workspace";
/**
 * The pool of private-job groups: clankie-private-0 .. -15, gids 1100-1115,
 * no members. A private job holds one of them as a supplementary group for
 * its lifetime (src/agent-exec/private-job.ts).
 */
export const PRIVATE_GROUP_PREFIX = "clankie-private-";
export const PRIVATE_POOL_SIZE = 16;
/** Where private jobs' leases live: root's /run, not /state's filesystem. */
export const PRIVATE_DIR = "/run/clankie-private";

/** Files that define them. Fixed: NSS modules are code and are never consulted. */
export const PASSWD_FILE = "/etc/passwd";
export const GROUP_FILE = "/etc/group";

/** The volumes. */
export const STATE_DIR = "/state";
export const WORKSPACE_DIR = "/workspace";
/** Below STATE_DIR: the release root (open to all but what it keeps private) and the agent's home. */
export const STATE_INSTALL_NAME = "install";
export const STATE_AGENT_NAME = "agent";
/** The agent's home (HOME of agent work, writable in its Landlock domain, made 0700 by the entrypoint). */
export const AGENT_HOME = `${STATE_DIR}/${STATE_AGENT_NAME}`;
/** Below STATE_DIR: where the entrypoint records what it has done (service-only). */
export const STATE_MARKER_NAME = ".clankie-separate";
/** Bump when the /workspace layout contract changes: the next start walks it again. */
export const WORKSPACE_LAYOUT_VERSION = 1;

/** The six capabilities of the launcher command in ADR 0272, in `--cap-add` spelling. */
export const ROOT_CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETPCAP", "SETUID", "SETGID"] as const;
/** The launcher flags of ADR 0272 (docker run): root, every capability dropped but the six, NoNewPrivs. */
export const ADR_LAUNCH_FLAGS: readonly string[] = ["--user", "0:0", "--cap-drop", "ALL", ...ROOT_CAPABILITIES.flatMap((cap) => ["--cap-add", cap]), "--security-opt", "no-new-privileges"];
/** What the spawner keeps: only what starting agent work needs (ADR 0272 gave them to the service, which in this build holds none). */
export const SPAWNER_CAPABILITIES = ["SETUID", "SETGID"] as const;

/** Agent containment defaults (clankie-agent-exec --nproc / --oom-score-adj). */
export const AGENT_DEFAULT_NPROC = 512;
export const AGENT_DEFAULT_OOM_SCORE_ADJ = 500;
/** The signals `clankie-agent-exec --signal` delivers, and so the only ones spawnAgent's killSignal and kill() can use. */
export const AGENT_SIGNALS: readonly NodeJS.Signals[] = ["SIGHUP", "SIGINT", "SIGQUIT", "SIGKILL", "SIGUSR1", "SIGUSR2", "SIGTERM", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGWINCH"];
/** The agent's file mode creation mask: group-writable, so the service can share /workspace. */
export const AGENT_UMASK = 0o002;
/**
 * The service's umask, set by the verification stage of the drop. Nothing for
 * others: /state is 0711, so a file the service writes there after the start
 * with Node's default mode (0666 & ~umask) must not be readable by other, or
 * the agent opens it by name. The group keeps read and write: in /workspace
 * (set-group-ID directories) that group is clankie-workspace, which the agent
 * shares; in /state it is node's own group, which the agent is not in.
 */
export const SERVICE_UMASK = 0o007;

/**
 * Set by spawnAgent in the shim's own environment (never the agent's): the
 * fd of the started marker, the pipe the stage writes "S" to right before
 * it execs the command (src/service/agent-start.ts, src/stage/stage.pl).
 */
export const STARTED_FD_VARIABLE = "CLANKIE_STARTED_FD";

/**
 * The request channel between the service and the spawner (src/agent-exec/
 * spawner.ts): one end of a socketpair(2) the root phase makes, inherited by
 * each at this fd (never found by path), and named to both by this variable.
 */
export const SPAWNER_FD = 3;
export const SPAWNER_FD_VARIABLE = "CLANKIE_SPAWNER_FD";
/** Set by the root phase in the spawner's environment alone: node's uid and the agent's uid, gid and groups (accounts.ts, formatAgentIds). */
export const SPAWNER_IDS_VARIABLE = "CLANKIE_SPAWNER_IDS";
/** The spawner's first argument: clankie-agent-exec --spawner, started by the root phase alone. */
export const SPAWNER_FLAG = "--spawner";
/**
 * --self-check --probe from the service (runSelfCheck): the fd on which the
 * audit asks the service to start the probe through the spawner (it holds no
 * capability to start it), and reads back how it ended.
 */
export const PROBE_FD_VARIABLE = "CLANKIE_PROBE_FD";
/** The service's pid, which the service hands the probe in its environment (runSelfCheck's relay), never argv. */
export const PROBE_SERVICE_PID_VARIABLE = "CLANKIE_PROBE_SERVICE_PID";
/** The name (without its leading NUL) of the abstract unix socket the audit listens on, handed to the probe likewise. */
export const PROBE_SOCKET_VARIABLE = "CLANKIE_PROBE_SOCKET";

/** Variables the entrypoint sets for the service (ADR 0272; src/entrypoint/service-env.ts). */
export const SERVICE_ENV = {
  separation: "CLANKIE_SEPARATION",
  agentUser: "CLANKIE_AGENT_USER",
  agentUid: "CLANKIE_AGENT_UID",
  agentExec: "CLANKIE_AGENT_EXEC",
  /** Set by the service (never by this program) once every seam runs through the shim. */
  boundary: "CLANKIE_BOUNDARY",
} as const;

/**
 * Exit codes. 64-78 follow sysexits(3); 125-127 follow tini and the shells.
 * What each means, for README.md and `--help`, is EXIT_DESCRIPTIONS in src/help.ts.
 */
export const EXIT = {
  ok: 0,
  /** --self-check: at least one check failed. */
  checkFailed: 1,
  usage: 64,
  /** A file or tree we were asked to take over breaks the rules (planted link, device, ...), or what --signal or --private-cleanup names does not exist. */
  dataRefused: 65,
  /** A user or group of ADR 0272 is missing or wrong in /etc/passwd or /etc/group. */
  noUser: 67,
  /** The launch does not provide what the mode needs (NoNewPrivs, capabilities, caller uid), or the agent cannot be started as asked (--cwd, --pgid, session). */
  launchRefused: 77,
  /** An operating-system call failed (carries syscall, path and errno). */
  osError: 71,
  /** The agent uid already runs more tasks than --nproc (the verification stage refused), or every private-job group is leased. */
  busy: 75,
  /** After a privilege change the kernel reports something other than what was asked. */
  verifyFailed: 70,
  /** The command exists but is not executable or is refused by the exec rules. */
  notExecutable: 126,
  notFound: 127,
} as const;

