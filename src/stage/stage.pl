# The verification stage, the last step of both privilege changes, run by
# `perl -T -C0 -e` in the process setpriv became (src/stage/stage.ts says why
# it is perl; nothing of it is on disk), or, for the spawner's jobs and stops,
# in its grab's process after the grab's own drop: the grab (perl -T -C0 too)
# carries this program after its own as package Stage and runs on into it
# with the request in @ARGV (src/perl/spawn-grab.pl). Filled in at
# build time (names between at signs): the protocol's tables, from
# src/stage/protocol.ts, and the system call numbers of the architecture;
# exit codes and messages are literals (test/unit/project/perl-programs.test.ts
# holds the exit codes to EXIT of src/constants.ts). The protocol is closed:
# the role names the keys that must come, each once (path= and port= may
# repeat), each of its form; anything else is a usage error (64), so no check
# is skipped by leaving its key out. The steps run in the order of the lines
# that call them, below the tables.
#
# Each role gets only its own steps: a section whose header names a role in
# brackets ("# ---- [agent] ...") is cut from every other role's program, and
# each program accepts only its own role (stageProgram in src/stage/stage.ts).
# A "[private]" section is kept only in the agent's program for a private job.
# perl compiles about 3 KB of this program per millisecond, and the agent's
# is the one compiled for every piece of agent work. Its lines of comment
# alone, these among them, are not handed to perl (withoutComments in
# src/stage/stage.ts): a line that starts with # inside a string of several
# lines would be cut from it, so write none (the B::Deparse test would fail).

sub EXIT_OK () { 0 }
sub EXIT_USAGE () { 64 }
sub EXIT_DATA_REFUSED () { 65 }
sub EXIT_VERIFY_FAILED () { 70 }
sub EXIT_OS_ERROR () { 71 }
sub EXIT_BUSY () { 75 }
sub EXIT_LAUNCH_REFUSED () { 77 }
sub EXIT_NOT_EXECUTABLE () { 126 }
sub EXIT_NOT_FOUND () { 127 }

my $AGENT_WHAT = 'the agent process is not what was asked:';
my $AGENT_FIX = 'do not start agent work on this body; run clankie-separate --self-check --probe and report its output';
my $SERVICE_WHAT = 'after the drop to node the kernel reports';
my $SERVICE_FIX = 'check that the launch has --cap-add SETPCAP, SETUID and SETGID and that the kernel supports ambient capabilities (Linux 4.3+)';
my $CONFINEMENT_FIX = 'run agent work on a kernel with Landlock ABI 6 or later (Linux 6.12+, lsm= including landlock) under an engine whose seccomp profile allows landlock_create_ruleset, landlock_add_rule and landlock_restrict_self (Docker 20.10.18+), or spawn without --strict-confinement to run it under the uid boundary alone';
my $PRIVATE_FIX = 'run private jobs on a kernel with Landlock ABI 6 or later (Linux 6.12+, lsm= including landlock) where seccomp filters can be installed: without both, a private job is refused';
my $STAGE_FIX = 'this stage is started by clankie-separate itself';
my $KERNEL_FIX = 'report this with the kernel version (uname -r)';

# The keys of each role, which may repeat, and the form of each value
# (%ROLE_KEYS, %REPEATED, %FORM): src/stage/protocol.ts, the protocol's one
# declaration, fills them in at build time, in place of the next line.
@PROTOCOL@
# Anchored and captured once here, not rebuilt for every key.
$FORM{$_} = qr/\A($FORM{$_})\z/s for keys %FORM;

my $program = 'clankie-separate';
my ($role, %want, %rules, @command, %status);

sub line { my $text = join "", @_; $text =~ s/[\r\n]+/ /g; syswrite STDERR, "$program: $text\n" }
sub refuse { my ($code, $what, $fix) = @_; line("$what; $fix"); exit $code }
sub usage { refuse(EXIT_USAGE, "verification stage: $_[0]", $STAGE_FIX) }
# Linux's errno numbers, the same on x86-64 and arm64 (%! would load Errno.pm, over a millisecond).
my %ERRNO = (1, "EPERM", 2, "ENOENT", 3, "ESRCH", 5, "EIO", 7, "E2BIG", 8, "ENOEXEC", 9, "EBADF", 11, "EAGAIN", 12, "ENOMEM", 13, "EACCES", 17, "EEXIST", 20, "ENOTDIR", 21, "EISDIR", 22, "EINVAL", 24, "EMFILE", 26, "ETXTBSY", 36, "ENAMETOOLONG", 38, "ENOSYS", 40, "ELOOP", 95, "EOPNOTSUPP", 97, "EAFNOSUPPORT");
sub errname { my $n = $! + 0; $ERRNO{$n} // "errno $n" }
sub proc_failed { refuse(EXIT_OS_ERROR, "open $_[0] failed: " . errname(), 'mount /proc in the container' . ($_[1] // "")) }

read_request();
limit_processes() if $role eq "agent";
start_session() if $role eq "agent";
read_status();
my @differences = (check_ids(), check_capabilities(), check_session(), check_descriptors());
refuse(EXIT_VERIFY_FAILED, ($role eq "service" ? "$SERVICE_WHAT " : "$AGENT_WHAT ") . join("; ", @differences), $role eq "service" ? $SERVICE_FIX : $AGENT_FIX) if @differences;
deliver_signal() if $role eq "signal";
end_lease() if $role eq "cleanup";
reset_signals();
enter_directory();
make_private() if $role eq "agent" && $want{private} ne "";
confine() if $role eq "agent";
exec_command();

# ---- request: the closed protocol ----
# Every value is untainted by the form it must have (perl -T), and only then.
sub read_request {
  my @args = @ARGV;
  my $name = shift @args // "";
  $program = $1 if $name =~ /\A([a-z][a-z-]{0,40})\z/;
  usage("program name " . ($name eq "" ? "missing" : $name)) unless $program eq $name;
  my $asked = shift @args // "";
  ($role) = $asked =~ /\A(service|agent|signal|cleanup)\z/ or usage("unknown role " . ($asked eq "" ? "(none)" : $asked));
  my %allowed = map { $_ => 1 } @{$ROLE_KEYS{$role}};
  while (@args) {
    my $arg = shift @args;
    last if $arg eq "--";
    my ($key, $value) = $arg =~ /\A([a-z-]+)=(.*)\z/s or usage("unexpected argument $arg");
    $allowed{$key} or usage("the $role role takes no $key=");
    $value =~ $FORM{$key} or usage("malformed $arg");
    if ($REPEATED{$key}) { push @{$rules{$key}}, $1 }
    elsif (exists $want{$key}) { usage("$key= given twice") }
    else { $want{$key} = $1 }
  }
  my @missing = grep { !$REPEATED{$_} && !exists $want{$_} } @{$ROLE_KEYS{$role}};
  usage("missing " . join(" ", map { "$_=" } @missing)) if @missing;
  # The command's argv is passed on as it came: it is what the caller meant.
  @command = map { /\A(.*)\z/s; $1 } @args;
  usage("a command after the signal") if $role eq "signal" && @command;
  usage("no command") if $role ne "signal" && @command < 2;
}

# ---- [agent] processes: RLIMIT_NPROC, set with prlimit64(2) on itself ----
# The limit counts the tasks of a real uid (setrlimit(2)), here the agent's;
# lowering it needs no privilege. nproc= empty keeps the inherited limit.
# Set after the uid change, the limit escapes the kernel's own refusal: that
# is judged at setresuid(2) (PF_NPROC_EXCEEDED, kernel/sys.c, counting the
# uid's other tasks) with the limit of that moment. So the stage asks the
# same question itself: under a limit of N+2 a fork(2) fails (EAGAIN)
# exactly when the uid already runs more than N other tasks (this one and
# the probe's child make two more, copy_process(), kernel/fork.c), which is
# when the kernel refused the spawn before. Then the limit goes down to N:N.
# When the inherited hard limit is below N+2 the probe runs under N and
# refuses from N-1 other tasks; below N, the spawn fails as setrlimit does.
sub limit_processes {
  return if $want{nproc} eq "";
  my $n = $want{nproc};
  my $set = sub { syscall(@prlimit@, 0, 6, pack("QQ", $_[0], $_[0]), 0) == 0 };
  my $fail = sub { refuse(EXIT_OS_ERROR, "prlimit64 RLIMIT_NPROC $n failed: " . errname(), "pass an --nproc no higher than the service's own hard limit (ulimit -Hu)") };
  $set->($n + 2) or $set->($n) or $fail->();
  my $pid = fork;
  if (!defined $pid) {
    refuse(EXIT_BUSY, "the agent uid already runs more than $n tasks (--nproc $n)", "try again when agent work has ended, or spawn with a higher --nproc") if $! == 11;
    refuse(EXIT_OS_ERROR, "fork failed: " . errname(), $KERNEL_FIX);
  }
  syscall(@exitGroup@, 0) if $pid == 0;
  waitpid $pid, 0;
  $set->($n) or $fail->();
}

# ---- [agent] session: setsid(2) ----
# Agent code gets a session of its own: a new session has no controlling
# terminal, and TIOCSTI needs the target to be the caller's controlling
# terminal (tty_ioctl(4)). A raw system call: perl-base has no POSIX setsid
# without loading POSIX.pm. session=own: the shim leads one already.
sub start_session {
  return unless $want{session} eq "new";
  syscall(@setsid@) >= 0 or refuse(EXIT_LAUNCH_REFUSED, "setsid failed (" . errname() . ")", "spawn the shim in a new session (spawnAgent does) or inside its parent's process group");
}

# ---- status: /proc/self/status, read once for every check below ----
# Only the lines the checks read: the pattern fails at the first letters of
# the other fifty, where one for every line cost 0.1 ms more on each spawn.
sub read_status {
  open my $fh, "<", "/proc/self/status" or proc_failed("/proc/self/status");
  while (my $l = <$fh>) { $status{$1} = $2 if $l =~ /\A(Uid|Gid|Groups|Cap(?:Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|SigIgn):\s*(.*?)\s*\z/ }
  close $fh;
}

# ---- ids: setresuid(2), setresgid(2), setgroups(2) ----
# Real, effective, saved and filesystem ids all equal to the one asked for;
# the supplementary groups as a set.
sub check_ids {
  my @found;
  for my $key (qw(uid gid)) {
    my @have = split /\s+/, ($status{ucfirst $key} // "");
    push @found, $key . "s " . join(",", @have) . " (want $want{$key} in all four)" if @have != 4 || grep { $_ ne $want{$key} } @have;
  }
  my $set = sub { my %u = map { $_ => 1 } grep { length } split /[\s,]+/, $_[0] // ""; join ",", sort { $a <=> $b } keys %u };
  my ($have, $asked) = ($set->($status{Groups}), $set->($want{groups}));
  push @found, "groups " . ($have eq "" ? "none" : $have) . " (want " . ($asked eq "" ? "none" : $asked) . ")" if $have ne $asked;
  return @found;
}

# ---- capabilities: capset(2), PR_CAP_AMBIENT, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS ----
# setpriv exits 0 even when an ambient raise failed: every set is read back.
# The bounding set is asked of the service only: the agent's is the
# service's, which nothing in the agent's chain can change (the service
# lacks CAP_SETPCAP).
sub check_capabilities {
  my @found;
  for my $set ($role eq "service" ? qw(Inh Prm Eff Amb Bnd) : qw(Inh Prm Eff Amb)) {
    my $have = $status{"Cap$set"};
    if (!defined $have) { push @found, "Cap$set missing from /proc/self/status" }
    elsif (hex($have) != hex($want{lc $set})) { push @found, sprintf("Cap%s 0x%x (want 0x%x)", $set, hex($have), hex($want{lc $set})) }
  }
  push @found, "NoNewPrivs " . ($status{NoNewPrivs} // "missing") . " (want 1)" if ($status{NoNewPrivs} // "") ne "1";
  return @found;
}

# ---- session, checked: a session of its own and no controlling terminal (proc(5), stat fields 6 and 7) ----
sub check_session {
  return () unless $role eq "agent";
  open my $fh, "<", "/proc/self/stat" or proc_failed("/proc/self/stat");
  my $stat = <$fh>;
  close $fh;
  my @field = split / /, substr($stat, rindex($stat, ")") + 2);
  my @found;
  push @found, "session $field[3] (want its own, $$)" if $field[3] != $$;
  push @found, "controlling terminal $field[4] (want none)" if $field[4] != 0;
  return @found;
}

# ---- descriptors: what execve(2) passes on ----
# Every fd above 2 without close-on-exec (O_CLOEXEC in /proc/self/fdinfo's
# flags) must be one the caller kept; one that cannot be inspected is refused.
sub check_descriptors {
  return () if $role eq "service";
  # The started marker (started=N) is the stage's own until the exec closes it.
  my %keep = map { $_ => 1 } 0, 1, 2, grep { length } (split(/,/, $want{fds}), $want{started} // "");
  opendir my $dh, "/proc/self/fd" or proc_failed("/proc/self/fd");
  my $own = fileno $dh;
  my @stray;
  for my $n (sort { $a <=> $b } grep { /\A\d+\z/ } readdir $dh) {
    next if $keep{$n} || (defined $own && $n == $own);
    my $info;
    unless (open $info, "<", "/proc/self/fdinfo/$n") {
      next if $! == 2; # closed since the listing
      proc_failed("/proc/self/fdinfo/$n", "; an fd that cannot be inspected is not let through");
    }
    my $flags = 0;
    while (<$info>) { $flags = oct $1 if /\Aflags:\s*([0-7]+)/ }
    close $info;
    push @stray, $n unless $flags & 02000000;
  }
  closedir $dh;
  return @stray ? ("inherited fds " . join(",", @stray) . " (want only 0-2" . ($want{fds} ne "" ? " and $want{fds}" : "") . ")") : ();
}

# ---- [signal] kill(2) of a process group, as the agent ----
# The kernel's permission rule (same uid) decides which groups it reaches.
sub deliver_signal {
  exit EXIT_OK if kill "-$want{signal}", $want{pgid};
  refuse(EXIT_DATA_REFUSED, "no agent process group $want{pgid}", "it has already exited") if $! == 3;
  refuse(EXIT_LAUNCH_REFUSED, "process group $want{pgid} is not the agent's", "only agent work can be signalled through the shim") if $! == 1;
  refuse(EXIT_OS_ERROR, "kill -$want{signal} -$want{pgid} failed: " . errname(), "report this with the command line used");
}

# ---- [cleanup] the end of a private job's lease, as the agent with its group ----
# Only processes descended from the lease hold its group (no account is a
# member; setgroups(2) needs CAP_SETGID). The job's guard ends every one of
# them when the job's process exits (guard_job, one kill(-1) that nothing
# escapes), so this stage first waits for the group to be held by none and
# kills nothing: a kill here could end the guard before it has fired. Only
# what still holds the group 2 s later (a guard that is gone) is killed, round
# after round until a scan finds none. A process counts until it is a zombie
# with no thread left: a leader that called SYS_exit shows State Z while its
# other threads run on (Threads above 1). Each is signalled through a pidfd
# opened before its status is read: a kill(2) by pid would reach whatever
# process had the pid by then, once the one read had ended and its pid gone
# to another agent process (another job's, past the Landlock signal scope
# that job is held to; test/sandbox/cleanup-pid-reuse.test.ts). A pidfd
# names one process for good: if it ended, the signal fails with ESRCH and
# hits nothing. Then every directory of the lease is made its owner's to
# write (open_lease), and the command (find -delete, which never follows a
# symbolic link) removes what is in it.
sub end_lease {
  my $group = $want{group};
  grep { $_ eq $group } split /,/, $want{groups} or usage("group=$group is not among groups=$want{groups}");
  for my $round (1 .. 400) {
    unless (holders($group, $round > 200)) {
      # No process holds the group: the guard has ended, and its mark says whether it fired.
      refuse(EXIT_BUSY, "the guard of the private job in $want{lease} ended before its job (killed by the OOM killer or a signal), so what the job started may run on unseen", "the lease stays and its group out of the pool; restart the container to get it back") unless guard_fired();
      return open_lease();
    }
    select undef, undef, undef, 0.01;
  }
  refuse(EXIT_OS_ERROR, "processes holding group $group keep appearing", "stop the private job from the service (signalAgent(PGID, 'SIGKILL')) and try again");
}

# The lease's mark (guard_job): none when the stage refused the job early; made, it
# must say "fired". Only the stage and the guard could write it: the job's
# nested domain grants it nothing in the lease but home and tmp.
sub guard_fired {
  open my $fh, "<", "$want{lease}/guard" or return $! == 2;
  my $said = <$fh> // "";
  close $fh;
  return $said eq "fired\n";
}

# How many live processes hold group $group; with $kill, each is sent SIGKILL.
sub holders {
  my ($group, $kill) = @_;
  my $found = 0;
  opendir my $dh, "/proc" or proc_failed("/proc");
  # Untainted by its form (perl -T): a pid is digits.
  for my $pid (grep { $_ != $$ } map { /\A(\d{1,10})\z/ ? $1 : () } readdir $dh) {
    my $pidfd = $kill ? syscall(@pidfdOpen@, $pid, 0) : -1;
    if ($kill && $pidfd < 0) {
      next if $! == 3;
      refuse(EXIT_OS_ERROR, "pidfd_open of process $pid failed: " . errname(), "run private jobs on Linux 5.3 or later under a seccomp profile that allows pidfd_open and pidfd_send_signal (Docker's default does)");
    }
    my ($state, $groups, $threads) = ("", "", 0);
    if (open my $fh, "<", "/proc/$pid/status") {
      while (my $l = <$fh>) { $state = $1 if $l =~ /\AState:\s*(\S)/; $groups = $1 if $l =~ /\AGroups:\s*(.*?)\s*\z/; $threads = $1 if $l =~ /\AThreads:\s*(\d+)/ }
      close $fh;
    }
    if ($state ne "" && ($state !~ /\A[ZX]\z/ || $threads > 1) && grep { $_ eq $group } split /\s+/, $groups) {
      $found++;
      # ESRCH: it has ended. EPERM: not the agent's, a shim of the service's
      # between taking group N and its drop to the agent (leasePrivateGroup);
      # the next round finds it again, as the agent's, until then.
      !$kill || syscall(@pidfdSendSignal@, $pidfd, 9, 0, 0) >= 0 || $! == 3 || $! == 1 or refuse(EXIT_OS_ERROR, "pidfd_send_signal to process $pid failed: " . errname(), $KERNEL_FIX);
    }
    syscall(@close@, $pidfd) if $kill;
  }
  closedir $dh;
  return $found;
}

# A job may leave a directory it made unwritable (0500, 0000), which find
# -delete as the agent cannot empty, and the lease would never be taken
# back. Every directory is the agent's (only group N can enter the lease, and
# the agent is its only uid), so it may chmod them back; by now no process
# holds the group, so nothing changes under the walk, which holds no fd per
# level (one readdir at a time, chdir down and up) and never leaves the
# lease's filesystem.
sub open_lease {
  my $dev = (lstat $want{lease})[0];
  chdir $want{lease} or refuse(EXIT_OS_ERROR, "chdir $want{lease} failed: " . errname(), $KERNEL_FIX);
  open_level($dev);
  chdir "/";
}

sub open_level {
  my ($dev) = @_;
  opendir my $dh, "." or return;
  # Untainted (perl -T): readdir never returns a name with a slash.
  my @names = map { /\A(.+)\z/s ? $1 : () } grep { $_ ne "." && $_ ne ".." } readdir $dh;
  closedir $dh;
  for my $name (@names) {
    my @st = lstat $name or next;
    next unless -d _ && $st[0] == $dev;
    chmod $st[2] & 07777 | 0700, $name if ($st[2] & 0700) != 0700;
    next unless chdir $name;
    open_level($dev);
    chdir ".." or refuse(EXIT_OS_ERROR, "chdir .. in $want{lease} failed: " . errname(), $KERNEL_FIX);
  }
}

# ---- signals: execve(2) keeps ignored signals ignored ----
# Node ignores SIGPIPE and SIGXFSZ; the command starts as a child the service
# spawned itself would, with every signal the chain left ignored at its default.
sub reset_signals {
  my @names = qw(HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM STKFLT CHLD CONT STOP TSTP TTIN TTOU URG XCPU XFSZ VTALRM PROF WINCH IO PWR SYS);
  my $ignored = hex($status{SigIgn} // "0");
  for my $i (0 .. $#names) { $SIG{$names[$i]} = "DEFAULT" if $ignored & (1 << $i) }
  # The blocked mask survives execve(2) too (signal(7)), and Node blocks
  # SIGUSR1 in its main thread under --disable-sigusr1: unblock every signal
  # (rt_sigprocmask(SIG_SETMASK, empty set)), as a child the service spawned
  # itself would start (libuv clears the mask in its children).
  my $empty = pack "Q", 0;
  syscall(@rtSigprocmask@, 2, $empty, 0, 8) == 0
    or refuse(EXIT_OS_ERROR, "rt_sigprocmask failed: " . errname(), $KERNEL_FIX);
}

# ---- umask(2), chdir(2) ----
sub enter_directory {
  umask oct $want{umask} if exists $want{umask};
  if ($role eq "agent") {
    chdir $want{cwd} or refuse(EXIT_LAUNCH_REFUSED, "the agent cannot enter $want{cwd} (" . errname() . ")", "pass a --cwd under /workspace that group clankie-workspace can search");
  }
}

# ---- [private] a private job's HOME and TMPDIR, made fresh as the agent with the lease's group ----
# The shim made the lease directory empty a moment ago, and only processes
# with its group can enter it: mkdir(2) refuses what exists rather than use it.
sub make_private {
  for my $dir ("$want{private}/home", "$want{private}/tmp") {
    mkdir $dir, 0700 or refuse(EXIT_LAUNCH_REFUSED, "the private job cannot make $dir (" . errname() . ")", "spawn it again: each private job gets a fresh lease");
  }
}

# ---- [agent] confinement: the agent's Landlock domain (landlock(7)) and seccomp filter (seccomp(2)) ----
# The rules are data from src/confinement.ts, applied here in one loop each:
#   path=ACCESS:must|may:PATH  a path rule; ACCESS is the full mask, which the
#                              stage ANDs with what this kernel's ABI handles
#                              (and, for a file, with what a file may hold)
#   port=ACCESS:LOW-HIGH       TCP port rules (ABI 4), an allow list
#   net=MASK scope=MASK        the ruleset's handled network access and scoping
#   seccomp=HEX                struct sock_filter records, for a process in a
#                              Landlock domain (it allows ptrace, which the
#                              domain confines to itself and below)
#   seccomp-alone=HEX          the filter without a domain (it denies ptrace)
#   network=all|none           none: unix sockets only, which only the filter
#                              enforces, so a spawn whose filter cannot be
#                              installed is refused, strict or not
# Best effort by the ABI, or all of it with confine=strict. Each layer is
# checked by what it must deny before the command runs.
sub confine {
  # A private job is kept from other jobs by its domain and filter: without them it is refused.
  my $private = $want{private} ne "";
  my $strict = $private || $want{confine} eq "strict";
  my $short = sub { refuse(EXIT_LAUNCH_REFUSED, ($private ? "private job: " : "agent confinement: ") . $_[0], $private ? $PRIVATE_FIX : $CONFINEMENT_FIX) if $strict };
  my $abi = syscall(@landlockCreateRuleset@, 0, 0, 1);
  if ($abi < 0) { $short->("the kernel offers no Landlock (" . errname() . ")"); $abi = 0 }
  elsif ($abi < 6) { $short->("the kernel's Landlock ABI is $abi; scoping needs 6") }
  # A private job's guard lowers its own oom_score_adj through a file opened before the domain forbids it.
  my $oom = $private ? open_oom_score() : undef;
  my $landlocked = $abi >= 1 && apply_landlock($abi);
  my $filter = pack "H*", $landlocked ? $want{seccomp} : $want{'seccomp-alone'};
  # network=none is the filter's alone: without it the spawn is refused, strict or not.
  my $offline = $want{network} eq "none";
  if (syscall(@prctl@, 22, 2, pack("S x6 p", length($filter) / 8, $filter), 0, 0) != 0) {
    refuse(EXIT_LAUNCH_REFUSED, "agent confinement: the kernel refused the seccomp filter (" . errname() . ") that keeps agent work off the network", "run it where seccomp filters can be installed (CONFIG_SECCOMP_FILTER, an engine that allows prctl PR_SET_SECCOMP), or spawn without --no-network") if $offline;
    $short->("the kernel refused the seccomp filter (" . errname() . ")");
    return;
  }
  # ioctl(-1, TIOCSTI) fails with EBADF unless the filter answers EPERM first.
  syscall(@ioctl@, -1, 0x5412, 0);
  refuse(EXIT_VERIFY_FAILED, "$AGENT_WHAT its seccomp filter is not in force (ioctl TIOCSTI: " . errname() . ")", $AGENT_FIX) unless $! == 1;
  # And without the network, socket(AF_INET, SOCK_STREAM, 0) answers EAFNOSUPPORT.
  if ($offline) {
    my $made = socket(my $socket, 2, 1, 0);
    refuse(EXIT_VERIFY_FAILED, "$AGENT_WHAT socket(AF_INET) under network=none " . ($made ? "succeeded" : "failed with " . errname()) . " (want EAFNOSUPPORT)", $AGENT_FIX) if $made || $! != 97;
  }
  guard_job($abi, $oom) if $private;
}

# landlock_create_ruleset(2), landlock_add_rule(2), landlock_restrict_self(2).
# What each ABI handles: 1 files (13 rights), 2 REFER, 3 TRUNCATE, 4 TCP
# ports, 5 IOCTL_DEV, 6 scoping. A right on a non-directory is one of
# EXECUTE, WRITE_FILE, READ_FILE, TRUNCATE, IOCTL_DEV (0xc007); asking more
# is EINVAL.
sub apply_landlock {
  my ($abi) = @_;
  my $fs = fs_handled($abi);
  my $net = $abi >= 4 ? hex $want{net} : 0;
  my $scope = $abi >= 6 ? hex $want{scope} : 0;
  my $attr = $abi >= 6 ? pack("QQQ", $fs, $net, $scope) : $abi >= 4 ? pack("QQ", $fs, $net) : pack("Q", $fs);
  my $ruleset = syscall(@landlockCreateRuleset@, $attr, length $attr, 0);
  $ruleset >= 0 or refuse(EXIT_OS_ERROR, "landlock_create_ruleset failed: " . errname(), $KERNEL_FIX);
  add_path_rules($ruleset, $fs, @{$rules{path} // []});
  for my $rule ($net ? @{$rules{port} // []} : ()) {
    my ($access, $low, $high) = $rule =~ /\A(\w+):(\d+)-(\d+)\z/;
    my $allowed = hex($access) & $net;
    next unless $allowed;
    for my $port ($low .. $high) {
      syscall(@landlockAddRule@, $ruleset, 2, pack("QQ", $allowed, $port), 0) == 0
        or refuse(EXIT_OS_ERROR, "landlock_add_rule port $port failed: " . errname(), $KERNEL_FIX);
    }
  }
  syscall(@landlockRestrictSelf@, $ruleset, 0) == 0
    or refuse(EXIT_OS_ERROR, "landlock_restrict_self failed: " . errname(), $KERNEL_FIX);
  # Checked by what the domain must deny: without it, a process may open its
  # own oom_score_adj for writing (no rule grants a write under /proc).
  my $oom;
  refuse(EXIT_VERIFY_FAILED, "$AGENT_WHAT its Landlock domain lets it open /proc/self/oom_score_adj for writing", $AGENT_FIX)
    if sysopen $oom, "/proc/self/oom_score_adj", 1;
  return 1;
}

# The handled filesystem rights of an ABI.
sub fs_handled { $_[0] >= 5 ? 0xffff : $_[0] >= 3 ? 0x7fff : $_[0] >= 2 ? 0x3fff : 0x1fff }

# A rule is taken on what the path names now, opened as the agent with
# O_PATH, and only when /proc/self/fd/N names the same path: a path the
# service asked for (must) that is missing or reached through a symbolic
# link refuses; a default one (may) is left out, which only narrows the domain.
sub add_path_rules {
  my ($ruleset, $fs, @rules) = @_;
  for my $rule (@rules) {
    my ($access, $need, $path) = split /:/, $rule, 3;
    my $fh;
    unless (sysopen $fh, $path, 010000000) {
      next if $need eq "may";
      refuse(EXIT_LAUNCH_REFUSED, "agent confinement: cannot open $path as the agent (" . errname() . ")", "name a path that exists and the agent can reach");
    }
    my $real = readlink("/proc/self/fd/" . fileno $fh) // "";
    if ($real ne $path) {
      next if $need eq "may";
      refuse(EXIT_DATA_REFUSED, "agent confinement: $path leads to $real", "name the path itself, without symbolic links");
    }
    my $allowed = hex($access) & $fs & (-d $fh ? ~0 : 0xc007);
    next unless $allowed;
    syscall(@landlockAddRule@, $ruleset, 1, pack("Ql", $allowed, fileno $fh), 0) == 0
      or refuse(EXIT_OS_ERROR, "landlock_add_rule $path failed: " . errname(), $KERNEL_FIX);
    close $fh;
  }
  return 1;
}

# ---- [private] a private job's guard: nothing the job started outlives it ----
# Whatever holds a lease's group N reaches the lease's files, and the next
# job given N: nothing the job started may outlive it. A scan of /proc cannot
# promise that. A process whose leader called SYS_exit while another thread
# runs shows State Z and runs on; one that forks and lets its parent exit, in
# a loop, has left each pid before a scan reads it (test/sandbox/
# private-jobs.test.ts replays both). kill(-1, SIGKILL) is one pass over the
# task list under the lock fork(2) takes to add a child, and a parent with
# SIGKILL pending makes none (kill_something_info, copy_process): nothing
# escapes it. Landlock bounds it: a process may signal only its own domain and
# the domains nested below it (LANDLOCK_SCOPE_SIGNAL). So the guard stays in
# the job's domain, the job enters one nested below it, where it can neither
# signal nor ptrace the guard, and when the job's process exits (its pidfd
# turns readable once the whole thread group is gone, pidfd_open(2)) the
# guard's kill(-1, SIGKILL) ends exactly what the job started. The guard has
# a session of its own, out of reach of the signals sent to the job's group,
# and init for a parent; it holds no fd of the job's.
#
# The guard must outlive the job. Pages a job writes to a memfd or a tmpfs
# file are charged to the container's memory cgroup but are in no process's
# RSS, so at the limit the OOM killer picks the largest process among those
# with the highest oom_score_adj (oom_badness, mm/oom_kill.c): with the
# agent's value it could be the guard. So the guard holds the lowest value
# the kernel lets it set (oom_score_adj_min, inherited: proc(5)), which a
# domain cannot write any more: the file was opened before it (open_oom_score).
# And a release never trusts a scan of /proc alone: the stage makes the
# lease's mark file (guard) before any command of the job can run, and the
# guard writes "fired" to it after its kill(-1); a cleanup that finds the mark
# without it refuses to give the lease back (end_lease). The job cannot
# write it: its nested domain grants the lease's home and tmp, not the lease.

# open(2) flags of the guard's files (asm-generic/fcntl.h: x86-64 and aarch64 alike).
sub O_WRONLY () { 01 }
sub O_RDWR () { 02 }
sub O_CREAT () { 0100 }
sub O_EXCL () { 0200 }

sub guard_job {
  my ($abi, $oom) = @_;
  my $fix = "try again when agent work has ended, or spawn with a higher --nproc";
  my $job = $$;
  my $held = oom_score_of("self");
  my $low = lower_oom_score($oom, $held);
  my $pidfd = syscall(@pidfdOpen@, $job, 0);
  $pidfd >= 0 or refuse(EXIT_OS_ERROR, "pidfd_open of the private job failed: " . errname(), $PRIVATE_FIX);
  pipe my $from_guard, my $to_stage or refuse(EXIT_OS_ERROR, "pipe failed: " . errname(), $KERNEL_FIX);
  my $parent = fork;
  defined $parent or refuse($! == 11 ? EXIT_BUSY : EXIT_OS_ERROR, "fork of the private job's guard failed: " . errname(), $fix);
  if ($parent == 0) {
    syscall(@setsid@);
    my $guard = fork;
    if (!defined $guard || $guard > 0) { syswrite $to_stage, pack("l", $guard // -1); syscall(@exitGroup@, 0) }
    watch_job($pidfd, $job);
  }
  close $to_stage;
  # Back to the value the shim gave agent work: a raise needs no privilege (checked below).
  set_oom_score($oom, $held);
  close $oom;
  waitpid $parent, 0;
  my $packed = "";
  # Untainted by its form (perl -T): a pid.
  my ($guard) = (sysread($from_guard, $packed, 4) == 4 ? unpack("l", $packed) : -1) =~ /\A(-?\d{1,10})\z/;
  close $from_guard;
  syscall(@close@, $pidfd);
  refuse($? == 0 ? EXIT_BUSY : EXIT_OS_ERROR, "fork of the private job's guard failed", $fix) if ($guard // 0) <= 0;
  # Read back: the guard holds the low value, the job the one it was given.
  my ($guard_score, $job_score) = (oom_score_of($guard), oom_score_of("self"));
  refuse(EXIT_VERIFY_FAILED, "$AGENT_WHAT its guard's oom_score_adj is $guard_score and its own $job_score (want $low and $held)", $AGENT_FIX)
    if $guard_score != $low || $job_score != $held;
  # The mark, made once nothing but the nested domain's own checks can refuse the job.
  sysopen my $mark, "$want{private}/guard", O_WRONLY | O_CREAT | O_EXCL, 0600 or refuse(EXIT_OS_ERROR, "open $want{private}/guard failed: " . errname(), $KERNEL_FIX);
  close $mark;
  # The nested domain: the guard's, but for the lease itself, of which it
  # gets only home and tmp. It handles every right the guard's does, REFER
  # among them (landlock(7): a layer that does not grant REFER denies every
  # rename and link between two directories, EXDEV, even one that handles no
  # other right), and grants each where the guard's domain does.
  my $fs = fs_handled($abi);
  my $attr = pack("QQQ", $fs, 0, hex $want{scope});
  my $ruleset = syscall(@landlockCreateRuleset@, $attr, length $attr, 0);
  $ruleset >= 0 && add_path_rules($ruleset, $fs, job_path_rules()) && syscall(@landlockRestrictSelf@, $ruleset, 0) == 0
    or refuse(EXIT_OS_ERROR, "landlock_restrict_self of the private job's nested domain failed: " . errname(), $KERNEL_FIX);
  # Checked by what the nested domain must deny: a signal to the guard, which runs (ESRCH: it does not).
  refuse(EXIT_VERIFY_FAILED, "$AGENT_WHAT it can signal its guard (process $guard: " . (kill(0, $guard) ? "allowed" : errname()) . ", want EPERM)", $AGENT_FIX)
    if kill(0, $guard) || $! != 1;
}

# The path rules of the job's nested domain: the lease's rule narrowed to its home and tmp.
sub job_path_rules {
  map { my ($access, $need, $path) = split /:/, $_, 3; $path eq $want{private} ? ("$access:must:$path/home", "$access:must:$path/tmp") : $_ } @{$rules{path} // []};
}

# /proc/self/oom_score_adj, opened for reading and writing while no domain forbids it.
sub open_oom_score {
  sysopen my $fh, "/proc/self/oom_score_adj", O_RDWR or proc_failed("/proc/self/oom_score_adj");
  return $fh;
}

# oom_score_adj of process $_[0] ("self" or a pid), as proc(5) shows it.
sub oom_score_of {
  my ($fh, $value);
  $value = <$fh> // "" if open $fh, "<", "/proc/$_[0]/oom_score_adj";
  $value //= "";
  $value =~ /\A(-?\d{1,4})\n?\z/ or proc_failed("/proc/$_[0]/oom_score_adj", " (it read \"$value\")");
  return $1 + 0;
}

sub set_oom_score { my ($fh, $value) = @_; sysseek $fh, 0, 0; defined syswrite $fh, "$value\n" }

# The lowest oom_score_adj the kernel lets this process set, from -1000 (OOM_SCORE_ADJ_MIN)
# up to what it holds; a value below oom_score_adj_min is EACCES without CAP_SYS_RESOURCE
# (proc(5)). Bisected: a refused write leaves the value as it was, so the
# last one written, or the one held, is in force (read back by guard_job).
sub lower_oom_score {
  my ($fh, $held) = @_;
  return -1000 if set_oom_score($fh, -1000);
  my ($refused, $allowed) = (-1000, $held);
  while ($allowed - $refused > 1) {
    my $mid = int(($refused + $allowed) / 2);
    if (set_oom_score($fh, $mid)) { $allowed = $mid } else { $refused = $mid }
  }
  return $allowed;
}

# The guard: it closes every fd but the job's pidfd, waits for the job to
# exit, ends what it left, writes "fired" to the lease's mark (none if the
# stage refused the job before making it), and exits.
sub watch_job {
  my ($pidfd, $job) = @_;
  $0 = "$program: guard of private job $job";
  opendir my $dh, "/proc/self/fd";
  # Untainted by its form (perl -T): an fd is digits.
  my @fds = grep { $_ != $pidfd } map { /\A(\d{1,10})\z/ ? $1 : () } readdir $dh;
  syscall(@close@, $_ + 0) for @fds;
  chdir "/";
  my ($bits, $ready) = ("", "");
  vec($bits, $pidfd, 1) = 1;
  until (vec($ready, $pidfd, 1)) { select($ready = $bits, undef, undef, undef) }
  kill "KILL", -1;
  my $mark;
  syswrite $mark, "fired\n" if sysopen $mark, "$want{private}/guard", O_WRONLY;
  syscall(@exitGroup@, 0);
}

# ---- [agent] git: the agent's git trusts the service's repositories ----
# git refuses a repository whose directory another uid owns ("detected
# dubious ownership", git-config(1), safe.directory) unless safe.directory
# names it, and reads safe.directory only from protected configuration: the
# system and global files and the command scope, which includes
# GIT_CONFIG_COUNT / GIT_CONFIG_KEY_<n> / GIT_CONFIG_VALUE_<n> (git(1),
# ENVIRONMENT). So the command's environment gets one entry
# safe.directory=*, appended after any command-scope entries the service
# passed with --env, so that a `safe.directory=` reset there cannot undo it.
# It is set here, after the drop and in the agent's environment alone:
# nothing the agent can write widens what the service's git trusts (the
# service's git never sees this environment, and /etc/gitconfig and the
# service's HOME are out of the agent's reach); repositories the agent
# creates stay refused by service-uid git (ADR 0272, Consequences). The value
# is "*": git 2.39 (Debian bookworm) matches either "*" or one exact worktree
# path ("/workspace/*" needs git 2.46), and an exact path cannot name a
# repository the service creates while the job runs. "*" gives the agent
# nothing it can use against another uid: the owners it stops distrusting
# are the service and root, whose configuration the agent's git then runs
# as the agent. git parses the count with strtoul(3) (an empty value is 0)
# and refuses one above INT_MAX: a count that is not plain decimal digits,
# or that one more would take past INT_MAX, is left as it is for git to
# refuse ("bogus count in GIT_CONFIG_COUNT"), since guessing an index could
# overwrite the service's entry.
sub trust_git {
  my ($env) = @_;
  my $given = $env->{GIT_CONFIG_COUNT} // "";
  return unless $given =~ /\A\d{0,12}\z/ && ($given || 0) <= 2147483646;
  my $n = ($given || 0) + 0;
  @$env{"GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_$n", "GIT_CONFIG_VALUE_$n"} = ($n + 1, "safe.directory", "*");
}

# ---- exec: execve(2) itself ----
# Not perl's exec: that one is execvp(3), which runs a file the kernel
# refuses with ENOEXEC through /bin/sh instead of failing. The command's
# environment came as CLANKIE_ENV_NAME=VALUE (stageEnvironment in
# src/stage/stage.ts), so that neither setpriv, with the capabilities, nor
# perl read a variable of it: the command gets those, named back, and no
# other, but for the agent's one command-scope git entry (trust_git).
#
# started=N: the service's marker pipe. Every check has passed and every
# refusal above has been made: the stage marks it close-on-exec (fcntl(2)
# F_SETFD FD_CLOEXEC), so that a successful execve(2) closes it before the
# command's first instruction and no process of the command ever holds it,
# and writes "S" to it. When execve(2) fails it writes "F" as well: the
# command never ran, and the exit code (127, 126, like a shell's) is the
# stage's. The service takes exactly "S" for a start (spawnAgent's
# started), anything else for none.
sub exec_command {
  my ($path, @argv) = @command;
  my %env = map { /\ACLANKIE_ENV_(.+)\z/s ? ($1, $ENV{$_}) : () } keys %ENV;
  trust_git(\%env) if $role eq "agent";
  # Untainted (perl -T): the command's environment is passed on as it came.
  my @envp = map { "$_=$env{$_}" =~ /\A(.*)\z/s } sort keys %env;
  my $marker = ($want{started} // "") ne "" ? $want{started} + 0 : -1;
  # Only the agent's command is what the marker reports on: a cleanup stage
  # (a lease the shim takes back before its own job starts) gets the
  # shim's marker too, since Node cannot close it for the child it spawns,
  # and only closes it at its exec.
  my $reports = $role eq "agent" && $marker >= 0;
  # syscall() hands a string on as a pointer it may write to: a variable, not a literal.
  my ($start, $failed) = ("S", "F");
  if ($marker >= 0) {
    syscall(@fcntl@, $marker, 2, 1) == 0 or refuse(EXIT_OS_ERROR, "fcntl F_SETFD of the started marker (fd $marker) failed: " . errname(), $KERNEL_FIX);
  }
  if ($reports) {
    syscall(@write@, $marker, $start, 1) == 1 or refuse(EXIT_OS_ERROR, "write to the started marker (fd $marker) failed: " . errname(), "keep the marker pipe's read end open until the spawn has settled (spawnAgent does)");
  }
  syscall(@execve@, $path, pack("p*", @argv, undef), pack("p*", @envp, undef));
  my $errno = $! + 0;
  syscall(@write@, $marker, $failed, 1) if $reports;
  $! = $errno;
  refuse($errno == 2 ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE, "cannot execute $path: " . errname(), "check the command's path and permissions");
}
