use strict; use warnings;
use Socket qw(AF_UNIX SOCK_STREAM PF_UNSPEC); use POSIX (); use Fcntl qw(F_SETFD);
my ($node, $driver) = @ARGV;
my @ids = ("--reuid=1000", "--regid=1000", "--groups=1000,1002");
my @caps = ("--inh-caps=-all,+setuid,+setgid", "--ambient-caps=-all,+setuid,+setgid", "--bounding-set=-all,+setuid,+setgid");
sub on_fd3 { my ($end) = @_; POSIX::dup2(fileno $end, 3) unless fileno $end == 3; open(my $h, "+<&=", 3) or die; fcntl($h, F_SETFD, 0) or die; $ENV{CLANKIE_SPAWNER_FD} = 3 }
socketpair(my $a, my $b, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die;
my $spawner = fork // die;
if (!$spawner) { on_fd3($a); exec "/usr/bin/strace", "-f", "-ttt", "-qq", "-e", "trace=execve,clone,clone3,wait4,exit_group,setsid,connect,sendmsg,recvmsg,write,read", "-o", "/workspace/trace.txt", "/usr/bin/setpriv", @ids, @caps, "--", "/usr/local/sbin/clankie-agent-exec", "--spawner"; die }
my $service = fork // die;
if (!$service) { on_fd3($b); exec "/usr/bin/setpriv", @ids, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--", $node, "-e", $driver; die }
close $a; close $b; waitpid($service, 0); waitpid($spawner, 0);
