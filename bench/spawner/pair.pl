# bench/spawner.mjs inside the launch sandbox, as root (pid 1): each round starts a resident
# spawner and the capless service as the root phase does (src/perl/spawner-pair.pl), runs the
# driver as that service, then runs the driver as a service holding SETUID+SETGID (ADR 0272's
# shape, the per-spawn shim's caller): the two sides alternate in one run.
#   pair.pl NODE DRIVER ROUNDS PAIRS RSS_SPAWNS
use strict;
use warnings;
use Socket qw(AF_UNIX SOCK_STREAM PF_UNSPEC);
use POSIX ();
use Fcntl qw(F_SETFD);

my ($node, $driver, $rounds, $pairs, $rss_spawns) = @ARGV;
my @ids = ("--reuid=1000", "--regid=1000", "--groups=1000,1002");
my @caps = ("--inh-caps=-all,+setuid,+setgid", "--ambient-caps=-all,+setuid,+setgid", "--bounding-set=-all,+setuid,+setgid");
sub on_fd3 { my ($end) = @_; POSIX::dup2(fileno $end, 3) unless fileno $end == 3; open(my $h, "+<&=", 3) or die; fcntl($h, F_SETFD, 0) or die; $ENV{CLANKIE_SPAWNER_FD} = 3 }
sub run_wait { my $pid = fork // die; if (!$pid) { exec @_ or die "exec: $!" } waitpid($pid, 0); 1 while waitpid(-1, POSIX::WNOHANG()) > 0 }
for (1 .. $pairs) {
  socketpair(my $a, my $b, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die;
  my $spawner = fork // die;
  if (!$spawner) { on_fd3($a); $ENV{CLANKIE_SPAWNER_IDS} = "1000:1001:1001:1001,1002"; exec "/usr/bin/setpriv", @ids, @caps, "--", "/usr/local/sbin/clankie-agent-exec", "--spawner"; die }
  my $service = fork // die;
  if (!$service) { on_fd3($b); exec "/usr/bin/setpriv", @ids, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--", $node, $driver, "spawner", $rounds, $rss_spawns; die }
  close $a;
  close $b;
  waitpid($service, 0);
  waitpid($spawner, 0);
  run_wait("/usr/bin/setpriv", @ids, @caps, "--", $node, $driver, "shim", $rounds);
}
