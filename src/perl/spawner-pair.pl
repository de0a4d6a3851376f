# The root phase's last step (src/entrypoint/run.ts, dropToServiceAndSpawner),
# as root: the request channel, then the two drops. Node has no
# socketpair(2); perl has it and fork(2). One end goes to each side at fd 3
# (CLANKIE_SPAWNER_FD names it), every other fd perl opened is
# close-on-exec ($^F): the child execs the spawner's drop (setpriv to node
# with SETUID and SETGID), this process the service's (setpriv to node with
# no capability), keeping its pid for tini.
#
# argv: the channel's fd, then the spawner's environment (a count, then
# NAME=VALUE each), the spawner's argv (a count, then each), then the
# service's argv. The service keeps the environment perl was started with.
use strict;
use warnings;
use Socket qw(AF_UNIX SOCK_STREAM PF_UNSPEC);
use POSIX ();
use Fcntl qw(F_SETFD);

sub fail { syswrite STDERR, "clankie-separate: $_[0] failed: $!; $_[1]\n"; POSIX::_exit(71) }
my $fd = shift @ARGV;
my $envs = shift @ARGV;
my @env = splice @ARGV, 0, $envs;
my $args = shift @ARGV;
my @spawner = splice @ARGV, 0, $args;
my @service = @ARGV;
@spawner && @service or fail("the spawner's pair (bad arguments)", "report this");
socketpair(my $mine, my $theirs, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or fail("socketpair", "report this");
my $pid = fork() // fail("fork", "raise the container's pids limit");
my $end = $pid == 0 ? $mine : $theirs;
POSIX::dup2(fileno $end, $fd) // fail("dup2 onto fd $fd", "report this") unless fileno $end == $fd;
# Inherited across the exec (dup2 leaves it so; an fd perl opened itself at $fd is close-on-exec).
my $kept;
(open($kept, "+<&=", $fd) && fcntl($kept, F_SETFD, 0)) or fail("fcntl F_SETFD of fd $fd", "report this");
if ($pid == 0) {
  %ENV = map { /\A([^=]+)=(.*)\z/s ? ($1, $2) : () } @env;
  exec { $spawner[0] } @spawner or fail("exec $spawner[0]", "check the image's setpriv");
}
exec { $service[0] } @service or fail("exec $service[0]", "check the image's setpriv");
