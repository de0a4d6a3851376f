/*
 * What confines agent work beyond its uid, as pure data for the verification
 * stage (src/stage/), which applies it in the process that becomes the
 * agent's command:
 *
 * - A Landlock domain of its own per spawn (landlock(7)). Write only under
 *   AGENT_WRITABLE_PATHS and to AGENT_DEVICE_PATHS; read and execute the
 *   image (every top-level directory but /state) and /state/install; nothing
 *   else under /state, whatever its mode, and no write anywhere under /proc
 *   (so /proc/self/oom_score_adj cannot be lowered again). With ABI 6 the
 *   domain is scoped: no abstract unix socket and no signal reaches outside
 *   it, and since every spawn is its own domain, one agent job cannot signal
 *   another. Landlock also limits ptrace(2) (and so /proc/PID/environ) to
 *   processes in the same domain or below. With ABI 4, TCP ports the service
 *   names can be denied for connect(2) and bind(2).
 * - A seccomp filter (seccomp(2)) that answers EPERM to what no agent job
 *   needs and Docker's default profile still allows or allows to root:
 *   io_uring, ptrace (only without a Landlock domain, which confines it to
 *   the domain and below), process_vm_readv/writev, pidfd_getfd, process_madvise,
 *   process_mrelease, new namespaces, setns, keyrings, bpf, perf_event_open,
 *   userfaultfd, clone(2) with CLONE_PARENT (a child of the service's that
 *   the service would never reap), and the TIOCSTI/TIOCLINUX ioctls; and to a change of another
 *   process's limits, priority, scheduling, I/O priority or memory placement,
 *   which Landlock does not scope and the kernel allows between processes of
 *   one uid. clone3(2) answers ENOSYS, as in Docker's profile: its flags live
 *   in memory a filter cannot read, and glibc falls back to clone(2), whose
 *   flags it can. socket(2) makes unix, TCP, UDP, ping and NETLINK_ROUTE
 *   sockets only (Landlock's port rules see TCP alone: MPTCP would pass
 *   them), or unix sockets only with network "none".
 *
 * - A private job (privateDir set, src/agent-exec/private-job.ts) gets a
 *   narrower domain: it writes only /workspace, its own lease directory and
 *   the service's --allow-write paths (which other jobs given them reach too),
 *   and reads and executes the image but not /tmp, /var/tmp, /dev/shm or
 *   /state/agent, where other jobs write; its filter also refuses SysV IPC
 *   and POSIX message queues (ENOSYS), objects of the IPC namespace that
 *   every job of the uid could otherwise open.
 *
 * The Landlock rules are emitted here with full access masks; the stage ANDs
 * each with what the kernel's ABI handles (and, for a path that is not a
 * directory, with what a file may hold), applies them best effort by the
 * ABI, and refuses instead with `strict`, or, for network "none", when the
 * seccomp filter cannot be installed.
 */
import { readdirSync } from "node:fs";
import { AGENT_HOME, STATE_DIR, STATE_INSTALL_NAME, WORKSPACE_DIR } from "./constants.ts";

/** Where agent work may create, write, remove and execute files. */
export const AGENT_WRITABLE_PATHS: readonly string[] = [WORKSPACE_DIR, "/tmp", "/var/tmp", "/dev/shm", AGENT_HOME];
/** The device files a shell needs to write (and to use as terminals: /dev/ptmx is where posix_openpt(3) opens a pty master, for tmux, script and expect, when it is not a link into /dev/pts). */
export const AGENT_DEVICE_PATHS: readonly string[] = ["/dev/null", "/dev/zero", "/dev/tty", "/dev/ptmx", "/dev/pts"];
/** Read and execute below /state. */
export const AGENT_READABLE_PATHS: readonly string[] = [`${STATE_DIR}/${STATE_INSTALL_NAME}`];
/** Top-level directories left out of "read and execute the image". */
export const AGENT_HIDDEN_TOP_LEVEL: readonly string[] = [STATE_DIR.slice(1)];

export interface ConfinementRequest {
  /** Refuse the spawn when the kernel or engine cannot apply all of it. */
  strict: boolean;
  /** More trees the agent may write (and read), beyond AGENT_WRITABLE_PATHS. */
  allowWrite: readonly string[];
  /** More trees the agent may read and execute. */
  allowRead: readonly string[];
  /** TCP ports the agent may not connect(2) to. */
  denyConnect: readonly number[];
  /** TCP ports the agent may not bind(2). */
  denyBind: readonly number[];
  /** "none": no socket but unix sockets (the seccomp filter; a spawn that cannot have it is refused). */
  network: "all" | "none";
  /** A private job's lease directory (/run/clankie-private/N); undefined for every other job. */
  privateDir?: string | undefined;
}

export const NO_EXTRA_CONFINEMENT: ConfinementRequest = { strict: false, allowWrite: [], allowRead: [], denyConnect: [], denyBind: [], network: "all" };

/**
 * Why an extra path would undo the domain, or undefined when it is fine: it
 * must be absolute and normal (no ".", "..", "//" or trailing "/"), and not
 * / or /state, whose trees hold what the domain keeps from the agent.
 * Whether it exists, and that no component is a symbolic link, is for the
 * stage to check as the agent, when it opens it.
 */
export function extraPathProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return "is not absolute";
  if (path.includes("\0")) return "contains a NUL byte";
  const parts = path.slice(1).split("/");
  if (parts.some((part) => part === "" || part === "." || part === "..")) return "is not a normal path (empty, . or .. component, or a trailing /)";
  if (path === STATE_DIR) return `would open all of ${STATE_DIR}`;
  return undefined;
}

/**
 * Pure: what is wrong with PATH as a tree the agent may write below (an
 * --allow-write path, spawnAgent's allowWrite), besides what
 * extraPathProblem finds, which the shim's parser asks first.
 * Every start walks /state but the agent's home (src/layout/state.ts prunes
 * /state/agent) and refuses what agent work can plant there: a second hard
 * link to its own file stopped it (65), a deep chain of long names killed
 * it (71). So a tree the agent may write lives outside /state, or in
 * /state/agent. Lexical: no component may be a symbolic link (the stage
 * refuses one when it opens the path).
 */
export function writablePathProblem(path: string): string | undefined {
  const inAgentHome = path === AGENT_HOME || path.startsWith(`${AGENT_HOME}/`);
  if (path.startsWith(`${STATE_DIR}/`) && !inAgentHome) return `is under ${STATE_DIR}, which every start walks: agent work that may write there can stop the next start (a hard link, a deep tree)`;
  return undefined;
}

/** How to fix a writablePathProblem that names /state. */
export const WRITABLE_PATH_FIX = `give the agent a directory outside ${STATE_DIR} (under /workspace, say), or under ${AGENT_HOME}`;

/* ---- The Landlock rules (landlock(7), include/uapi/linux/landlock.h) ---- */

/** LANDLOCK_ACCESS_FS_*: bits 0-12 ABI 1, REFER 13 (ABI 2), TRUNCATE 14 (ABI 3), IOCTL_DEV 15 (ABI 5). */
export const FS_ACCESS = {
  execute: 1 << 0,
  writeFile: 1 << 1,
  readFile: 1 << 2,
  readDir: 1 << 3,
  truncate: 1 << 14,
  ioctlDev: 1 << 15,
  /** Every right of the highest ABI: the stage keeps what its kernel handles. */
  all: 0xffff,
} as const;
/** LANDLOCK_ACCESS_NET_* (ABI 4). */
export const NET_ACCESS = { bindTcp: 1 << 0, connectTcp: 1 << 1 } as const;
/** LANDLOCK_SCOPE_* (ABI 6). */
export const SCOPE = { abstractUnixSocket: 1 << 0, signal: 1 << 1 } as const;

const READ_EXECUTE = FS_ACCESS.execute | FS_ACCESS.readFile | FS_ACCESS.readDir;
const DEVICE = FS_ACCESS.writeFile | FS_ACCESS.readFile | FS_ACCESS.truncate | FS_ACCESS.ioctlDev;

/** `must`: the service asked for the path, so one the agent cannot open, or reached through a symbolic link, refuses the spawn; a default one is left out. */
export type PathRule = { access: number; must: boolean; path: string };
/** The same access for every TCP port from `low` to `high`. */
export type PortRule = { access: number; low: number; high: number };

/** The top-level directories of `/` (not symbolic links), as absolute paths, but the hidden ones. */
export function imageTopLevel(root = "/"): string[] {
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !AGENT_HIDDEN_TOP_LEVEL.includes(entry.name))
    .map((entry) => `/${entry.name}`)
    .sort();
}

/**
 * TCP rules are an allow list (a domain that handles connect denies every
 * port without a rule): each port gets every handled right but the ones
 * denied to it, in runs of equal access.
 */
export function portRules(denyConnect: readonly number[], denyBind: readonly number[]): { net: number; ports: PortRule[] } {
  const net = (denyConnect.length ? NET_ACCESS.connectTcp : 0) | (denyBind.length ? NET_ACCESS.bindTcp : 0);
  if (net === 0) return { net, ports: [] };
  const denied = new Map<number, number>();
  for (const port of denyConnect) denied.set(port, (denied.get(port) ?? 0) | NET_ACCESS.connectTcp);
  for (const port of denyBind) denied.set(port, (denied.get(port) ?? 0) | NET_ACCESS.bindTcp);
  const ports: PortRule[] = [];
  for (let port = 0; port <= 65535; port++) {
    const access = net & ~(denied.get(port) ?? 0);
    const last = ports.at(-1);
    if (last && last.access === access && last.high === port - 1) last.high = port;
    else if (access !== 0) ports.push({ access, low: port, high: port });
  }
  return { net, ports };
}

/** The agent's Landlock rules for `request`, given the image's top-level directories. */
export function landlockRules(request: ConfinementRequest, topLevel: readonly string[]): { net: number; scope: number; paths: PathRule[]; ports: PortRule[] } {
  const rule = (access: number, must: boolean) => (path: string): PathRule => ({ access, must, path });
  return {
    ...portRules(request.denyConnect, request.denyBind),
    scope: SCOPE.abstractUnixSocket | SCOPE.signal,
    paths: [
      // Listing / (ls /, find /, globs): hierarchical, so READ_DIR reaches
      // every directory below, /state's too; reading and executing files
      // below /state is still granted only by the rules that follow, and
      // listing /state itself is kept from the agent by its mode (0711).
      rule(FS_ACCESS.readDir, false)("/"),
      ...topLevel.map(rule(READ_EXECUTE, false)),
      ...(request.privateDir === undefined ? AGENT_WRITABLE_PATHS : [WORKSPACE_DIR]).map(rule(FS_ACCESS.all, false)),
      ...(request.privateDir === undefined ? [] : [request.privateDir]).map(rule(FS_ACCESS.all, true)),
      ...request.allowWrite.map(rule(FS_ACCESS.all, true)),
      ...AGENT_DEVICE_PATHS.map(rule(DEVICE, false)),
      ...AGENT_READABLE_PATHS.map(rule(READ_EXECUTE, false)),
      ...request.allowRead.map(rule(READ_EXECUTE, true)),
    ],
  };
}

/** The stage's confinement keys (src/stage/stage.pl, "confinement"). A private job's `topLevel` is its lease's tree (privateImageTree, src/agent-exec/private-job.ts), never the image's. */
export function confinementKeys(request: ConfinementRequest, options: { arch?: string; topLevel?: readonly string[] } = {}): string[] {
  const topLevel = options.topLevel ?? (request.privateDir === undefined ? imageTopLevel() : undefined);
  if (topLevel === undefined) throw new Error(`a private job's confinement came without its image tree (privateImageTree): ${request.privateDir}`);
  const rules = landlockRules(request, topLevel);
  const sysv = request.privateDir !== undefined;
  const hex = (n: number) => n.toString(16);
  return [
    `confine=${request.strict ? "strict" : "best"}`,
    `net=${hex(rules.net)}`,
    `scope=${hex(rules.scope)}`,
    ...rules.paths.map((r) => `path=${hex(r.access)}:${r.must ? "must" : "may"}:${r.path}`),
    ...rules.ports.map((r) => `port=${hex(r.access)}:${r.low}-${r.high}`),
    // Landlock confines ptrace(2) to the domain and those below it: with a
    // domain in force, tracing within the job (strace, gdb, sanitizers) is
    // left to it; without one, the filter denies ptrace.
    `network=${request.network}`,
    `seccomp=${seccompHex(options.arch, { ptrace: true, network: request.network, ipc: sysv })}`,
    `seccomp-alone=${seccompHex(options.arch, { ptrace: false, network: request.network, ipc: sysv })}`,
  ];
}

/* ---- The seccomp filter (seccomp(2)): assembled at build time ---- */

/** What the filter leaves to the caller: ptrace (where a Landlock domain already limits it to the job's own processes) and the network. */
export interface SeccompOptions {
  /** Leave ptrace(2) out of the deny list. */
  ptrace: boolean;
  /** "none": socket(2) and socketpair(2) make unix sockets only. */
  network: "all" | "none";
  /** Refuse SysV IPC and POSIX message queues (a private job). */
  ipc?: boolean;
}

export const seccompKey = (arch: string, options: SeccompOptions): string => `${arch}:${options.ptrace ? "ptrace" : "no-ptrace"}:${options.network}${options.ipc ? ":no-ipc" : ""}`;

/*
 * Every filter the confinement can ask for, assembled by src/seccomp-filter.ts
 * when the executable is built (build.mjs runs it with the pinned Node and
 * defines the table into the bundles, esbuild define; scripts/text-modules.mjs
 * defines the same when src/ runs directly): the executable carries the
 * filters as data, and no code that assembles them.
 */
declare const __CLANKIE_SECCOMP__: Readonly<Record<string, string>> | undefined;

/** The built filter for `options` on `arch`, as hex. None built for it fails the spawn (an internal error), never a spawn without it. */
export function seccompHex(arch: string = process.arch, options: SeccompOptions): string {
  const hex = typeof __CLANKIE_SECCOMP__ === "object" ? __CLANKIE_SECCOMP__[seccompKey(arch, options)] : undefined;
  if (hex === undefined) throw new Error(`no seccomp filter was built for ${seccompKey(arch, options)}`);
  return hex;
}
