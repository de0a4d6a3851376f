/* --help and --version text, and what each exit code of constants.ts means. */
import { ADR_LAUNCH_FLAGS, AGENT_DEFAULT_NPROC, AGENT_DEFAULT_OOM_SCORE_ADJ, EXIT, PRIVATE_DIR, SYSTEM_PATH } from "./constants.ts";

/** What each exit code means: `--help` prints this table and README.md holds the same rows (test/unit/project/docs.test.ts). */
export const EXIT_DESCRIPTIONS: ReadonlyArray<readonly [number, string]> = [
  [EXIT.ok, "success (--version, --help, a passing --self-check); otherwise the exec'd command's own status"],
  [EXIT.checkFailed, "--self-check: at least one check failed"],
  [EXIT.usage, "bad command line: unknown option, missing --, empty command, an --allow-write (allowWrite) under /state outside /state/agent, a --pgid that is the shim's own process group or its caller's, a CLANKIE_STARTED_FD that is no open inheritable fd or is also a --keep-fd, a NUL byte in an argument or an environment value; the spawner: a spawn request that names no command or no holder's pid, holds a NUL byte in any field (its holder, its socket's name), or names an environment variable other than the agent's carried ones (CLANKIE_ENV_NAME) and CLANKIE_STARTED_FD, a CLANKIE_SPAWNER_FD that is not an fd of 3 or more, or a CLANKIE_SPAWNER_IDS that is not node's uid and the agent's uid, gid and groups (started by hand)"],
  [EXIT.dataRefused, "a file under /state or /workspace breaks the rules and was left alone (planted link, device, foreign hard link); or a path named for the agent's confinement leads through a symbolic link; or --signal or --private-cleanup names what does not exist (no such agent process group, no recorded lease); the spawner: a stop of a process group it did not start, or a release of what is not an ended private job of its own"],
  [EXIT.noUser, "node, clankie-agent or clankie-workspace missing or wrong in /etc/passwd or /etc/group (or a clankie-private-N group wrong; none at all refuses --private-job only)"],
  [EXIT.verifyFailed, "after a privilege change the kernel reports other ids, groups, capabilities or NoNewPrivs than asked (for the agent also: a terminal, no session of its own, a stray fd, a Landlock domain or seccomp filter not in force)"],
  [EXIT.osError, "an operating-system call failed; the message names the call, the path and the errno code; spawnAgent, signalAgent: the spawner has ended or did not answer a spawn within 30 s (the service then exits 71 for the launcher's restart policy), or its zygote could not make a grab (EAGAIN: node's uid at its process limit)"],
  [EXIT.busy, "clankie-agent-exec: the agent uid already runs more tasks than --nproc allows (RLIMIT_NPROC), or every private-job group is leased (--private-job), or --private-cleanup names a pid that a process holding the lease runs under, or a lease whose guard ended before its job (kept until a restart); try again when agent work has ended"],
  [EXIT.launchRefused, "the launch lacks what the mode needs: NoNewPrivs, a capability, the caller is the wrong uid, or the kernel cannot confine agent work as --strict-confinement, --no-network or --private-job asks; for the agent also: a --cwd it cannot enter, a --pgid that is not the agent's, no session of its own, a private job's HOME it cannot make; the spawner: a spawn whose holder (or acceptor) is not a capless process of the service's uid, or whose socket another process holds; spawnAgent: no spawner (a body launched single-uid)"],
  [EXIT.notExecutable, "the command is refused by the exec rules (writable by others, foreign owner) or cannot be executed (execve(2) fails with any error but ENOENT, as in a shell)"],
  [EXIT.notFound, "the command was not found in the fixed system PATH, or execve(2) says ENOENT (a #! interpreter that does not exist, as in a shell)"],
];
import { builtInBundleSha256, PROGRAM_VERSION } from "./build-info.ts";

export function versionText(program: string): string {
  return [
    `${program} ${PROGRAM_VERSION}`,
    `node ${process.version}`,
    `bundle sha256 ${builtInBundleSha256() ?? "unknown (not running as a single executable)"}`,
  ].join("\n");
}

export function helpText(): string {
  return `clankie-separate ${PROGRAM_VERSION}: run model-directed work as a second uid (ADR 0272)

One executable, two names; the name it is started as picks the role.

clankie-separate [--] SERVICE-COMMAND [ARG...]
  The image's ENTRYPOINT. Started as any uid but 0 it execs the service
  command unchanged. Started as root with the flags of ADR 0272,
    docker run ${ADR_LAUNCH_FLAGS.join(" ")}
  it makes /state service-only, gives /workspace the clankie-workspace group,
  starts the spawner as node keeping only SETUID and SETGID, and runs the
  service as node with no capability, with umask 0007.

clankie-separate --self-check [--json] [--probe]
  Audits the body: mode, process, users, /state, /workspace, image,
  processes, environment and kernel settings. --probe starts a probe as the
  agent and reports what it could and could not do.

clankie-agent-exec [--cwd DIR] [--env NAME]... [--keep-fd N]...
                   [--nproc N] [--oom-score-adj N] [--allow-write PATH]...
                   [--allow-read PATH]... [--deny-connect PORT]...
                   [--deny-bind PORT]... [--strict-confinement] [--no-network]
                   [--private-job] -- COMMAND [ARG...]
  The spawn request's form: spawnAgent sends these arguments to the
  spawner, which execs COMMAND as clankie-agent with no
  capabilities, NoNewPrivs, a new session without a controlling terminal,
  umask 0002, HOME /state/agent and PATH ${SYSTEM_PATH},
  in a Landlock domain of its own (write only below /workspace, /tmp,
  /var/tmp, /dev/shm and /state/agent; read the image and /state/install,
  no other file of /state; no abstract unix socket or signal outside the
  domain) and under a seccomp filter (no io_uring, ptrace beyond the job
  (Landlock's rule), new namespaces, keyrings, bpf, perf_event_open,
  userfaultfd, TIOCSTI; no change to another process's limits, priority,
  scheduling or I/O priority: only pid 0, the caller; only unix, TCP, UDP,
  ping and NETLINK_ROUTE sockets, so no MPTCP). Where the kernel offers
  less, the rest still applies and --self-check says so.
    --cwd DIR            working directory (default /workspace)
    --env NAME           pass NAME with its value from the shim's environment
    --keep-fd N          keep fd N (17 or higher) open for the command
    --nproc N            RLIMIT_NPROC of the agent uid (default ${AGENT_DEFAULT_NPROC})
    --oom-score-adj N    oom_score_adj of the agent work (default ${AGENT_DEFAULT_OOM_SCORE_ADJ})
    --allow-write PATH   also let it write below PATH (absolute, no symlinks;
                         outside /state, or under /state/agent: 64 otherwise)
    --allow-read PATH    also let it read and execute below PATH
    --deny-connect PORT  no TCP connect to PORT (Landlock ABI 4; costs about
                         50 ms a spawn: Landlock allows ports, one rule each;
                         UDP to PORT is not covered)
    --deny-bind PORT     no TCP bind of PORT (likewise; a UDP bind still works)
    --no-network         no socket but unix sockets (no IPv4, IPv6 or
                         netlink); fds passed with --keep-fd stay usable;
                         refused (exit ${EXIT.launchRefused}) without the seccomp filter
    --strict-confinement refuse (exit ${EXIT.launchRefused}) unless the kernel applies all of
                         it: Landlock ABI 6 or later and the seccomp filter
    --private-job        a job no other agent job can reach: one group of
                         the pool clankie-private-0..15, HOME and TMPDIR in
                         ${PRIVATE_DIR}/N, which only that group can enter;
                         writes only /workspace, there and --allow-write
                         paths; reads nothing of
                         /tmp, /var/tmp, /dev/shm, /state/agent; no SysV IPC
                         or POSIX queue. Refused (exit ${EXIT.launchRefused}) without Landlock
                         ABI 6 and seccomp; exit ${EXIT.busy} when the pool is leased
  CLANKIE_STARTED_FD=N in its environment (spawnAgent sets it): fd N, an
  inheritable pipe, gets "S" right before COMMAND is exec'd, and is closed
  at that exec: without "S", the exit code is a refusal, not COMMAND's.

clankie-agent-exec --spawner
  The resident spawner, started by the root phase alone (node, SETUID and
  SETGID only), beside the service (no capability), with the request
  channel at fd CLANKIE_SPAWNER_FD and node's and the agent's ids in
  CLANKIE_SPAWNER_IDS (SERVICE:UID:GID:GROUPS). The one path to agent
  work: it starts only what the service asks (its one perl zygote forks a
  grab per job), and stops and releases only jobs it started.
  Run by the service or by docker exec --user node, every form is refused
  (77: the caller holds no SETGID, SETUID).

clankie-agent-exec --private-cleanup PID
  Ends the lease of private job PID once it has exited: kills what still
  holds its group, removes its directory. The spawner runs it when a private
  job has ended. Refused (exit ${EXIT.busy}) while a process with that pid holds the
  lease's group: the job has not ended, or its pid went to a new private job.

clankie-agent-exec --signal SIGNAL --pgid PGID
  Delivers SIGNAL to the agent's process group PGID, as the agent. Run by
  hand it is refused (77) like every form but --spawner; the service stops
  a job with signalAgent or kill() (timeout, cancelSignal), which the
  spawner delivers through the same signal stage. The way to stop a job:
  kill(1) from another agent job answers EPERM (its own domain).

Both: --help, --version. --version prints the program and Node versions and
the bundle's SHA-256 recorded at build time; --self-check recomputes it from
the executable itself and fails on a difference.

Exit codes:
${EXIT_DESCRIPTIONS.map(([code, text]) => `  ${String(code).padStart(3)}  ${text}`).join("\n")}
`;
}
