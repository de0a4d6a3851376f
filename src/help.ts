/* --help and --version text. The exit-code table comes from constants.ts. */
import { AGENT_DEFAULT_NPROC, AGENT_DEFAULT_OOM_SCORE_ADJ, EXIT, EXIT_DESCRIPTIONS, PRIVATE_DIR, SYSTEM_PATH } from "./constants.ts";
import { builtInBundleSha256, PROGRAM_VERSION } from "./build-info.ts";

export function versionText(program: string): string {
  return [
    `${program} ${PROGRAM_VERSION}`,
    `node ${process.version}`,
    `bundle sha256 ${builtInBundleSha256() ?? "unknown (not running as a single executable)"}`,
  ].join("\n");
}

function exitTable(): string {
  return EXIT_DESCRIPTIONS.map(([code, text]) => `  ${String(code).padStart(3)}  ${text}`).join("\n");
}

export function helpText(): string {
  return `clankie-separate ${PROGRAM_VERSION}: run model-directed work as a second uid (ADR 0272)

One executable, two names; the name it is started as picks the role.

clankie-separate [--] SERVICE-COMMAND [ARG...]
  The image's ENTRYPOINT. Started as any uid but 0 it execs the service
  command unchanged. Started as root (docker run --user 0:0 --cap-drop ALL
  --cap-add CHOWN --cap-add DAC_OVERRIDE --cap-add FOWNER --cap-add SETPCAP
  --cap-add SETUID --cap-add SETGID --security-opt no-new-privileges) it makes
  /state service-only, gives /workspace the clankie-workspace group, and
  drops to node keeping only SETUID and SETGID, with umask 0007.

clankie-separate --self-check [--json] [--probe]
  Audits the body: mode, process, users, /state, /workspace, image,
  processes, environment and kernel settings. --probe starts a probe as the
  agent and reports what it could and could not do.

clankie-agent-exec [--cwd DIR] [--env NAME]... [--keep-fd N]...
                   [--nproc N] [--oom-score-adj N] [--allow-write PATH]...
                   [--allow-read PATH]... [--deny-connect PORT]...
                   [--deny-bind PORT]... [--strict-confinement] [--no-network]
                   [--private-job] -- COMMAND [ARG...]
  Run by the service only: execs COMMAND as clankie-agent with no
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
    --allow-write PATH   also let it write below PATH (absolute, no symlinks)
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
                         writes only /workspace and there; reads nothing of
                         /tmp, /var/tmp, /dev/shm, /state/agent; no SysV IPC
                         or POSIX queue. Refused (exit ${EXIT.launchRefused}) without Landlock
                         ABI 6 and seccomp; exit ${EXIT.busy} when the pool is leased

clankie-agent-exec --private-cleanup PID
  Ends the lease of private job PID once it has exited: kills what still
  holds its group, removes its directory. spawnAgent calls it.

clankie-agent-exec --signal SIGNAL --pgid PGID
  Delivers SIGNAL to the agent's process group PGID, as the agent. The way to
  stop a job: kill(1) from another agent job answers EPERM (its own domain).

Both: --help, --version. --version prints the program and Node versions and
the bundle's SHA-256 recorded at build time; --self-check recomputes it from
the executable itself and fails on a difference.

Exit codes:
${exitTable()}
`;
}
