# The spawner's first step of each job (src/agent-exec/spawner.ts), as node
# with the spawner's SETUID and SETGID, before the chain's setpriv: it takes
# the job's stdio, kept fds and started marker from the holder, the service's
# capless child that execa spawned with them (src/service/spawner-client.ts),
# so that no byte of the job's streams passes through the spawner, and no fd
# but these reaches the job.
#
# pidfd_getfd(2) asks PTRACE_MODE_ATTACH_REALCREDS of the holder: a process of
# node's uid whose capabilities are within ours. So the holder must hold none
# (checked from /proc after pidfd_open(2), then the pidfd checked still live,
# so that the status read is that process's): the grab then takes only fds
# the service itself could take, never one of the spawner's.
#
# Only those fds cross the exec: every other fd the grab holds (what the
# spawner's Node or its launch left without close-on-exec) is closed first.
#
# argv: pidfd_open pidfd_send_signal pidfd_getfd dup3 fcntl close (this
# architecture's numbers), holder pid ("-": none, the grab's own fds are
# the chain's, as for a stop's signal stage), node's uid, oom_score_adj (""
# keeps it), the fds to take ("0,1,2,17"), then "--" and the chain's argv.
use strict;
use warnings;

my $program = "clankie-agent-exec";
sub refuse { my ($code, $text) = @_; syswrite STDERR, "$program: $text\n"; exit $code }
my ($open, $send, $getfd, $dup3, $fcntl, $close, $holder, $uid, $oom, $fds, $dash, @chain) = @ARGV;
$dash eq "--" && @chain or refuse(64, "spawner's grab: bad arguments; report this");
take() unless $holder eq "-";
my %job = map { $_ => 1 } split /,/, $fds;
opendir(my $dir, "/proc/self/fd") or refuse(71, "opendir /proc/self/fd failed: errno " . ($! + 0) . "; mount /proc in the container");
syscall($close, $_ + 0) for grep { /\A\d+\z/ && !$job{$_} } readdir $dir;
if ($oom ne "") {
  open my $adj, ">", "/proc/self/oom_score_adj" or refuse(71, "open /proc/self/oom_score_adj failed: errno " . ($! + 0) . "; mount /proc in the container");
  print $adj "$oom\n";
  close $adj or refuse(71, "write /proc/self/oom_score_adj failed: errno " . ($! + 0) . "; pass an --oom-score-adj the kernel accepts");
}
exec { $chain[0] } @chain or refuse(126, "exec $chain[0] failed: errno " . ($! + 0) . "; report this");

# The job's fds, from the holder, at their own numbers.
sub take {
  my $pidfd = syscall($open, $holder + 0, 0);
  $pidfd >= 0 or refuse(71, "pidfd_open of the job's holder $holder failed: errno " . ($! + 0) . "; the service's spawn ended before the spawner started it");
  open my $st, "<", "/proc/$holder/status" or refuse(71, "open /proc/$holder/status failed: errno " . ($! + 0) . "; the service's spawn ended before the spawner started it");
  my %f = map { /\A(\w+):\s*(.*)\z/ ? ($1, $2) : () } map { chomp; $_ } <$st>;
  close $st;
  my @ids = split /\s+/, $f{Uid} // "";
  (@ids == 4 && !grep { $_ != $uid } @ids) or refuse(77, "the job's holder $holder is not the service's uid $uid; only the service's own children hand stdio to agent work");
  for my $set (qw(CapInh CapPrm CapEff CapAmb)) {
    ($f{$set} // "x") =~ /\A0+\z/ or refuse(77, "the job's holder $holder holds capabilities ($set $f{$set}); only a capless child of the service hands stdio to agent work");
  }
  syscall($send, $pidfd, 0, 0, 0) == 0 or refuse(71, "the job's holder $holder ended while its fds were taken; the service's spawn ended before the spawner started it");
  for my $fd (split /,/, $fds) {
    my $got = syscall($getfd, $pidfd, $fd + 0, 0);
    $got >= 0 or refuse(71, "pidfd_getfd of the holder's fd $fd failed: errno " . ($! + 0) . "; run on Linux 5.6 or later under a seccomp profile that allows pidfd_getfd (Docker's default does)");
    if ($got == $fd) {
      syscall($fcntl, $fd + 0, 2, 0) == 0 or refuse(71, "fcntl F_SETFD of fd $fd failed: errno " . ($! + 0) . "; report this");
    } else {
      syscall($dup3, $got, $fd + 0, 0) == $fd or refuse(71, "dup3 onto fd $fd failed: errno " . ($! + 0) . "; report this");
      syscall($close, $got);
    }
  }
}
