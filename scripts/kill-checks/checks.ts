// Every security check of the verification stage (src/stage/stage.pl), the
// spawn shim (src/agent-exec/*.ts) and the private-job code (the shim's
// private-job.ts, the pool's rules in src/private-groups.ts, the stage's
// [private] and [cleanup] sections, src/service/private-release.ts), each
// with the edit that deletes it and the tests that must fail once it is gone.
// scripts/kill-checks.mjs applies each edit in a copy of the tree and runs
// those tests; test/unit/project/kill-checks.test.ts holds this list to the
// code: every site SITES finds lies in exactly one check's snippet, so a new
// check without an entry here fails.
//
// A check is a site that stops the run on a condition it tests, or names a
// difference a post-check refuses:
//   stage.pl   refuse(), usage(), proc_failed(), $short->() and $fail->() calls
//              (not the subs that define them), push @found / @stray
//   the shim   throw new Refusal, throw usage(), a refusal line written with
//              formatRefusal, and the exec rules asked of the tools it runs
//              (prepareExec)
// Not a check: osCall and osFailure, which name the call that failed, errno
// and path, in the message of a failure that stops the run either way.
//
// An entry: id; file; find, an exact snippet found once in the file; to,
// when given, the end of the cut (the first occurrence after find, included);
// replace (default: nothing); tests, per test file the names of the tests to
// run (every test of the file when the list is empty); guard, for an entry
// that is no site but a guard that refuses nothing (the grab's reaping of
// what a job leaves), cut and killed the same way.

import { spawnSync } from "node:child_process";
import { protocolPerl } from "../../src/stage/protocol.ts";

export interface Check {
  id: string;
  file: string;
  find: string;
  to?: string | null;
  replace?: string;
  /** Per test file, the names of the tests to run; an empty list runs every test of the file. */
  tests: Record<string, string[]>;
  /** Not a site: a guard that refuses nothing (the grab's reaping), cut the same way and killed by its tests. */
  guard?: true;
}

/** What a check site looks like, per file: a match is one site (definitions excluded by SITE_EXCLUDE). */
export const SITES: { stage: RegExp; shim: RegExp; grab: RegExp; audit: RegExp } = {
  stage: /\bstop\(65|\bchanged\(|\brefuse\(|\busage\(|\bproc_failed\(|\$short->\(|\$fail->\(|\bpush @found\b|\bpush @stray\b/g,
  // The spawner's refusals of a stop or a release are answers on the channel, not throws: the line its test names or leaves undefined.
  shim: /\bthrow new Refusal\(|\bthrow stateRefusals\.\w+\(|\bthrow usage\(|\bformatRefusal\(|\bprepareExec\(|\bgateExec\(|\bthrow changed(UnderUs)?\(|\? undefined : `clankie-agent-exec: /g,
  // The spawner's grab (src/perl/spawn-grab.pl): its policy refusals (77); its 71s name a failed call, as osFailure does.
  grab: /\brefuse\(77,/g,
  // The audit's walk of /state (src/perl/state-audit.pl): each record of something the start would change, refuse or not reach.
  audit: /\bfound\("/g,
};
/** Lines that define a refusal helper or an exec gate rather than call it. */
export const SITE_EXCLUDE = /^\s*sub (refuse|usage|proc_failed|changed) |= sub \{|^export function (prepareExec|gateExec)\(/;
/** The files whose sites must all be listed. */
export const SCOPE = ["src/stage/stage.pl", "src/agent-exec/caller.ts", "src/agent-exec/cli.ts", "src/agent-exec/run-args.ts", "src/agent-exec/descriptors.ts", "src/agent-exec/main.ts", "src/agent-exec/plan.ts", "src/agent-exec/private-job.ts", "src/agent-exec/run.ts", "src/agent-exec/start.ts", "src/private-groups.ts", "src/service/private-release.ts",
  // The rest of what runs with privilege (the entrypoint, the layouts, the exec rules, the accounts) and the service's API.
  "src/entrypoint/cli.ts", "src/entrypoint/drop.ts", "src/entrypoint/launch-check.ts", "src/entrypoint/private-root.ts", "src/entrypoint/run.ts", "src/entrypoint/service-env.ts", "src/entrypoint/start.ts", "src/entrypoint/state-acl.ts", "src/entrypoint/state-layout.ts", "src/entrypoint/tree-walk.ts", "src/entrypoint/workspace-layout.ts",
  "src/layout/marker.ts", "src/layout/rules.ts", "src/layout/state-acl.ts", "src/layout/state.ts", "src/layout/workspace.ts", "src/perl/state-acl.pl",
  "src/exec/capture.ts", "src/exec/drop-capabilities.ts", "src/exec/environment.ts", "src/exec/replace.ts", "src/exec/rules.ts",
  "src/accounts.ts", "src/service/agent-start.ts", "src/service/agent-stop.ts", "src/system-exec.ts",
  // The resident spawner (issue 35): its requests and its grab of the holder's fds.
  "src/agent-exec/spawner.ts", "src/perl/spawn-grab.pl", "src/service/spawner-client.ts", "src/service/stream-acceptor.ts",
  // The audit's dry run of the start's /state walk: what it finds is what the start would change or refuse.
  "src/perl/state-audit.pl"];
/** The spawner's grab, whose sites are its policy refusals only (SITES.grab). */
const GRAB = "src/perl/spawn-grab.pl";
/** The audit's part of the /state walk, whose sites are its findings (SITES.audit). */
const AUDIT = "src/perl/state-audit.pl";

/** [start, end) of the check's snippet in `text`, or a reason it cannot be cut. */
export function snippetSpan(text: string, check: Check): { start: number; end: number; problem?: undefined } | { problem: string } {
  const start = text.indexOf(check.find);
  if (start < 0) return { problem: "snippet not found" };
  if (text.indexOf(check.find, start + 1) >= 0) return { problem: "snippet found more than once" };
  if (check.to === undefined || check.to === null) return { start, end: start + check.find.length };
  const to = text.indexOf(check.to, start + check.find.length);
  if (to < 0) return { problem: `end ${JSON.stringify(check.to)} not found after the snippet` };
  return { start, end: to + check.to.length };
}

export function deleteCheck(text: string, check: Check): string {
  const span = snippetSpan(text, check);
  if (span.problem !== undefined) throw new Error(`${check.id}: ${span.problem} in ${check.file}`);
  return text.slice(0, span.start) + (check.replace ?? "") + text.slice(span.end);
}

/**
 * Why `text`, an edited `file`, would not compile, or undefined: an edit that
 * broke the syntax would fail every test and pass for a killed check. perl -c
 * for stage.pl (its protocol tables and system call numbers filled in), esbuild's parser for the shim.
 */
export function syntaxProblem(file: string, text: string, transform: (code: string) => unknown): string | undefined {
  if (file.endsWith(".pl")) {
    const program = text.replace("@PROTOCOL@", () => protocolPerl()).replace(/@([a-zA-Z]+)@/g, "1");
    const result = spawnSync("/usr/bin/perl", ["-T", "-C0", "-c", "-e", program], { encoding: "utf8" });
    return result.stderr === "-e syntax OK\n" ? undefined : result.stderr.trim();
  }
  try {
    transform(text);
    return undefined;
  } catch (error) {
    return String((error as Error).message).split("\n").slice(0, 3).join(" ");
  }
}

/** Where each site of `file`'s text starts (comment lines and the helpers' own definitions left out). */
export function checkSites(file: string, text: string): number[] {
  const pattern = new RegExp((file === GRAB ? SITES.grab : file === AUDIT ? SITES.audit : file.endsWith(".pl") ? SITES.stage : SITES.shim).source, "g");
  return [...text.matchAll(pattern)].flatMap((match) => {
    const line = text.slice(text.lastIndexOf("\n", match.index) + 1, text.indexOf("\n", match.index));
    return SITE_EXCLUDE.test(line) || /^\s*(#|\/\/|\*|\/\*|import )/.test(line) ? [] : [match.index];
  });
}

const STAGE = "src/stage/stage.pl";
const STAGE_TEST = "test/unit/stage/stage.test.ts";
const AGENT_SANDBOX = "test/sandbox/agent-exec.test.ts";
const CONFINEMENT_SANDBOX = "test/sandbox/confinement.test.ts";
const PRIVATE_SANDBOX = "test/sandbox/private-jobs.test.ts";
const stage = (id: string, find: string, tests: string[], extra: Partial<Check> = {}): Check => ({ id: `stage.${id}`, file: STAGE, find, tests: { [STAGE_TEST]: tests }, ...extra });

const MARKER_TEST = "the started marker: an fcntl(F_SETFD) that fails or a marker it cannot write is refused (71) before the exec, never a command holding the marker or an unreported start";

export const CHECKS: Check[] = [
  /* ---- stage.pl: the closed protocol ---- */
  stage("request.program", String.raw`  usage("program name " . ($name eq "" ? "missing" : $name)) unless $program eq $name;`, ["a program name that is not one is a usage refusal (exit 64)"]),
  stage("request.role", String.raw` or usage("unknown role " . ($asked eq "" ? "(none)" : $asked))`, ["an unknown role, a command after a signal and a missing command are usage refusals"]),
  stage("request.argument", String.raw` or usage("unexpected argument $arg")`, ["a malformed stage argument is a usage refusal (exit 64)"]),
  stage("request.key-of-role", String.raw` or usage("the $role role takes no $key=")`, ["a key of another role, an unknown key or a key given twice is a usage refusal"]),
  stage("request.form", String.raw` or usage("malformed $arg")`, ["a malformed stage argument is a usage refusal (exit 64)"]),
  stage("request.twice", String.raw`usage("$key= given twice")`, ["a key of another role, an unknown key or a key given twice is a usage refusal"]),
  stage("request.missing", String.raw`  usage("missing " . join(" ", map { "$_=" } @missing)) if @missing;`, ["every key of every role is required: leaving one out is a usage refusal, never a skipped check"]),
  stage("request.signal-command", String.raw`  usage("a command after the signal") if $role eq "signal" && @command;`, ["an unknown role, a command after a signal and a missing command are usage refusals"]),
  stage("request.no-command", String.raw`  usage("no command") if $role ne "signal" && @command < 2;`, ["an unknown role, a command after a signal and a missing command are usage refusals"]),

  /* ---- stage.pl: processes, session, status ---- */
  stage("nproc.set-before-probe", String.raw`$set->($n + 2) or $set->($n) or $fail->();`, ["RLIMIT_NPROC that the kernel will not set is refused (71), before the fork probe and after it"], { replace: String.raw`$set->($n + 2) or $set->($n);` }),
  stage("nproc.set-after-probe", String.raw`  waitpid $pid, 0;
  $set->($n) or $fail->();`, ["RLIMIT_NPROC that the kernel will not set is refused (71), before the fork probe and after it"], { replace: String.raw`  waitpid $pid, 0;
  $set->($n);` }),
  {
    ...stage("nproc.over", String.raw`    refuse(EXIT_BUSY, "the agent uid already runs more than $n tasks (--nproc $n)", "try again when agent work has ended, or spawn with a higher --nproc") if $! == 11;`, ["the fork probe: EAGAIN is the agent uid over --nproc (75), another errno a failed fork (71)"]),
  },
  stage("nproc.fork", String.raw`    refuse(EXIT_OS_ERROR, "fork failed: " . errname(), $KERNEL_FIX);`, ["the fork probe: EAGAIN is the agent uid over --nproc (75), another errno a failed fork (71)"]),
  stage("session.setsid", String.raw` or refuse(EXIT_LAUNCH_REFUSED, "setsid failed (" . errname() . ")", "spawn the shim in a new session (spawnAgent does) or inside its parent's process group")`, ["session=new from a process-group leader: setsid(2) fails, one line, exit 77"]),
  stage("status.open", String.raw` or proc_failed("/proc/self/status")`, ["/proc/self/status, /proc/self/stat or /proc/self/fd that cannot be read is refused (71), never taken for empty"]),

  /* ---- stage.pl: the post-check of the privilege change ---- */
  stage("verify.refuse", String.raw`refuse(EXIT_VERIFY_FAILED, ($role eq "service" ? "$SERVICE_WHAT " : "$AGENT_WHAT ") . join("; ", @differences), $role eq "service" ? $SERVICE_FIX : $AGENT_FIX) if @differences;`, ["each difference is named: uid", "each difference is named: NoNewPrivs", "the service's wording and fix"]),
  stage("verify.ids", String.raw`push @found, $key . "s " . join(",", @have) . " (want $want{$key} in all four)" if @have != 4 || grep { $_ ne $want{$key} } @have;`, ["each difference is named: uid", "each difference is named: gid"]),
  stage("verify.groups", String.raw`push @found, "groups " . ($have eq "" ? "none" : $have) . " (want " . ($asked eq "" ? "none" : $asked) . ")" if $have ne $asked;`, ["each difference is named: supplementary groups, compared as sets"]),
  stage("verify.capability-missing", String.raw`push @found, "Cap$set missing from /proc/self/status"`, ["a /proc/self/status without a capability line is a difference (70), not a capability set of 0"]),
  stage("verify.capability", String.raw`push @found, sprintf("Cap%s 0x%x (want 0x%x)", $set, hex($have), hex($want{lc $set}))`, ["each difference is named: every capability set; the bounding set of the service", "the service's wording and fix"]),
  stage("verify.no-new-privs", String.raw`  push @found, "NoNewPrivs " . ($status{NoNewPrivs} // "missing") . " (want 1)" if ($status{NoNewPrivs} // "") ne "1";`, ["each difference is named: NoNewPrivs"]),
  stage("verify.stat-open", String.raw` or proc_failed("/proc/self/stat")`, ["/proc/self/status, /proc/self/stat or /proc/self/fd that cannot be read is refused (71), never taken for empty"]),
  stage("verify.session", String.raw`  push @found, "session $field[3] (want its own, $$)" if $field[3] != $$;`, ["each difference is named: a session of its own and no controlling terminal"]),
  stage("verify.terminal", String.raw`  push @found, "controlling terminal $field[4] (want none)" if $field[4] != 0;`, ["a controlling terminal in a session of its own is refused (70): TIOCSTI needs one"]),
  stage("verify.fd-list", String.raw` or proc_failed("/proc/self/fd")`, ["/proc/self/status, /proc/self/stat or /proc/self/fd that cannot be read is refused (71), never taken for empty"]),
  stage("verify.fd-inspect", String.raw`      proc_failed("/proc/self/fdinfo/$n", "; an fd that cannot be inspected is not let through");`, ["an fd the stage cannot inspect is refused, not let through (EMFILE)"], { replace: "      next;" }),
  stage("verify.fd-stray", String.raw`    push @stray, $n unless $flags & 02000000;`, ["each difference is named: an fd open across exec that was not kept"]),

  /* ---- stage.pl: [signal] ---- */
  stage("signal.gone", String.raw`  refuse(EXIT_DATA_REFUSED, "no agent process group $want{pgid}", "it has already exited") if $! == 3;`, ["the signal action: delivers the signal to the process group; a group that is gone is exit 65"]),
  stage("signal.foreign", String.raw`  refuse(EXIT_LAUNCH_REFUSED, "process group $want{pgid} is not the agent's", "only agent work can be signalled through the shim") if $! == 1;`, ["the signal action: a process group of another uid is refused (exit 77) and lives on"]),
  stage("signal.failed", String.raw`  refuse(EXIT_OS_ERROR, "kill -$want{signal} -$want{pgid} failed: " . errname(), "report this with the command line used");`, ["the signal action: a kill(2) that fails otherwise than ESRCH or EPERM is refused (71)"]),

  /* ---- stage.pl: [cleanup] the end of a private job's lease ---- */
  stage("cleanup.group", String.raw` or usage("group=$group is not among groups=$want{groups}")`, ["a cleanup stage asked to end a group it does not hold is refused (64) before it looks at a process"]),
  stage("cleanup.keep-appearing", String.raw`  refuse(EXIT_OS_ERROR, "processes holding group $group keep appearing", "stop the private job from the service (signalAgent(PGID, 'SIGKILL')) and try again");`, ["the cleanup stage: a holder of the group it cannot end is refused (71) after 4 s, never left holding it"]),
  {
    ...stage("cleanup.guard-fired", String.raw`      refuse(EXIT_BUSY, "the guard of the private job in $want{lease} ended before its job (killed by the OOM killer or a signal), so what the job started may run on unseen", "the lease stays and its group out of the pool; restart the container to get it back") unless guard_fired();`, []),
    tests: { "test/sandbox/private-guard.test.ts": ["a private job whose guard was killed before the job ended: its release fails (75, one line), the lease stays and the next private job is refused (75); the control, not killed, is released (0)"] },
  },
  stage("cleanup.proc", String.raw` or proc_failed("/proc")`, ["the cleanup stage: /proc that cannot be listed, a pidfd it cannot open or signal through, a lease it cannot walk: each refused (71)"]),
  stage("cleanup.pidfd-open", String.raw`      refuse(EXIT_OS_ERROR, "pidfd_open of process $pid failed: " . errname(), "run private jobs on Linux 5.3 or later under a seccomp profile that allows pidfd_open and pidfd_send_signal (Docker's default does)");`, ["the cleanup stage: /proc that cannot be listed, a pidfd it cannot open or signal through, a lease it cannot walk: each refused (71)"]),
  stage("cleanup.pidfd-signal", String.raw` or refuse(EXIT_OS_ERROR, "pidfd_send_signal to process $pid failed: " . errname(), $KERNEL_FIX)`, ["the cleanup stage: /proc that cannot be listed, a pidfd it cannot open or signal through, a lease it cannot walk: each refused (71)"]),
  stage("cleanup.chdir-lease", String.raw` or refuse(EXIT_OS_ERROR, "chdir $want{lease} failed: " . errname(), $KERNEL_FIX)`, ["the cleanup stage: /proc that cannot be listed, a pidfd it cannot open or signal through, a lease it cannot walk: each refused (71)"]),
  stage("cleanup.chdir-up", String.raw` or refuse(EXIT_OS_ERROR, "chdir .. in $want{lease} failed: " . errname(), $KERNEL_FIX)`, ["the cleanup stage: /proc that cannot be listed, a pidfd it cannot open or signal through, a lease it cannot walk: each refused (71)"]),

  /* ---- stage.pl: signals, directory, a private job's home ---- */
  stage("signals.mask", String.raw`
    or refuse(EXIT_OS_ERROR, "rt_sigprocmask failed: " . errname(), $KERNEL_FIX)`, ["rt_sigprocmask that fails is refused (71): the command never starts with signals blocked"]),
  stage("directory.cwd", String.raw` or refuse(EXIT_LAUNCH_REFUSED, "the agent cannot enter $want{cwd} (" . errname() . ")", "pass a --cwd under /workspace that group clankie-workspace can search")`, ["umask and working directory are set before the exec; a directory it cannot enter refuses (exit 77)"]),
  stage("private.home", String.raw` or refuse(EXIT_LAUNCH_REFUSED, "the private job cannot make $dir (" . errname() . ")", "spawn it again: each private job gets a fresh lease")`, ["a private job whose HOME or TMPDIR cannot be made fresh is refused (77)"]),

  /* ---- stage.pl: the confinement and its post-checks ---- */
  stage("confine.no-landlock", String.raw`$short->("the kernel offers no Landlock (" . errname() . ")");`, ["a kernel without Landlock or seccomp filters: confine=strict and network=none are refused (77), best effort runs"]),
  stage("confine.abi-6", String.raw`$short->("the kernel's Landlock ABI is $abi; scoping needs 6")`, ["a kernel whose Landlock ABI is 5 (no scoping): confine=strict is refused (77); best effort runs under ABI 5's domain"]),
  stage("confine.offline-seccomp", String.raw`    refuse(EXIT_LAUNCH_REFUSED, "agent confinement: the kernel refused the seccomp filter (" . errname() . ") that keeps agent work off the network", "run it where seccomp filters can be installed (CONFIG_SECCOMP_FILTER, an engine that allows prctl PR_SET_SECCOMP), or spawn without --no-network") if $offline;`, ["a kernel without Landlock or seccomp filters: confine=strict and network=none are refused (77), best effort runs"], { tests: { [STAGE_TEST]: ["a kernel without Landlock or seccomp filters: confine=strict and network=none are refused (77), best effort runs"], [CONFINEMENT_SANDBOX]: ["network none where no seccomp filter can be installed: refused (77, one line), never run with the network"] } }),
  stage("confine.seccomp", String.raw`    $short->("the kernel refused the seccomp filter (" . errname() . ")");`, ["a kernel without Landlock or seccomp filters: confine=strict and network=none are refused (77), best effort runs"]),
  stage("confine.tiocsti", String.raw`  refuse(EXIT_VERIFY_FAILED, "$AGENT_WHAT its seccomp filter is not in force (ioctl TIOCSTI: " . errname() . ")", $AGENT_FIX) unless $! == 1;`, ["a kernel whose seccomp install answers 0 and installs nothing is refused (70): TIOCSTI must answer EPERM"], { tests: { [STAGE_TEST]: ["a kernel whose seccomp install answers 0 and installs nothing is refused (70): TIOCSTI must answer EPERM"], [CONFINEMENT_SANDBOX]: ["a kernel whose prctl(PR_SET_SECCOMP) and seccomp(2) answers 0 and does nothing: the stage's check refuses the spawn (70, one line)"] } }),
  stage("confine.offline-socket", String.raw`    refuse(EXIT_VERIFY_FAILED, "$AGENT_WHAT socket(AF_INET) under network=none " . ($made ? "succeeded" : "failed with " . errname()) . " (want EAFNOSUPPORT)", $AGENT_FIX) if $made || $! != 97;`, ["a filter that lets AF_INET through under network=none is refused (70): the socket must answer EAFNOSUPPORT"]),
  stage("landlock.create", String.raw`  $ruleset >= 0 or refuse(EXIT_OS_ERROR, "landlock_create_ruleset failed: " . errname(), $KERNEL_FIX);`, ["landlock_create_ruleset, landlock_add_rule (a path, a port) and landlock_restrict_self that fail are refused (71)"], { replace: "" }),
  stage("landlock.path-open", String.raw`      refuse(EXIT_LAUNCH_REFUSED, "agent confinement: cannot open $path as the agent (" . errname() . ")", "name a path that exists and the agent can reach");`, ["a path the service named that is missing is refused (77), one reached through a symbolic link (65)"]),
  stage("landlock.path-link", String.raw`      refuse(EXIT_DATA_REFUSED, "agent confinement: $path leads to $real", "name the path itself, without symbolic links");`, ["a path the service named that is missing is refused (77), one reached through a symbolic link (65)"]),
  stage("landlock.add-path", String.raw`
      or refuse(EXIT_OS_ERROR, "landlock_add_rule $path failed: " . errname(), $KERNEL_FIX)`, ["landlock_create_ruleset, landlock_add_rule (a path, a port) and landlock_restrict_self that fail are refused (71)"]),
  stage("landlock.add-port", String.raw`
        or refuse(EXIT_OS_ERROR, "landlock_add_rule port $port failed: " . errname(), $KERNEL_FIX)`, ["landlock_create_ruleset, landlock_add_rule (a path, a port) and landlock_restrict_self that fail are refused (71)"]),
  stage("landlock.restrict", String.raw`
    or refuse(EXIT_OS_ERROR, "landlock_restrict_self failed: " . errname(), $KERNEL_FIX)`, ["landlock_create_ruleset, landlock_add_rule (a path, a port) and landlock_restrict_self that fail are refused (71)"]),
  stage("landlock.oom", String.raw`  refuse(EXIT_VERIFY_FAILED, "$AGENT_WHAT its Landlock domain lets it open /proc/self/oom_score_adj for writing", $AGENT_FIX)
    if sysopen $oom, "/proc/self/oom_score_adj", 1;`, ["a kernel whose landlock_restrict_self answers 0 and enforces nothing is refused (70): /proc/self/oom_score_adj must not open for writing"], { tests: { [STAGE_TEST]: ["a kernel whose landlock_restrict_self answers 0 and enforces nothing is refused (70): /proc/self/oom_score_adj must not open for writing"], [CONFINEMENT_SANDBOX]: ["a kernel whose landlock_restrict_self answers 0 and does nothing: the stage's check refuses the spawn (70, one line)"] } }),

  /* ---- stage.pl: [private] a private job's guard ---- */
  stage("guard.pidfd", String.raw`  $pidfd >= 0 or refuse(EXIT_OS_ERROR, "pidfd_open of the private job failed: " . errname(), $PRIVATE_FIX);`, ["a private job whose guard cannot be set up is refused: pidfd_open, pipe, either fork, the nested domain"]),
  stage("guard.pipe", String.raw` or refuse(EXIT_OS_ERROR, "pipe failed: " . errname(), $KERNEL_FIX)`, ["a private job whose guard cannot be set up is refused: pidfd_open, pipe, either fork, the nested domain"]),
  stage("guard.fork", String.raw`  defined $parent or refuse($! == 11 ? EXIT_BUSY : EXIT_OS_ERROR, "fork of the private job's guard failed: " . errname(), $fix);`, ["a private job whose guard cannot be set up is refused: pidfd_open, pipe, either fork, the nested domain"]),
  stage("guard.fork-guard", String.raw`  refuse($? == 0 ? EXIT_BUSY : EXIT_OS_ERROR, "fork of the private job's guard failed", $fix) if ($guard // 0) <= 0;`, ["a private job whose guard cannot be set up is refused: pidfd_open, pipe, either fork, the nested domain"]),
  stage("guard.nested-domain", String.raw`
    or refuse(EXIT_OS_ERROR, "landlock_restrict_self of the private job's nested domain failed: " . errname(), $KERNEL_FIX)`, ["a private job whose guard cannot be set up is refused: pidfd_open, pipe, either fork, the nested domain"]),
  stage("guard.oom-open", String.raw`  sysopen my $fh, "/proc/self/oom_score_adj", O_RDWR or proc_failed("/proc/self/oom_score_adj");`, ["a private job whose oom_score_adj cannot be opened or read, whose guard's value reads wrong, or whose lease mark cannot be made, is refused"], { replace: String.raw`  sysopen my $fh, "/proc/self/oom_score_adj", O_RDWR;` }),
  stage("guard.oom-read", String.raw`  $value =~ /\A(-?\d{1,4})\n?\z/ or proc_failed("/proc/$_[0]/oom_score_adj", " (it read \"$value\")");`, ["a private job whose oom_score_adj cannot be opened or read, whose guard's value reads wrong, or whose lease mark cannot be made, is refused"], { replace: String.raw`  $value =~ /\A(-?\d{1,4})\n?\z/;` }),
  stage("guard.oom-verify", String.raw`  refuse(EXIT_VERIFY_FAILED, "$AGENT_WHAT its guard's oom_score_adj is $guard_score and its own $job_score (want $low and $held)", $AGENT_FIX)
    if $guard_score != $low || $job_score != $held;`, ["a private job whose oom_score_adj cannot be opened or read, whose guard's value reads wrong, or whose lease mark cannot be made, is refused"]),
  stage("guard.mark", String.raw` or refuse(EXIT_OS_ERROR, "open $want{private}/guard failed: " . errname(), $KERNEL_FIX);`, ["a private job whose oom_score_adj cannot be opened or read, whose guard's value reads wrong, or whose lease mark cannot be made, is refused"], { replace: ";" }),
  stage("guard.signal", String.raw`  refuse(EXIT_VERIFY_FAILED, "$AGENT_WHAT it can signal its guard (process $guard: " . (kill(0, $guard) ? "allowed" : errname()) . ", want EPERM)", $AGENT_FIX)
    if kill(0, $guard) || $! != 1;`, ["a private job whose nested domain the kernel only claims to apply is refused (70): it must not signal its guard"]),

  /* ---- stage.pl: exec ---- */
  stage("exec.marker-cloexec", String.raw` or refuse(EXIT_OS_ERROR, "fcntl F_SETFD of the started marker (fd $marker) failed: " . errname(), $KERNEL_FIX);`, [MARKER_TEST]),
  stage("exec.marker-write", String.raw` or refuse(EXIT_OS_ERROR, "write to the started marker (fd $marker) failed: " . errname(), "keep the marker pipe's read end open until the spawn has settled (spawnAgent does)");`, [MARKER_TEST]),
  stage("exec.failed", String.raw`  refuse($errno == 2 ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE, "cannot execute $path: " . errname(), "check the command's path and permissions");`, ["a command that cannot be executed: 127 when missing, 126 otherwise, one line each"]),
];

const CALLER_TEST: Record<string, string[]> = { "test/unit/agent-exec/caller.test.ts": ["refusals, each with its exit code and fix"] };
const CLI_TEST: Record<string, string[]> = { "test/unit/agent-exec/cli.test.ts": [] };
const RUN_TEST = "test/unit/agent-exec/run.test.ts";
const shim = (id: string, file: string, find: string, tests: Record<string, string[]>, to: string | null = ");"): Check => ({ id: `shim.${id}`, file, find, to, replace: "{}", tests });

CHECKS.push(
  /* ---- the shim: its caller ---- */
  shim("caller.root", "src/agent-exec/caller.ts", 'throw new Refusal(EXIT.launchRefused, "started by root:', CALLER_TEST),
  shim("caller.agent", "src/agent-exec/caller.ts", "throw new Refusal(EXIT.launchRefused, `started by the agent uid", CALLER_TEST),
  shim("caller.uid", "src/agent-exec/caller.ts", "throw new Refusal(EXIT.launchRefused, `started by uid", CALLER_TEST),
  shim("caller.capabilities", "src/agent-exec/caller.ts", "throw new Refusal(\n      EXIT.launchRefused,\n      `the caller holds no", CALLER_TEST, "\n    );"),
  shim("caller.no-new-privs", "src/agent-exec/caller.ts", 'throw new Refusal(EXIT.launchRefused, "NoNewPrivs is not set for the caller"', CALLER_TEST),

  /* ---- the shim: its command line ---- */
  shim("cli.started-fd-kept", "src/agent-exec/run-args.ts", "throw usage(AGENT_EXEC_NAME, `${STARTED_FD_VARIABLE}=${fd} is also a --keep-fd`", CLI_TEST),
  shim("cli.signal-name", "src/agent-exec/cli.ts", "throw usage(program, `--signal needs one of", CLI_TEST),
  shim("cli.signal-option", "src/agent-exec/cli.ts", "throw usage(program, `unknown option ${JSON.stringify(name)} with --signal`", CLI_TEST),
  shim("cli.signal-pgid", "src/agent-exec/cli.ts", 'throw usage(program, "--signal needs --pgid"', CLI_TEST),
  shim("cli.cleanup-alone", "src/agent-exec/cli.ts", 'throw usage(program, "--private-cleanup takes no other option"', CLI_TEST),
  shim("cli.extra-path", "src/agent-exec/run-args.ts", 'throw usage(program, `${option} ${JSON.stringify(value ?? "")} ${problem}`', CLI_TEST),
  shim("cli.allow-write-state", "src/agent-exec/run-args.ts", "throw usage(program, `--allow-write ${JSON.stringify(path)} ${unsafe}`", CLI_TEST),
  shim("cli.cwd", "src/agent-exec/run-args.ts", "throw usage(program, `--cwd needs an absolute directory", CLI_TEST),
  shim("cli.env-name", "src/agent-exec/run-args.ts", "throw usage(program, `--env needs a variable name", CLI_TEST),
  shim("cli.env-code", "src/agent-exec/run-args.ts", "throw usage(program, `--env ${value}: variables that load code are never passed`", CLI_TEST),
  shim("cli.flag-value", "src/agent-exec/run-args.ts", "throw usage(program, `${name} takes no value`", CLI_TEST),
  shim("cli.unknown-option", "src/agent-exec/run-args.ts", "throw usage(program, `unknown option ${JSON.stringify(name)}`, `put", CLI_TEST),
  shim("cli.dashes-before", "src/agent-exec/run-args.ts", "throw usage(program, `missing -- before the command ${", CLI_TEST),
  shim("cli.dashes", "src/agent-exec/run-args.ts", 'throw usage(program, "missing -- before the command"', CLI_TEST),

  /* ---- the shim: kept fds ---- */
  shim("fds.handed-open", "src/agent-exec/descriptors.ts", "throw new Refusal(EXIT.usage, `${what}: fd ${fd} is not open`", { "test/unit/agent-exec/descriptors.test.ts": ["checkHandedDescriptor: a kept fd or the started marker that is not open, or is close-on-exec, is refused (64)"] }),
  shim("fds.handed-cloexec", "src/agent-exec/descriptors.ts", "throw new Refusal(EXIT.usage, `${what}: fd ${fd} is close-on-exec here", { "test/unit/agent-exec/descriptors.test.ts": ["checkHandedDescriptor: a kept fd or the started marker that is not open, or is close-on-exec, is refused (64)"] }),

  /* ---- the shim: its session, its tools, the signal's target ---- */
  shim("run.terminal", "src/agent-exec/run.ts", 'throw new Refusal(EXIT.launchRefused, "the shim leads a session that has a controlling terminal"', { [RUN_TEST]: ["sessionPlan: a session leader holding a controlling terminal is refused (77)"] }),
  shim("run.group-leader", "src/agent-exec/run.ts", 'throw new Refusal(EXIT.launchRefused, "the shim leads a process group but not a session', { [RUN_TEST]: ["sessionPlan: a process-group leader that does not lead its session is refused (77): setsid(2) would fail with EPERM"] }),
  shim("run.perl-rules", "src/agent-exec/run.ts", "prepareExec({ command: TOOLS.perl, args: [], env: {}, trustedUids: [0] });", { [AGENT_SANDBOX]: ["a perl that others could write is refused by the shim's own exec rules (126, one line) although the launch trusted it"] }, null),
  shim("run.own-group", "src/agent-exec/run.ts", "throw new Refusal(EXIT.usage, `--pgid ${pgid} is the process group of clankie-agent-exec", { [RUN_TEST]: ["checkSignalTarget: the shim's own group and its caller's are refused (64); any other group passes to the stage"] }),

  /* ---- the private-job code: the pool ---- */
  shim("pool.members", "src/private-groups.ts", "throw new Refusal(EXIT.noUser, `group ${name} has members", { "test/unit/private-groups.test.ts": [], "test/unit/agent-exec/private-job.test.ts": ["a wrong pool refuses a private spawn and a release by hand (67), before anything of /run/clankie-private is read"] }),
  shim("pool.gid", "src/private-groups.ts", "throw new Refusal(EXIT.noUser, `group ${name} has gid ${group.gid}, which is not its own`", { "test/unit/private-groups.test.ts": [] }),

  /* ---- the private-job code: the lease ---- */
  shim("private.dir-missing", "src/agent-exec/private-job.ts", "throw new Refusal(EXIT.launchRefused, `${PRIVATE_DIR} is missing", { [PRIVATE_SANDBOX]: ["a private spawn without the pool's groups (67) or without /run/clankie-private (77) is refused, one line each"] }),
  shim("private.dir-mode", "src/agent-exec/private-job.ts", "throw new Refusal(EXIT.launchRefused, `${PRIVATE_DIR} is not a directory of", { [PRIVATE_SANDBOX]: ["/run/clankie-private that is not node's 0711 directory refuses a private spawn (77, one line); closed again, the spawn runs"] }),
  shim("private.no-pool", "src/agent-exec/private-job.ts", "throw new Refusal(EXIT.noUser, `no ${PRIVATE_GROUP_PREFIX}N group is defined", { [PRIVATE_SANDBOX]: ["a private spawn without the pool's groups (67) or without /run/clankie-private (77) is refused, one line each"] }),
  shim("private.busy", "src/agent-exec/private-job.ts", "throw new Refusal(EXIT.busy, `all ${pool.length} private-job groups are leased", { [PRIVATE_SANDBOX]: ["a pool of one: a lease nobody released is taken back when no process holds its group; while one runs, the next is refused (75)"] }),
  shim("private.release-wait", "src/agent-exec/private-job.ts", "throw new Refusal(EXIT.busy, `the lease of group ${group.gid} has been being released", { [PRIVATE_SANDBOX]: ["a release by hand whose lease another release holds for over a minute is refused (75, one line)"] }),
  shim("private.release-rules", "src/agent-exec/private-job.ts", "for (const tool of [TOOLS.perl, TOOLS.find]) prepareExec({ command: tool, args: [], env: {}, trustedUids: [0] });", { [PRIVATE_SANDBOX]: ["a release by hand: no lease recorded (65), a link that names no group of the pool (65), a find that others could write (126), one line each"] }, null),
  shim("private.cleanup-error", "src/agent-exec/private-job.ts", "throw new Refusal(EXIT.osError, `the cleanup of ${lease.dir} failed: ${run.error}`", { [PRIVATE_SANDBOX]: ["a cleanup stage that cannot be run, or is killed, fails the release (71, one line) and leaves the lease"] }),
  shim("private.cleanup-killed", "src/agent-exec/private-job.ts", "throw new Refusal(EXIT.osError, `the cleanup stage of ${lease.dir} was killed by ${run.signal}`", { [PRIVATE_SANDBOX]: ["a cleanup stage that cannot be run, or is killed, fails the release (71, one line) and leaves the lease"] }),
  shim("private.still-held", "src/agent-exec/private-job.ts", "writeLine(2, formatRefusal(`a process still holds group ${lease.group}", { [PRIVATE_SANDBOX]: ["a release whose group a process still holds after the cleanup stage is refused (75) and the lease stays"] }, "));"),
  shim("private.no-lease", "src/agent-exec/private-job.ts", "throw new Refusal(EXIT.dataRefused, `no private lease is recorded for job ${pid}`", { [PRIVATE_SANDBOX]: ["a release by hand: no lease recorded (65), a link that names no group of the pool (65), a find that others could write (126), one line each"] }),
  shim("private.bad-link", "src/agent-exec/private-job.ts", "throw new Refusal(EXIT.dataRefused, `${pidLink(pid)} names ${JSON.stringify(index)}, no group of the pool`", { [PRIVATE_SANDBOX]: ["a release by hand: no lease recorded (65), a link that names no group of the pool (65), a find that others could write (126), one line each"] }),
  shim("private.job-runs", "src/agent-exec/private-job.ts", "throw new Refusal(\n        EXIT.busy,\n        `process ${pid} runs and holds the lease's group", { [PRIVATE_SANDBOX]: ["the release of a job whose pid a running private job has is refused (75): that job lives on with its lease, and is released at its own end"] }, "\n      );"),
);

/*
 * The code that runs with privilege beyond the shim (the entrypoint's root
 * phase and drop, the layouts it applies, the exec rules every exec passes,
 * the accounts it reads) and the service's API (src/system-exec.ts,
 * src/service/*). Their sites also count a gate of the exec rules
 * (gateExec, prepareExec) and the tree walk's refusal of an entry that
 * changed under it (throw changed / changedUnderUs).
 */
const cut = (id: string, file: string, find: string, tests: Record<string, string[]>, to: string | null = ");", replace = "{}"): Check => ({ id, file, find, to, replace, tests });
const ENTRY_SANDBOX = "test/sandbox/entrypoint.test.ts";
const RULES_TEST: Record<string, string[]> = { "test/unit/exec/rules.test.ts": [] };
const ACCOUNTS_TEST: Record<string, string[]> = { "test/unit/accounts.test.ts": [] };
const LAUNCH_TEST: Record<string, string[]> = { "test/unit/entrypoint/launch-check.test.ts": [] };

CHECKS.push(
  /* ---- the entrypoint: its command line and what launched it ---- */
  cut("entry.cli.no-command", "src/entrypoint/cli.ts", 'throw usage(program, "no service command given"', { "test/unit/entrypoint/cli.test.ts": [] }),
  cut("entry.cli.unknown-option", "src/entrypoint/cli.ts", "throw usage(program, `unknown option ${JSON.stringify(first)}`", { "test/unit/entrypoint/cli.test.ts": [] }),
  cut("entry.launch.mixed-ids", "src/entrypoint/launch-check.ts", "throw new Refusal(EXIT.launchRefused, `started with mixed user ids", LAUNCH_TEST),
  cut("entry.launch.no-new-privs", "src/entrypoint/launch-check.ts", 'throw new Refusal(EXIT.launchRefused, "started as root without NoNewPrivs"', LAUNCH_TEST),
  cut("entry.launch.capabilities", "src/entrypoint/launch-check.ts", "throw new Refusal(\n      EXIT.launchRefused,\n      `started as root without capabilit", LAUNCH_TEST, "\n    );"),
  cut("entry.run.tool-rules", "src/entrypoint/run.ts", "for (const tool of [TOOLS.setpriv, TOOLS.perl, ...(tini ? [TOOLS.tini] : [])]) prepareExec({ command: tool, args: [], env: {}, trustedUids: [0] });", { [ENTRY_SANDBOX]: ["a setpriv or perl that others could write is refused before anything changes (exit 126); the service command's rules run in the same phase"] }, null, ""),
  cut("entry.run.service-rules", "src/entrypoint/run.ts", "prepareExec({ command: command[0]!, args: [], env: {}, trustedUids: [0, ids.service.uid] }).path", { [ENTRY_SANDBOX]: ["a service command the agent could have written is refused before anything changes (exit 126)"] }, null, "command[0]!"),

  /* ---- the layouts: /state's rules and /workspace ---- */
  cut("entry.workspace.not-directory", "src/entrypoint/workspace-layout.ts", "throw new Refusal(EXIT.dataRefused, `${WORKSPACE_DIR} is not a directory`", { [ENTRY_SANDBOX]: ["/workspace or /state that is not a directory is refused (65, one line), nothing changed"] }),

  /* ---- the exec rules (src/exec/rules.ts), which every exec passes ---- */
  cut("exec.empty", "src/exec/rules.ts", 'throw new Refusal(EXIT.usage, "the command is empty"', RULES_TEST),
  cut("exec.command-nul", "src/exec/rules.ts", 'throw new Refusal(EXIT.usage, "the command contains a NUL byte"', RULES_TEST),
  cut("exec.not-found", "src/exec/rules.ts", "throw new Refusal(EXIT.notFound, `${command}: not found in ${SYSTEM_PATH}`", RULES_TEST, ");", 'return "/nonexistent";'),
  cut("exec.resolve-missing", "src/exec/rules.ts", "if (code === \"ENOENT\") throw new Refusal(EXIT.notFound, `${path}: no such file${whose}`", RULES_TEST),
  cut("exec.resolve-failed", "src/exec/rules.ts", "throw new Refusal(EXIT.notExecutable, `${path}: cannot be resolved (${code})${whose}`", RULES_TEST, ");", "return path;"),
  cut("exec.check-failed", "src/exec/rules.ts", "throw new Refusal(EXIT.notExecutable, `${place}: cannot be checked", RULES_TEST, ");", "continue;"),
  cut("exec.owner", "src/exec/rules.ts", "throw new Refusal(EXIT.notExecutable, `refusing to execute ${subject}: ${place} is owned by uid", RULES_TEST),
  cut("exec.writable", "src/exec/rules.ts", "throw new Refusal(EXIT.notExecutable, `refusing to execute ${subject}: ${place} is writable by group or other", RULES_TEST),
  cut("exec.file-missing", "src/exec/rules.ts", "if (code === \"ENOENT\") throw new Refusal(EXIT.notFound, `${path}: no such file`, \"check the command's path\");", RULES_TEST, null),
  cut("exec.file-failed", "src/exec/rules.ts", "throw new Refusal(EXIT.notExecutable, `${path}: cannot be executed (${code})`", RULES_TEST, ");", "return;"),
  cut("exec.not-regular", "src/exec/rules.ts", "throw new Refusal(EXIT.notExecutable, `${path}: not a regular file`", RULES_TEST),
  cut("exec.not-executable", "src/exec/rules.ts", "throw new Refusal(EXIT.notExecutable, `${path}: not executable by uid", RULES_TEST),
  cut("exec.unreadable", "src/exec/rules.ts", "throw new Refusal(\n      EXIT.notExecutable,\n      `refusing to execute ${path}: it cannot be read", RULES_TEST, "\n    );", "return;"),
  cut("exec.interpreter-relative", "src/exec/rules.ts", "throw new Refusal(EXIT.notExecutable, `${path}: #! line names no absolute interpreter`", RULES_TEST),
  cut("exec.script-depth", "src/exec/rules.ts", "throw new Refusal(EXIT.notExecutable, `${chain[0]}: more than ${MAX_SCRIPT_DEPTH} #! scripts in a row", RULES_TEST),
  cut("exec.not-program", "src/exec/rules.ts", "throw new Refusal(EXIT.notExecutable, `${path}: not an ELF binary or #! script", RULES_TEST),
  cut("exec.argument-nul", "src/exec/rules.ts", 'throw new Refusal(EXIT.usage, "an argument or environment entry contains a NUL byte"', RULES_TEST),
  cut("exec.environment-name", "src/exec/environment.ts", "throw new Refusal(EXIT.usage, `${JSON.stringify(name)} is not a variable name", { "test/unit/exec/environment.test.ts": [] }),
  cut("exec.environment-code", "src/exec/environment.ts", "throw new Refusal(EXIT.usage, `${name}: variables that load code are never passed to a child`", { "test/unit/exec/environment.test.ts": [] }),
  cut("exec.prepare-gate", "src/exec/replace.ts", "const path = gateExec(request);", RULES_TEST, null, "const path = request.command;"),
  cut("exec.replace-gate", "src/exec/replace.ts", "const { path, argv, env } = prepareExec(request);", { [ENTRY_SANDBOX]: ["today's launch (node, no capabilities): a service command that others could write is refused (126, one line) by the exec that would replace the entrypoint"] }, null, "const { path, argv, env } = { path: request.command, argv: [request.argv0 ?? request.command, ...request.args], env: { ...request.env, PATH: SYSTEM_PATH } };"),
  cut("exec.capture-gate", "src/exec/capture.ts", "gateExec({ command: request.command, args: request.args, trustedUids: request.trustedUids ?? [0] })", { "test/unit/exec/capture.test.ts": [] }, null, "request.command"),
  cut("exec.capture-setpriv", "src/exec/capture.ts", "gateExec({ command: TOOLS.setpriv, args: [], trustedUids: [0] });", { "test/sandbox/exec-rules.test.ts": ["a capture that drops capabilities (the audit's image scan) refuses a setpriv that others could write (126) before anything starts; control: closed, it runs"] }, null),

  /* ---- the accounts (/etc/passwd, /etc/group) every role reads ---- */
  cut("accounts.duplicate", "src/accounts.ts", "throw new Refusal(EXIT.noUser, `${file} defines ${name} ${matches.length} times`", ACCOUNTS_TEST),
  cut("accounts.service-missing", "src/accounts.ts", "if (!service) throw new Refusal(EXIT.noUser, `user ${SERVICE_USER} is missing", ACCOUNTS_TEST),
  cut("accounts.agent-missing", "src/accounts.ts", "if (!agent) throw new Refusal(EXIT.noUser, `user ${AGENT_USER} is missing", ACCOUNTS_TEST),
  cut("accounts.workspace-missing", "src/accounts.ts", "if (!workspaceGroup) throw new Refusal(EXIT.noUser, `group ${WORKSPACE_GROUP} is missing", ACCOUNTS_TEST),
  cut("accounts.service-root", "src/accounts.ts", "throw new Refusal(EXIT.noUser, `user ${SERVICE_USER} has uid ${service.uid} gid ${service.gid}`", ACCOUNTS_TEST),
  cut("accounts.agent-root", "src/accounts.ts", "throw new Refusal(EXIT.noUser, `user ${AGENT_USER} has uid ${agent.uid} gid ${agent.gid}`", ACCOUNTS_TEST),
  cut("accounts.same-uid", "src/accounts.ts", "throw new Refusal(EXIT.noUser, `user ${AGENT_USER} has the same uid as ${SERVICE_USER}", ACCOUNTS_TEST),
  cut("accounts.same-group", "src/accounts.ts", "throw new Refusal(EXIT.noUser, `user ${AGENT_USER} has the primary group of ${SERVICE_USER}", ACCOUNTS_TEST),
  cut("accounts.workspace-gid", "src/accounts.ts", "throw new Refusal(EXIT.noUser, `group ${WORKSPACE_GROUP} has gid ${workspaceGroup.gid}, which is not its own`", ACCOUNTS_TEST),
  cut("accounts.service-not-member", "src/accounts.ts", "throw new Refusal(EXIT.noUser, `user ${SERVICE_USER} is not a member of ${WORKSPACE_GROUP}`", ACCOUNTS_TEST),
  cut("accounts.agent-groups", "src/accounts.ts", "throw new Refusal(EXIT.noUser, `user ${AGENT_USER} is a member of groups", ACCOUNTS_TEST),
  cut("accounts.service-in-agent-group", "src/accounts.ts", "throw new Refusal(EXIT.noUser, `user ${SERVICE_USER} is a member of ${AGENT_USER}'s group`", ACCOUNTS_TEST),
);

/*
 * Files that other work rewrites (the /state walk: src/entrypoint/tree-walk.ts,
 * src/entrypoint/state-acl.ts, src/entrypoint/state-layout.ts; the service API:
 * src/service/*, src/system-exec.ts): their entries apart, so that snippets
 * can be re-cut in one place.
 */
const WALK_TEST: Record<string, string[]> = { "test/unit/entrypoint/tree-walk.test.ts": [] };
const ACL_TEST: Record<string, string[]> = { "test/unit/entrypoint/state-acl.test.ts": [] };
const AUDIT_TEST = "test/unit/self-check/state.test.ts";
const AUDIT_REFUSED = "a device node, a hard link to another uid's file and a mount point are found with the start's own words, and the walk goes on; control: a FIFO, the service's own hard link and another uid's file of one name are judged by owner and mode";
const STOP_TEST: Record<string, string[]> = { "test/unit/service/agent-stop.test.ts": [] };
const API_TEST: Record<string, string[]> = { "test/unit/system-exec.test.ts": [] };
CHECKS.push(
  /* ---- the /state walk ---- */
  cut("walk.open-changed", "src/entrypoint/tree-walk.ts", 'if (code === "ELOOP" || code === "ENOTDIR") throw changed(path);', WALK_TEST, null),
  cut("walk.open-other-inode", "src/entrypoint/tree-walk.ts", "    throw changed(path);\n", WALK_TEST, null, "\n"),
  cut("walk.root-not-directory", "src/entrypoint/state-acl.ts", "if (!st.isDirectory()) throw new Refusal(EXIT.dataRefused, `${root} is a ${kindOf(st)}, not a directory`", { [ENTRY_SANDBOX]: ["/workspace or /state that is not a directory is refused (65, one line), nothing changed"] }),
  cut("walk.entry-gone", "src/entrypoint/tree-walk.ts", 'if (code === "ENOENT" || code === "ELOOP") throw changedUnderUs(view.path);', WALK_TEST, null),
  cut("walk.entry-swapped", "src/entrypoint/tree-walk.ts", "if (!sameInode(opened, st) || kindOf(opened) !== kind || opened.nlink !== st.nlink) throw changedUnderUs(view.path);", WALK_TEST, null),
  cut("walk.state-not-directory", "src/entrypoint/state-layout.ts", "if (!st.isDirectory()) throw new Refusal(EXIT.dataRefused, `${path} is a ${kindOf(st)}, not a directory`, fix);", { [ENTRY_SANDBOX]: ["a symlink planted as /state/agent, the agent's home, is refused (exit 65): its target is never given to the agent"] }, null),
  cut("walk.acl-output", "src/entrypoint/state-acl.ts", "if (result.status === 0) throw new Refusal(EXIT.osError, `the walk of ${root} printed what it should not", ACL_TEST),
  cut("walk.acl-changed", "src/entrypoint/state-acl.ts", "throw new Refusal(EXIT.dataRefused, `${walk.changed} changed while it was being taken over", ACL_TEST),
  cut("walk.acl-failed", "src/entrypoint/state-acl.ts", "throw new Refusal(EXIT.osError, `the walk of ${root} (perl) failed", ACL_TEST, ");", ""),
  // The perl walk's own refusals (src/perl/state-acl.pl), which the start's phase reports.
  cut("walk.perl-device", "src/perl/state-acl.pl", 'stop(65, "D", pathOf($name, $shown)) if $type == 0020000 || $type == 0060000;', { [ENTRY_SANDBOX]: ["FIFOs do not block the walk and are taken over; device nodes in /state are refused"] }, null, ""),
  cut("walk.perl-foreign-link", "src/perl/state-acl.pl", 'stop(65, "H", pathOf($name, $shown), $st[3], $st[4]) if $st[3] > 1 && $st[4] != $uid;', { [ENTRY_SANDBOX]: ["a hard link in /state to a file another uid owns is refused (exit 65), the file untouched"] }, null, ""),
  cut("walk.perl-swapped", "src/perl/state-acl.pl", "changed($label) unless @o && $o[0] == $st[0] && $o[1] == $st[1] && ($o[2] & 0170000) == $type && ($type == $DIR || $o[3] == $st[3]);", { "test/unit/layout/state-acl.test.ts": ["a file swapped after lstat, a name gone or made a symlink before the open, a directory moved out from under the walk: each stops the walk (65), and nothing it did not look at is changed; control: no race, the same tree is fixed"] }, null, ""),
  cut("walk.perl-open-gone", "src/perl/state-acl.pl", "changed($label) if $fix && ($! == 2 || $! == 20 || $! == 40); ", { "test/unit/layout/state-acl.test.ts": ["a file swapped after lstat, a name gone or made a symlink before the open, a directory moved out from under the walk: each stops the walk (65), and nothing it did not look at is changed; control: no race, the same tree is fixed"] }, null, ""),
  cut("walk.perl-dotdot", "src/perl/state-acl.pl", "changed(undef) unless @p && $p[0] == $stack[-1][2] && $p[1] == $stack[-1][3];", { "test/unit/layout/state-acl.test.ts": ["a file swapped after lstat, a name gone or made a symlink before the open, a directory moved out from under the walk: each stops the walk (65), and nothing it did not look at is changed; control: no race, the same tree is fixed"] }, null, ""),

  /* ---- the audit's walk of /state (a dry run of the start's): what it finds ---- */
  cut("audit.state.acl", AUDIT, 'found("A", $zone, $label, $a, $d) if length($a) || length($d);', { [AUDIT_TEST]: ["an ACL below /state is found in its zone, named as getfacl writes it; one on /state belongs to state.layout"] }, null, ""),
  cut("audit.state.device", AUDIT, 'return found("M", $zone, $label, @st[2, 4, 5, 3], "", "device") if $type == 0020000 || $type == 0060000;', { [AUDIT_TEST]: [AUDIT_REFUSED] }, null, ""),
  cut("audit.state.foreign-hard-link", AUDIT, 'return found("M", $zone, $label, @st[2, 4, 5, 3], "", "link") if $type != $DIR && $st[3] > 1 && $st[4] != $uid;', { [AUDIT_TEST]: [AUDIT_REFUSED] }, null, ""),
  cut("audit.state.mount", AUDIT, 'found("M", $zone, $name, @st[2, 4, 5, 3], "", "mount");', { [AUDIT_TEST]: [AUDIT_REFUSED] }, null, ""),
  cut("audit.state.mode-owner", AUDIT, 'found("M", $zone, $label, @st[2, 4, 5, 3], $type == $LINK ? "" : $want, "");', { [AUDIT_TEST]: ["what the start would change is found with the mode it would give, in its zone: private entries lose group and other bits and every special bit; the release keeps what group or other could read or run, for other too; the release root is 0755 and /state 0711"] }, null, ""),
  cut("audit.state.deep", AUDIT, 'return found("S", $zone, $name, "deep") if $why eq "deep";', { [AUDIT_TEST]: ["a chain deeper than DEPTH_LIMIT of 255-byte names: every level to the limit judged, the one at the limit counted deep, nothing below it read; the output and the address space stay bounded (the control: each level's path kept dies under the same limit)"] }, null, ""),

  /* ---- the service's API ---- */
  cut("api.stop-timeout", "src/service/agent-stop.ts", "throw new Refusal(EXIT.usage, `signalAgent: timeoutMs ${JSON.stringify(timeoutMs)}", STOP_TEST),
  cut("api.stop-abort-signal", "src/service/agent-stop.ts", 'throw new Refusal(EXIT.usage, "signalAgent: the signal option is not an AbortSignal"', STOP_TEST),
  cut("api.signal-name", "src/service/agent-stop.ts", "throw new Refusal(EXIT.usage, `${where} ${JSON.stringify(signal)}: the shim delivers only", API_TEST),
  cut("api.identity-options", "src/system-exec.ts", "throw new Refusal(EXIT.usage, `${where}: the ${name} option is not accepted: this package sets no child's", API_TEST),
  cut("api.unsupported-options", "src/system-exec.ts", "throw new Refusal(EXIT.usage, `${where}: the ${name} option is not accepted: this package starts only", API_TEST),
  cut("api.spawn-shim-gone", "src/system-exec.ts", 'throw new Refusal(EXIT.usage, "spawnAgent: the shim option is gone', API_TEST),
  cut("api.signal-shim-gone", "src/service/agent-stop.ts", 'throw new Refusal(EXIT.usage, "signalAgent: the shim option is gone', STOP_TEST),
  cut("api.holder-perl", "src/system-exec.ts", "gateExec({ command: TOOLS.perl, args: [], trustedUids: [0] });\n  const holder", { "test/sandbox/agent-exec.test.ts": ["spawnAgent refuses a perl that others could write (126, one line) before the holder starts; control: closed, it reaches the channel"] }, null, "  const holder"),
  cut("api.exec-gate", "src/system-exec.ts", "gateExec({ command, args, trustedUids: trustedUids ?? [...new Set([0, process.geteuid!()])] })", { "test/unit/system-exec.test.ts": ["systemExec refuses a program the exec rules refuse (126) before anything starts; control: a shell of the system runs it"] }, null, "command"),
  cut("api.exec-setpriv", "src/system-exec.ts", "  gateExec({ command: TOOLS.setpriv, args: [], trustedUids: [0] });\n  const start", { [ENTRY_SANDBOX]: ["systemExec refuses a setpriv that others could write (126) before anything starts; control: closed, it runs the program"] }, null, "  const start"),
  cut("api.self-check-gate", "src/system-exec.ts", "gateExec({ command: `${INSTALL_DIR}/${ENTRYPOINT_NAME}`, args, trustedUids: [0] })", { "test/unit/system-exec.test.ts": ["runSelfCheck refuses an entrypoint that is missing or that others could write (126/127) before anything starts"] }, null, "`${INSTALL_DIR}/${ENTRYPOINT_NAME}`"),
  cut("api.agent-env-code", "src/system-exec.ts", "if (isCodeLoadingVariable(name)) throw new Refusal(EXIT.usage, `${name}: variables that load code are never passed to agent work`", API_TEST),
  cut("api.allow-write-state", "src/system-exec.ts", "if (unsafe !== undefined) throw new Refusal(EXIT.usage, `allowWrite ${JSON.stringify(path)} ${unsafe}`, WRITABLE_PATH_FIX);", API_TEST),
  cut("api.network", "src/system-exec.ts", "throw new Refusal(EXIT.usage, `network ${JSON.stringify(options.network)}", API_TEST),
);

/* ---- the resident spawner (issue 35): what a request may ask, and its grab of the holder's fds ---- */
const SPAWNER = "src/agent-exec/spawner.ts";
const AS_THE_AGENT: Record<string, string[]> = { "test/sandbox/spawner.test.ts": ["the service holds no capability in any set, the bounding set included; the job runs as the agent with fds 0-2 only"] };
const CLONE_PLAIN: Record<string, string[]> = { "test/sandbox/private-guard.test.ts": ["clone(CLONE_PARENT) from a plain job on a kernel without seccomp filters: the clones are made, and their parent, the job's grab, reaps them while the job runs; no zombie of the agent's anywhere, then or after"] };
const ACCEPTOR_TEST: Record<string, string[]> = { "test/unit/service/stream-acceptor.test.ts": ["a connection that is not the service's is closed unread, and the job's fd stays the service's; control: the service's own reaches the grab", "a grab of another uid gets no fd; control: a grab of the acceptor's uid takes the job's fd 1"] };
const SPAWNER_LAUNCH: Record<string, string[]> = { "test/sandbox/spawner.test.ts": ["the spawner started without its channel (CLANKIE_SPAWNER_FD unset or below 3) or without the identities the root phase hands it (CLANKIE_SPAWNER_IDS unset or malformed): refused in one line (64) before it reads anything; control: with both, it starts and waits on its channel"] };
const ZYGOTE_TEST: Record<string, string[]> = { "test/unit/agent-exec/spawner.test.ts": [] };
const KEPT_LOW: Record<string, string[]> = { "test/sandbox/spawner.test.ts": ["keepFds 3, 4 and 5 reach the job as the service's own pipes (3 and 4 are the numbers the grab's own files take while it takes the job's fds)"] };
const SPAWNER_RAW: Record<string, string[]> = { "test/sandbox/spawner.test.ts": ["another node process that holds the channel gets no more than the service could ask: no command but agent work, no holder but a capless one of the service's, no socket but that holder's, no field that hides a chain of its own behind a NUL, no environment but the agent's carried variables (LD_PRELOAD for a private job's shim), no stop or release of a job the spawner did not start; control: a request the service could send runs as the agent"] };
CHECKS.push(
  cut("spawner.fd-variable", SPAWNER, "throw new Refusal(EXIT.usage, `${SPAWNER_FD_VARIABLE} is not an fd of 3 or more`", SPAWNER_LAUNCH),
  cut("spawner.ids-variable", SPAWNER, "throw new Refusal(EXIT.usage, `${SPAWNER_IDS_VARIABLE} is not node's uid", SPAWNER_LAUNCH),
  cut("spawner.chain-rules", SPAWNER, "if (plan.chain[0] !== \"-stage\") gateExec({ command: plan.chain[0]!, args: plan.chain, env, trustedUids: [0] });", { "test/sandbox/spawner.test.ts": ["the executable the spawner's grab starts for a private job, made writable after the launch (clankie-agent-exec 0757), is refused by the spawner before each start (126, one line); control: the same private job before the change runs as the agent"] }, null, ""),
  cut("spawner.field-nul", SPAWNER, "throw new Refusal(EXIT.usage, \"a field of the job holds a NUL byte\"", { ...SPAWNER_RAW, "test/sandbox/exec-rules.test.ts": ["no child of the service holds a capability or becomes root, by systemExec, child_process or plain execa; setuid(0)/setuid(1001) fail in the service; execa's node with a planted nodePath is refused; a raw request that hides a chain behind NUL-ended fields runs nothing; control: the spawner beside it holds SETUID+SETGID"] }),
  cut("spawner.env-names", SPAWNER, "if (foreign !== undefined) throw new Refusal(EXIT.usage, `the spawn's environment names", SPAWNER_RAW),
  cut("spawner.holder-pid", SPAWNER, "throw new Refusal(EXIT.usage, `the spawn names no holder's pid", SPAWNER_RAW),
  cut("spawner.refusal-line", SPAWNER, "formatRefusal(error.message, error.fix)", SPAWNER_RAW, null, "error.message"),
  cut("spawner.signal-not-started", SPAWNER, "pgid !== undefined && jobs.has(pgid) ? undefined :", SPAWNER_RAW, "spawnAgent started`", "undefined"),
  cut("spawner.release-not-ended", SPAWNER, "endedPrivate.delete(request.pid) ? undefined :", SPAWNER_RAW, "once`", "undefined"),
  cut("grab.holder-uid", GRAB, "(@ids == 4 && !grep { $_ != $uid } @ids) or refuse(77,", SPAWNER_RAW, "agent work\");", ""),
  cut("grab.holder-caps", GRAB, "($f{$set} // \"x\") =~ /\\A0+\\z/ or refuse(77,", SPAWNER_RAW, "agent work\");", ""),
  cut("grab.holder-socket", GRAB, "($pid // 0) == $holder && ($peer // -1) == $uid or refuse(77,", SPAWNER_RAW, "agent work\");", ""),
  // Not refusals: the job's parent is the grab, which reaps what clone(CLONE_PARENT) gives it while the job runs (only the job waited for leaves them as zombies).
  // A job exec'd in its grab's place would give them to the zygote, which reaps every child of its own: no test tells that apart, so it is no guard here.
  { ...cut("client.stop-awaits-pid", "src/service/spawner-client.ts", "if (job !== undefined && !job.answered) return new Promise(", { "test/sandbox/agent-stop.test.ts": ["kill() right after the spawn stops the command"] }, ");"), guard: true },
  // Not refusals: the acceptor answers only the service's connections and a grab of its own uid, and drops any other unread.
  { ...cut("acceptor.service-streams", "src/service/stream-acceptor.ts", "    (peer($s))[0] == $service or next;\n", ACCEPTOR_TEST, null, ""), guard: true },
  { ...cut("acceptor.grab-uid", "src/service/stream-acceptor.ts", "  (peer($g))[1] == $< or return;\n", ACCEPTOR_TEST, null, ""), guard: true },
  { ...cut("grab.reaps", GRAB, "my $gone = waitpid(-1, 0);", CLONE_PLAIN, null, "my $gone = waitpid($job, 0);"), guard: true },
  // Not refusals: the grab's drop to the agent, each step of which the stage it runs into verifies from /proc/self/status (70) before the command.
  { ...cut("grab.drop", GRAB, "drop();\n", AS_THE_AGENT, null, ""), guard: true },
  { ...cut("grab.drop-groups", GRAB, "  syscall($setgroups,", AS_THE_AGENT, "\n", ""), guard: true },
  { ...cut("grab.drop-capabilities", GRAB, "  syscall($capset,", AS_THE_AGENT, "\n", ""), guard: true },
  // Not refusals: the zygote (src/perl/spawn-grab.pl) reports every grab once, under its id, and nothing else reaches its report.
  { ...cut("zygote.early-end", GRAB, "return $early{$g} = $status", ZYGOTE_TEST, null, "return"), guard: true },
  { ...cut("zygote.report-not-held", GRAB, "  syscall($dup3, 0, 1, 0) == 1 or refuse(71,", ZYGOTE_TEST, "\n", ""), guard: true },
  { ...cut("zygote.grab-reaps-its-own", GRAB, "    $SIG{CHLD} = \"DEFAULT\";", AS_THE_AGENT, "\n", ""), guard: true },
  // Not refusals: the grab's own handles are closed before the job's fds take their numbers (perl would close a handle's number at the sub's end).
  { ...cut("grab.close-status", GRAB, "  close $st;", KEPT_LOW, "\n", ""), guard: true },
  { ...cut("grab.close-socket", GRAB, "  close $s;\n", KEPT_LOW, null, ""), guard: true },
  // Not dumpable after its change of ids, the process's /proc files are root's, and the stage's check of its Landlock domain passes with none.
  { ...cut("grab.dumpable", GRAB, "  syscall($prctl, PR_SET_DUMPABLE,", { "test/sandbox/confinement.test.ts": ["a kernel whose landlock_restrict_self answers 0 and does nothing: the stage's check refuses the spawn (70, one line)"] }, "\n", ""), guard: true },
);
