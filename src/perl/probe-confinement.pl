# The agent probe's confinement attempts (src/self-check/probe-agent.ts), passed to perl -e.
# Arguments: the socket name (may be empty). Output: "oom BEFORE OPEN WRITE"
# and "socket CONNECT", each result 0 or an errno number, "-" when not tried.
# sysopen O_WRONLY (1) without O_CREAT or O_TRUNC: only the write permission
# is asked for. AF_UNIX and SOCK_STREAM are 1 on Linux.
my ($name) = @ARGV;
my $path = "/proc/self/oom_score_adj";
my $before = "?";
if (open(my $r, "<", $path)) { my $line = <$r>; close $r; if (defined $line) { chomp $line; $before = $line } }
my ($open, $write) = ("-", "-");
if ($before =~ /^-?\d+$/ && $before > -1000) {
  if (sysopen(my $w, $path, 1)) { $open = 0; $write = defined(syswrite($w, ($before - 1) . "\n")) ? 0 : $! + 0; close $w }
  else { $open = $! + 0 }
}
print "oom $before $open $write\n";
my $connect = "-";
if (length $name) {
  if (socket(my $s, 1, 1, 0)) { $connect = connect($s, pack("S", 1) . "\0" . $name) ? 0 : $! + 0; close $s }
  else { $connect = "-" }
}
print "socket $connect\n";
