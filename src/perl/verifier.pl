# The verification stage: the last step of both privilege changes, in the
# process that is about to become the service or the agent's command. See
# src/verifier.ts for what it checks and why; it is passed to perl -T -C0 -e
# with its placeholders (capital names between at signs) filled in from
# src/constants.ts; it is never written to disk.
my @a = map { /\A(.*)\z/s; $1 } @ARGV;
my ($prog, $role) = splice @a, 0, 2;
sub line { my $t = join "", @_; $t =~ s/[\r\n]+/ /g; syswrite STDERR, "$prog: $t\n" }
sub refuse { my ($code, $what, $fix) = @_; line("$what; $fix"); exit $code }
my %errno = (1, "EPERM", 2, "ENOENT", 3, "ESRCH", 5, "EIO", 7, "E2BIG", 8, "ENOEXEC", 11, "EAGAIN", 12, "ENOMEM", 13, "EACCES", 20, "ENOTDIR", 21, "EISDIR", 22, "EINVAL", 24, "EMFILE", 26, "ETXTBSY", 36, "ENAMETOOLONG", 38, "ENOSYS", 40, "ELOOP", 95, "EOPNOTSUPP", 97, "EAFNOSUPPORT");
sub errname { my $n = $! + 0; $errno{$n} // "errno $n" }
my %what = (service => @WHAT_SERVICE@, agent => @WHAT_AGENT@);
my %fix = (service => @FIX_SERVICE@, agent => @FIX_AGENT@);
my (%w, %m);
while (@a) {
  my $x = shift @a;
  last if $x eq "--";
  $x =~ /\A(\w+\+?)=(.*)\z/s or refuse(@USAGE@, "verification stage: unexpected argument $x", "this stage is started by clankie-separate itself");
  $w{$1} = $2;
  push @{$m{$1}}, $2;
}
if (($w{session} // "") eq "new") {
  syscall(@SYS_SETSID@) >= 0 or refuse(@LAUNCH@, "setsid failed (" . errname() . ")", "spawn the shim in a new session (spawnAgent does) or inside its parent's process group");
}
my %s;
open my $fh, "<", "/proc/self/status" or refuse(@OS@, "open /proc/self/status failed: " . errname(), "mount /proc in the container");
while (my $l = <$fh>) { $s{$1} = $2 if $l =~ /\A(\w+):\s*(.*?)\s*\z/ }
close $fh;
my @d;
for my $k (qw(uid gid)) {
  my @have = split /\s+/, ($s{ucfirst $k} // "");
  push @d, $k . "s " . join(",", @have) . " (want $w{$k} in all four)" if @have != 4 || grep { $_ ne $w{$k} } @have;
}
my $set = sub { my %u = map { $_ => 1 } grep { length } split /[\s,]+/, $_[0] // ""; join ",", sort { $a <=> $b } keys %u };
my ($hg, $wg) = ($set->($s{Groups}), $set->($w{groups}));
push @d, "groups " . ($hg eq "" ? "none" : $hg) . " (want " . ($wg eq "" ? "none" : $wg) . ")" if $hg ne $wg;
for my $c (qw(Inh Prm Eff Amb Bnd)) {
  next unless exists $w{lc $c};
  my $have = $s{"Cap$c"};
  if (!defined $have) { push @d, "Cap$c missing from /proc/self/status" }
  elsif (hex($have) != hex($w{lc $c})) { push @d, sprintf("Cap%s 0x%x (want 0x%x)", $c, hex($have), hex($w{lc $c})) }
}
push @d, "NoNewPrivs " . ($s{NoNewPrivs} // "missing") . " (want 1)" if $w{nnp} && ($s{NoNewPrivs} // "") ne "1";
if (($w{session} // "") ne "") {
  open my $st, "<", "/proc/self/stat" or refuse(@OS@, "open /proc/self/stat failed: " . errname(), "mount /proc in the container");
  my $t = <$st>;
  close $st;
  my @f = split / /, substr($t, rindex($t, ")") + 2);
  push @d, "session $f[3] (want its own, $$)" if $f[3] != $$;
  push @d, "controlling terminal $f[4] (want none)" if $f[4] != 0;
}
if (exists $w{fds}) {
  my %keep = map { $_ => 1 } 0, 1, 2, grep { length } split /,/, $w{fds};
  opendir my $dh, "/proc/self/fd" or refuse(@OS@, "open /proc/self/fd failed: " . errname(), "mount /proc in the container");
  my $own = fileno $dh;
  my @stray;
  for my $n (sort { $a <=> $b } grep { /\A\d+\z/ } readdir $dh) {
    next if $keep{$n} || (defined $own && $n == $own);
    my $i;
    unless (open $i, "<", "/proc/self/fdinfo/$n") {
      next if $! == 2; # closed since the listing
      refuse(@OS@, "open /proc/self/fdinfo/$n failed: " . errname(), "mount /proc in the container; an fd that cannot be inspected is not let through");
    }
    my $flags = 0;
    while (<$i>) { $flags = oct $1 if /\Aflags:\s*([0-7]+)/ }
    close $i;
    push @stray, $n unless $flags & 02000000;
  }
  closedir $dh;
  push @d, "inherited fds " . join(",", @stray) . " (want only 0-2" . ($w{fds} ne "" ? " and $w{fds}" : "") . ")" if @stray;
}
refuse(@VERIFY@, "$what{$role} " . join("; ", @d), $fix{$role}) if @d;
if (exists $w{signal}) {
  exit @OK@ if kill "-$w{signal}", $w{pgid};
  refuse(@DATA@, "no agent process group $w{pgid}", "it has already exited") if $! == 3;
  refuse(@LAUNCH@, "process group $w{pgid} is not the agent's", "only agent work can be signalled through the shim") if $! == 1;
  refuse(@OS@, "kill -$w{signal} -$w{pgid} failed: " . errname(), "report this with the command line used");
}
my @names = qw(HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM STKFLT CHLD CONT STOP TSTP TTIN TTOU URG XCPU XFSZ VTALRM PROF WINCH IO PWR SYS);
my $ignored = hex($s{SigIgn} // "0");
for my $i (0 .. $#names) { $SIG{$names[$i]} = "DEFAULT" if $ignored & (1 << $i) }
umask oct $w{umask} if exists $w{umask};
if (exists $w{cwd}) {
  chdir $w{cwd} or refuse(@LAUNCH@, "the $role cannot enter $w{cwd} (" . errname() . ")", "pass a --cwd under /workspace that group clankie-workspace can search");
}
delete $ENV{$w{unset}} if exists $w{unset};
confine() if exists $w{confine};
my ($path, @argv) = @a;
refuse(@USAGE@, "verification stage: no command", "this stage is started by clankie-separate itself") unless defined $path && @argv;
# execve(2) itself, not perl's exec: that one is execvp(3), which runs a file
# the kernel refuses with ENOEXEC through /bin/sh instead of failing.
my @envp = map { /\A(.*)\z/s; $1 } map { "$_=$ENV{$_}" } sort keys %ENV;
syscall(@SYS_EXECVE@, $path, pack("p*", @argv, undef), pack("p*", @envp, undef));
refuse($! == 2 ? @NOTFOUND@ : @NOTEXEC@, "cannot execute $path: " . errname(), "check the command's path and permissions");

# The agent's Landlock domain and seccomp filter (src/confinement.ts),
# best effort by the kernel's Landlock ABI, or all of it with confine=strict.
# landlock(7): ABI 1 files, 2 REFER, 3 TRUNCATE, 4 TCP, 5 IOCTL_DEV, 6 scoping.
sub confine {
  my $strict = $w{confine} eq "strict";
  my $short = sub { refuse(@LAUNCH@, "agent confinement: $_[0]", @FIX_CONFINE@) if $strict };
  my $abi = syscall(@SYS_LL_CREATE@, 0, 0, 1);
  if ($abi < 0) { $short->("the kernel offers no Landlock (" . errname() . ")"); $abi = 0 }
  elsif ($abi < 6) { $short->("the kernel's Landlock ABI is $abi; scoping needs 6") }
  if ($abi >= 1) {
    my $fs = $abi >= 5 ? 0xffff : $abi >= 3 ? 0x7fff : $abi >= 2 ? 0x3fff : 0x1fff;
    my $file = 0xc007;       # EXECUTE WRITE_FILE READ_FILE TRUNCATE IOCTL_DEV: all a rule on a non-directory may hold
    my $rx = 0x0d;           # EXECUTE READ_FILE READ_DIR
    my $dev = 0xc006;        # WRITE_FILE READ_FILE TRUNCATE IOCTL_DEV
    my ($net, %deny) = (0);
    if ($abi >= 4) {
      for ([noconnect => 2], [nobind => 1]) {
        my ($k, $bit) = @$_;
        next unless exists $w{$k};
        $net |= $bit;
        $deny{$_} |= $bit for split /,/, $w{$k};
      }
    }
    my $attr = $abi >= 6 ? pack("QQQ", $fs, $net, 3) : $abi >= 4 ? pack("QQ", $fs, $net) : pack("Q", $fs);
    my $rs = syscall(@SYS_LL_CREATE@, $attr, length $attr, 0);
    $rs >= 0 or refuse(@OS@, "landlock_create_ruleset failed: " . errname(), "report this with the kernel version (uname -r)");
    # A rule is taken on what the path names now, opened as the agent. A path the
    # service asked for (must) that is missing, or reached through a symbolic
    # link, refuses; a default one is then left out, which only narrows the domain.
    my $rule = sub {
      my ($p, $want, $must) = @_;
      my $fh;
      unless (sysopen $fh, $p, 010000000) {
        return unless $must;
        refuse(@LAUNCH@, "agent confinement: cannot open $p as the agent (" . errname() . ")", "name a path that exists and the agent can reach");
      }
      my $real = readlink("/proc/self/fd/" . fileno $fh) // "";
      if ($real ne $p) {
        return unless $must;
        refuse(@DATA@, "agent confinement: $p leads to $real", "name the path itself, without symbolic links");
      }
      my $access = $want & $fs & (-d $fh ? ~0 : $file);
      syscall(@SYS_LL_ADD@, $rs, 1, pack("Ql", $access, fileno $fh), 0) == 0
        or refuse(@OS@, "landlock_add_rule $p failed: " . errname(), "report this with the kernel version (uname -r)");
      close $fh;
    };
    my %hide = map { $_ => 1 } split /,/, $w{hide} // "";
    opendir my $top, "/" or refuse(@OS@, "open / failed: " . errname(), "mount a root filesystem");
    for (sort readdir $top) {
      /\A([^\/]+)\z/s or next;
      my $n = $1;
      next if $n eq "." || $n eq ".." || $hide{$n} || -l "/$n" || !-d _;
      $rule->("/$n", $rx, 0);
    }
    closedir $top;
    $rule->($_, $fs, 0) for @{$m{rw} // []};
    $rule->($_, $fs, 1) for @{$m{"rw+"} // []};
    $rule->($_, $dev, 0) for @{$m{dev} // []};
    $rule->($_, $rx, 0) for @{$m{ro} // []};
    $rule->($_, $rx, 1) for @{$m{"ro+"} // []};
    # TCP rules are an allow list: every port but the denied ones gets one.
    if ($net) {
      for my $port (0 .. 65535) {
        my $allow = $net & ~($deny{$port} // 0);
        next unless $allow;
        syscall(@SYS_LL_ADD@, $rs, 2, pack("QQ", $allow, $port), 0) == 0
          or refuse(@OS@, "landlock_add_rule port $port failed: " . errname(), "report this with the kernel version (uname -r)");
      }
    }
    syscall(@SYS_LL_RESTRICT@, $rs, 0) == 0
      or refuse(@OS@, "landlock_restrict_self failed: " . errname(), "report this with the kernel version (uname -r)");
    # The kernel's answer is checked by what the domain must deny: without it,
    # a process may open its own oom_score_adj for writing.
    my $oom;
    refuse(@VERIFY@, "$what{agent} its Landlock domain lets it open /proc/self/oom_score_adj for writing", $fix{agent})
      if sysopen $oom, "/proc/self/oom_score_adj", 1;
  }
  return unless exists $w{seccomp};
  my $prog = pack "H*", $w{seccomp};
  my $fprog = pack "S x6 p", length($prog) / 8, $prog;
  # network=none is the filter's alone: without it the spawn is refused, strict or not.
  my $offline = ($w{network} // "") eq "none";
  if (syscall(@SYS_PRCTL@, 22, 2, $fprog, 0, 0) != 0) {
    refuse(@LAUNCH@, "agent confinement: the kernel refused the seccomp filter (" . errname() . ") that keeps agent work off the network", "run it where seccomp filters can be installed (CONFIG_SECCOMP_FILTER, an engine that allows prctl PR_SET_SECCOMP), or spawn without --no-network") if $offline;
    $short->("the kernel refused the seccomp filter (" . errname() . ")");
    return;
  }
  # Checked the same way: ioctl(-1, TIOCSTI) fails with EBADF unless the filter answers EPERM first.
  syscall(@SYS_IOCTL@, -1, 0x5412, 0);
  refuse(@VERIFY@, "$what{agent} its seccomp filter is not in force (ioctl TIOCSTI: " . errname() . ")", $fix{agent}) unless $! == 1;
  # And without the network, socket(AF_INET, SOCK_STREAM, 0) answers EAFNOSUPPORT.
  if ($offline) {
    my $made = socket(my $s, 2, 1, 0);
    refuse(@VERIFY@, "$what{agent} socket(AF_INET) under network=none " . ($made ? "succeeded" : "failed with " . errname()) . " (want EAFNOSUPPORT)", $fix{agent}) if $made || $! != 97;
  }
}
