/*
 * The verification stage: the last step of both privilege changes, in the
 * process that is about to become the service or the agent's command. This
 * module builds its request and its program (src/stage/stage.pl); its argv
 * as a perl of its own, which setpriv execs, is stage-argv.ts's. The
 * spawner's grab runs it instead in its own process, compiled before the job
 * came, after making the drop to the agent itself (src/perl/spawn-grab.pl):
 * the same checks of the same request, with no perl start per job.
 *
 * setpriv exits 0 even when an ambient raise failed (docs/security.md, "Why
 * each step verifies"), so the process setpriv became must read its own
 * /proc/self/status and refuse on any difference before the command runs. A
 * second start of this executable would cost a whole Node start on every
 * agent spawn; the stage is a short Perl program, carried in this executable
 * and passed to perl(1) with -e: nothing of it lies on disk, perl-base is
 * Essential in every Debian image, and it starts in a few milliseconds.
 *
 * The command's environment crosses setpriv and perl under other names
 * (stageEnvironment): each variable NAME=VALUE as CLANKIE_ENV_NAME=VALUE, and
 * the stage hands the command exactly those, named back, and nothing else.
 * setpriv runs with the spawner's SETUID and SETGID, and perl before the
 * confinement: neither reads a variable of the command's. The agent's
 * environment is the service's to extend (--env) with values that model
 * output may choose, and glibc reads LANGUAGE, LC_*, LOCPATH and more: with
 * LANGUAGE=../../workspace/x, setpriv's gettext took a message catalog the
 * agent had planted and used its translation as a printf format, with both
 * capabilities held. perl also runs with -T (taint mode: it ignores PERL5OPT,
 * PERL5LIB and PERLLIB) and -C0 (it ignores PERL_UNICODE, which would turn
 * every refusal into perl's own error).
 *
 *   perl -T -C0 -e STAGE -- PROGRAM ROLE KEY=VALUE... -- PATH ARGV0 [ARG...]
 *
 * STAGE is the role's own program (stageProgram): stage.pl less the sections
 * of the other roles, accepting only its role. Each bundle carries only the
 * roles it asks for (src/stage/stage-source.ts): the entrypoint's, the
 * service's alone. perl compiles every line it
 * is given, and the agent's program is compiled for every piece of agent
 * work: without the signal and cleanup roles' steps it compiles 0.6 ms
 * faster (docs/benchmarks.md, "Agent spawn").
 *
 * The protocol is closed and declared once (src/stage/protocol.ts, which
 * fills in stage.pl's tables at build time): each role takes exactly its
 * keys, every one required but path= and port=, so a request type without a
 * field is a stage that refuses (exit 64), never one that skips a check.
 * roleKeys below writes them; test/unit/stage/protocol.test.ts holds what it
 * writes, for every role, to that declaration.
 */
import { carried } from "../exec/environment.ts";
import type { AgentStageOptions } from "./protocol.ts";
import { PRIVATE_SECTION, ROLE_SECTION, SECTION, STAGE_ROLES } from "./sections.ts";

interface StageIdentity {
  /** Name used at the start of a refusal line. */
  program: string;
  uid: number;
  gid: number;
  groups: readonly number[];
  caps: { inh: bigint; prm: bigint; eff: bigint; amb: bigint };
}

export interface ServiceStageRequest extends StageIdentity {
  role: "service";
  bounding: bigint;
  umask: number;
  action: { path: string; argv: readonly string[] };
}

export interface AgentStageRequest extends StageIdentity {
  role: "agent";
  /** The keys a shim option gives as they are (protocol.ts, AGENT_OPTION_KEYS): nproc= (RLIMIT_NPROC, set as the agent; empty keeps the inherited limit). */
  options: AgentStageOptions;
  /** "new": call setsid(2), then check; "own": only check (the caller already leads a session). */
  session: "new" | "own";
  keepFds: readonly number[];
  umask: number;
  cwd: string;
  /** The Landlock domain and seccomp filter, as keys (confinementKeys of src/confinement.ts). */
  confinement: readonly string[];
  /** A private job's lease directory: the stage makes home/ and tmp/ in it, and refuses without Landlock ABI 6 and seccomp. */
  privateDir?: string | undefined;
  /**
   * The service's started marker: an fd the stage keeps (it is no --keep-fd
   * of the command's), marks close-on-exec and writes "S" to right before
   * execve(2), and "F" after it when the exec failed.
   */
  startedFd?: number | undefined;
  /** An absolute path, then argv with argv[0]. */
  action: { path: string; argv: readonly string[] };
}

export interface SignalStageRequest extends StageIdentity {
  role: "signal";
  keepFds: readonly number[];
  action: { signal: string; pgid: number };
}

/** The end of a private job's lease: kill what holds `group`, then run the removal command. */
export interface CleanupStageRequest extends StageIdentity {
  role: "cleanup";
  keepFds: readonly number[];
  lease: string;
  group: number;
  /** The run's started marker, when the shim that takes back a lease holds one: closed at the exec, nothing written. */
  startedFd?: number | undefined;
  action: { path: string; argv: readonly string[] };
}

export type StageRequest = ServiceStageRequest | AgentStageRequest | SignalStageRequest | CleanupStageRequest;

// This architecture's program as this bundle carries it (src/stage/stage-source.ts, stageSource), defined
// by build.mjs (esbuild define) and, for src/ run directly, by scripts/text-modules.mjs: no start fills it in.
declare const __CLANKIE_STAGE__: string | undefined;
export const STAGE_SOURCE: string = typeof __CLANKIE_STAGE__ === "string" ? __CLANKIE_STAGE__ : "";
export { STAGE_ROLES };

export type StageRole = StageRequest["role"];

/**
 * The program for `roles` (one, or the spawner's grab's two: the agent's and
 * its stops'): `source` (stage.pl as passed to perl) without the sections of
 * the other roles (and the [private] ones unless `privateJob`: an ordinary
 * spawn compiles none of a private job's steps), and accepting only `roles`
 * (any other is "unknown role", exit 64). The slices of the source between
 * the sections it leaves out are found with indexOf (no regular expression;
 * splitting the source at every section took 0.25 ms on a first call, this
 * 0.16 ms, under plain Node, which also compiles it).
 */
export function stageProgram(roles: readonly StageRole[], source: string = STAGE_SOURCE, privateJob = false): string {
  if (source === "") throw new Error("stage: no program was built in (build.mjs defines __CLANKIE_STAGE__, scripts/text-modules.mjs for src/)");
  let program = "";
  let from = 0;
  for (let at = source.indexOf(ROLE_SECTION); at >= 0; at = source.indexOf(ROLE_SECTION, at + 1)) {
    if (roles.some((kept) => source.startsWith(`${ROLE_SECTION}${kept}] `, at)) || (privateJob && roles.includes("agent") && source.startsWith(`${ROLE_SECTION}${PRIVATE_SECTION}] `, at))) continue;
    program += source.slice(from, at);
    const end = source.indexOf(SECTION, at + 1);
    from = end < 0 ? source.length : end;
  }
  program += source.slice(from);
  // stageSource checked that the list appears once; it is in a section every role keeps (tested).
  const list = program.indexOf(STAGE_ROLES);
  if (list < 0) throw new Error(`stage: the program does not list the roles ${STAGE_ROLES}`);
  return `${program.slice(0, list)}(${roles.join("|")})${program.slice(list + STAGE_ROLES.length)}`;
}

const hex = (mask: bigint) => mask.toString(16);

function roleKeys(request: StageRequest): string[] {
  switch (request.role) {
    case "service":
      return [`bnd=${hex(request.bounding)}`, `umask=${octal(request.umask)}`];
    case "agent":
      return [...Object.entries(request.options).map(([key, value]) => `${key}=${value}`), `session=${request.session}`, `fds=${request.keepFds.join(",")}`, `umask=${octal(request.umask)}`, `cwd=${request.cwd}`, ...request.confinement, `private=${request.privateDir ?? ""}`, `started=${request.startedFd ?? ""}`];
    case "signal":
      return [`fds=${request.keepFds.join(",")}`, `signal=${request.action.signal.replace(/^SIG/, "")}`, `pgid=${request.action.pgid}`];
    case "cleanup":
      return [`fds=${request.keepFds.join(",")}`, `lease=${request.lease}`, `group=${request.group}`, `started=${request.startedFd ?? ""}`];
  }
}

const octal = (mask: number) => mask.toString(8).padStart(4, "0");

/** The stage's own arguments (its @ARGV): the program's name, the role, the keys, "--", then the command. */
export function stageRequest(request: StageRequest): string[] {
  const keys = [
    `uid=${request.uid}`,
    `gid=${request.gid}`,
    `groups=${[...request.groups].sort((a, b) => a - b).join(",")}`,
    `inh=${hex(request.caps.inh)}`,
    `prm=${hex(request.caps.prm)}`,
    `eff=${hex(request.caps.eff)}`,
    `amb=${hex(request.caps.amb)}`,
    "nnp=1",
    ...roleKeys(request),
  ];
  const command = "path" in request.action ? [request.action.path, ...request.action.argv] : [];
  return [request.program, request.role, ...keys, "--", ...command];
}

/** The environment to exec setpriv with: the command's, carried (CLANKIE_ENV_NAME), and nothing else. */
export const stageEnvironment = carried;
