/*
 * The attack on the stop route, made by the job being stopped: it ignores
 * SIGTERM, watches /proc/sys/kernel/ns_last_pid for new pids, follows each
 * until it runs as the agent's uid (the signal stage drops to it a few
 * milliseconds before its kill(2)) and calls prlimit64(pid, RLIMIT_NOFILE,
 * 0:0) on it, so that the stage's perl could not load its libraries. The
 * attacker of test/fixtures/agent-stop.mjs, without its hit count, spare
 * list and match (it attacks every new process of the uid but itself).
 * Prints each landed limit's pid on stdout, each refusal on stderr
 * ("prlimit PID: Operation not permitted"). Argument: how many seconds it runs.
 */
export const STOP_ATTACKER = String.raw`
$SIG{TERM} = "IGNORE";
my $end = time + $ARGV[0];
$| = 1;
my %watch;
sub last_pid { open my $f, "<", "/proc/sys/kernel/ns_last_pid" or die "ns_last_pid: $!"; my $n = <$f>; chomp $n; $n }
my $seen = last_pid();
while (time < $end) {
  my $last = last_pid();
  if ($last != $seen) { $watch{$_} = 1 for ($seen + 1) .. $last; $seen = $last }
  for my $pid (keys %watch) {
    next if $pid == $$;
    my $status;
    # A pid is counted before its /proc entry shows: give it a while before it counts as gone.
    if (!open my $f, "<", "/proc/$pid/status") { delete $watch{$pid} if ++$watch{$pid} > 1000; next } else { local $/; $status = <$f> }
    # Threads take pids too (the shim is Node): only a thread-group leader runs the stage.
    my ($tgid) = $status =~ /^Tgid:\s+(\d+)/m;
    if (defined $tgid && $tgid != $pid) { delete $watch{$pid}; next }
    my ($uid) = $status =~ /^Uid:\s+(\d+)/m;
    next if !defined $uid || $uid != 1001;
    delete $watch{$pid};
    # prlimit64(pid, RLIMIT_NOFILE, {0, 0}, NULL): x86-64 302
    my $limit = pack("QQ", 0, 0);
    if (syscall(302, $pid + 0, 7, $limit, 0) == 0) { print "$pid\n" } else { print STDERR "prlimit $pid: $!\n" }
  }
}
`;
