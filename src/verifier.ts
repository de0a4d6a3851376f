/*
 * The verification stage: the last step of both privilege changes, in the
 * process that is about to become the service or the agent's command.
 *
 * setpriv exits 0 even when an ambient raise failed (docs/security.md, "Why
 * each step verifies"), so the process setpriv became must read its own
 * /proc/self/status and refuse on any difference before the command runs. A second start of this executable would cost a whole Node
 * start on every agent spawn; the stage is a short Perl program
 * (src/perl/verifier.pl), carried in this executable and passed to perl(1)
 * with -e: nothing of it lies on disk, perl-base is Essential in every Debian
 * image, and it starts in a few milliseconds.
 *
 * perl runs with -T (taint mode), which makes it ignore PERL5OPT, PERL5LIB and
 * PERLLIB: the agent's environment (which the service may extend with --env)
 * cannot load code into the stage. -C0 makes it ignore PERL_UNICODE (a :utf8
 * stderr would turn every refusal into perl's own error). PERL_BADLANG=0 in
 * its environment (stageEnvironment) keeps a LANG the image has no locale for
 * from adding perl's five-line warning to every start; the stage removes it
 * again unless the caller had set it. Arguments and environment are untainted
 * explicitly, because they are what we meant to pass on. The command is
 * started with execve(2) itself (never execvp's /bin/sh fallback).
 *
 *   perl -T -e VERIFIER -- PROGRAM ROLE KEY=VALUE... -- PATH ARGV0 [ARG...]
 *
 * Keys (each check runs only when its key is given):
 *   uid gid groups       every uid and gid equal; the supplementary groups as a set
 *   inh prm eff amb bnd  capability sets, hexadecimal
 *   nnp=1                NoNewPrivs
 *   session=new          setsid(2) first (a raw syscall: perl-base has no POSIX
 *                        setsid without loading POSIX.pm), then as session=own
 *   session=own          a session of its own and no controlling terminal
 *   fds=N,N              no fd open across exec but 0-2 and these
 *   umask=OCTAL cwd=DIR  set before the exec; a DIR it cannot enter refuses
 *   signal=NAME pgid=N   instead of an exec: deliver NAME to process group N
 *   unset=NAME           remove NAME from the environment before the exec
 *                        (PERL_BADLANG, which only perl itself needed)
 *   confine=best|strict  last before the exec: the agent's Landlock domain and
 *                        seccomp filter (src/confinement.ts), from
 *                        rw= rw+= dev= ro= ro+= hide= noconnect= nobind=
 *                        seccomp=HEX; each applied layer is checked by what it
 *                        must deny. "strict" refuses where the kernel falls short;
 *                        network=none refuses without the seccomp filter, and
 *                        checks that socket(AF_INET) answers EAFNOSUPPORT.
 *
 * Before the exec, every signal the chain left ignored (Node ignores SIGPIPE
 * and SIGXFSZ, and execve(2) keeps ignored signals ignored) is reset to its
 * default, as a child spawned by the service itself would start.
 *
 * errno values are named from a table of Linux's numbers (the same on x86-64
 * and arm64) rather than through %!, whose Errno.pm costs over a millisecond.
 */
import { EXIT, syscallNumbers, TOOLS } from "./constants.ts";
import VERIFIER_TEMPLATE from "./perl/verifier.pl";

export type VerifierRole = "service" | "agent";

export interface VerifierRequest {
  /** Name used at the start of a refusal line. */
  program: string;
  role: VerifierRole;
  uid: number;
  gid: number;
  groups: readonly number[];
  caps: { inh: bigint; prm: bigint; eff: bigint; amb: bigint; bnd?: bigint };
  /** "new": call setsid(2), then check; "own": only check (the caller already leads a session). */
  session?: "new" | "own";
  /** Checked when given: no other fd above 2 may be open without close-on-exec. */
  keepFds?: readonly number[];
  umask?: number;
  cwd?: string;
  /** A variable stageEnvironment added for perl alone, to remove before the exec. */
  unset?: string;
  /** The agent's Landlock domain and seccomp filter, as keys (src/confinement.ts). */
  confinement?: readonly string[];
  /** Either a program to exec (absolute path, then its argv with argv[0]) or a signal for a process group. */
  action: { path: string; argv: readonly string[] } | { signal: string; pgid: number };
}

const FIXES: Record<VerifierRole, { what: string; fix: string }> = {
  service: {
    what: "after the drop to the service the kernel reports",
    fix: "check that the launch has --cap-add SETPCAP, SETUID and SETGID and that the kernel supports ambient capabilities (Linux 4.3+)",
  },
  agent: {
    what: "the agent process is not what was asked:",
    fix: "do not start agent work on this body; run clankie-separate --self-check --probe and report its output",
  },
};

/** What to do when --strict-confinement refuses. */
export const CONFINEMENT_FIX =
  "run agent work on a kernel with Landlock ABI 6 or later (Linux 6.12+, lsm= including landlock) under an engine whose seccomp profile allows landlock_create_ruleset, landlock_add_rule and landlock_restrict_self (Docker 20.10.18+), or spawn without --strict-confinement to run it under the uid boundary alone";

/* The Perl program, src/perl/verifier.pl; exit codes are the EXIT values of constants.ts, filled in below. */
const SOURCE = VERIFIER_TEMPLATE;

function fill(source: string): string {
  const values: Record<string, string> = {
    SYS_SETSID: String(syscallNumbers().setsid),
    SYS_EXECVE: String(syscallNumbers().execve),
    SYS_PRCTL: String(syscallNumbers().prctl),
    SYS_IOCTL: String(syscallNumbers().ioctl),
    SYS_LL_CREATE: String(syscallNumbers().landlockCreateRuleset),
    SYS_LL_ADD: String(syscallNumbers().landlockAddRule),
    SYS_LL_RESTRICT: String(syscallNumbers().landlockRestrictSelf),
    FIX_CONFINE: perlString(CONFINEMENT_FIX),
    OK: String(EXIT.ok),
    USAGE: String(EXIT.usage),
    OS: String(EXIT.osError),
    VERIFY: String(EXIT.verifyFailed),
    DATA: String(EXIT.dataRefused),
    LAUNCH: String(EXIT.launchRefused),
    NOTFOUND: String(EXIT.notFound),
    NOTEXEC: String(EXIT.notExecutable),
    WHAT_SERVICE: perlString(FIXES.service.what),
    WHAT_AGENT: perlString(FIXES.agent.what),
    FIX_SERVICE: perlString(FIXES.service.fix),
    FIX_AGENT: perlString(FIXES.agent.fix),
  };
  return source
    .replace(/@([A-Z_]+)@/g, (_, name: string) => {
      const value = values[name];
      if (value === undefined) throw new Error(`verifier: no value for @${name}@`);
      return value;
    })
    .trim();
}

/** A Perl single-quoted string: only \ and ' are special. */
function perlString(text: string): string {
  return `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

/** The Perl program, as passed to `perl -T -C0 -e`. */
export const VERIFIER_SOURCE = fill(SOURCE);

/** argv (with argv[0]) of the verification stage. */
export function verifierArgv(request: VerifierRequest): string[] {
  const hex = (mask: bigint) => mask.toString(16);
  const keys = [
    `uid=${request.uid}`,
    `gid=${request.gid}`,
    `groups=${[...request.groups].sort((a, b) => a - b).join(",")}`,
    `inh=${hex(request.caps.inh)}`,
    `prm=${hex(request.caps.prm)}`,
    `eff=${hex(request.caps.eff)}`,
    `amb=${hex(request.caps.amb)}`,
    ...(request.caps.bnd === undefined ? [] : [`bnd=${hex(request.caps.bnd)}`]),
    "nnp=1",
    ...(request.session ? [`session=${request.session}`] : []),
    ...(request.keepFds === undefined ? [] : [`fds=${request.keepFds.join(",")}`]),
    ...(request.umask === undefined ? [] : [`umask=${request.umask.toString(8).padStart(4, "0")}`]),
    ...(request.cwd === undefined ? [] : [`cwd=${request.cwd}`]),
    ...(request.unset === undefined ? [] : [`unset=${request.unset}`]),
    ...(request.confinement ?? []),
  ];
  const action = "signal" in request.action
    ? [`signal=${request.action.signal.replace(/^SIG/, "")}`, `pgid=${request.action.pgid}`, "--"]
    : ["--", request.action.path, ...request.action.argv];
  return [TOOLS.perl, "-T", "-C0", "-e", VERIFIER_SOURCE, "--", request.program, request.role, ...keys, ...action];
}

/**
 * The environment to exec the stage with: `env` plus PERL_BADLANG=0, and the
 * name the stage must remove again (undefined when the caller set it itself).
 */
export function stageEnvironment<E extends Record<string, string>>(env: E): { env: E & { PERL_BADLANG: string }; unset: string | undefined } {
  if (Object.hasOwn(env, "PERL_BADLANG")) return { env: env as E & { PERL_BADLANG: string }, unset: undefined };
  return { env: { ...env, PERL_BADLANG: "0" }, unset: "PERL_BADLANG" };
}
