# The spawner's zygote and its grabs (src/agent-exec/spawner.ts). The
# spawner starts this program once, as node with its SETUID and SETGID: the
# zygote. perl compiles it, and the verification stage the spawner appended
# to it (package Stage, the agent's and the signal's roles), once; then the
# zygote forks one grab per job, so that no spawn waits for, or pays for, a
# process start or a compile.
#
# A grab is the process that becomes its job, as node with the spawner's
# SETUID and SETGID until its drop. It takes the job's stdio, kept fds and
# started marker from the holder, the service's capless child that execa
# spawned with them, or from the acceptor (src/service/spawner-client.ts,
# stream-acceptor.ts), so that no byte of the job's streams passes through
# the spawner, and no fd but these reaches the job.
#
# Then, for every ordinary job and every stop ("-stage"), it makes the drop
# to the agent itself: setgroups(2), setresgid(2), setresuid(2) to the
# identity the spawner gave the zygote at its start (the agent's uid, gid
# and groups, which the root phase read from /etc/passwd and /etc/group,
# never from a request), then capset(2) with every set empty (the ambient
# set follows: a capability is ambient only while permitted and
# inheritable, capabilities(7)). And it runs on into the verification
# stage, which reads the job's own request from @ARGV as it does after
# setpriv, checks every part of the drop from /proc/self/status, and
# refuses (70) on any difference before the command runs. What it saves and
# why it is beyond ADR 0272: docs/security.md, "The grab makes the drop".
# Anything else (a private job's shim, a lease's release) it execs with the
# spawner's capabilities, as the spawner planned it. perl runs with -T and
# -C0, as the stage always has: the grab takes the fields it acts on by
# their form.
#
# The holder listens on an abstract Unix socket whose name the service drew
# at random and sent with the request; it sends the fds the grab names by
# SCM_RIGHTS (unix(7)), which every seccomp profile that allows sockets
# allows (pidfd_getfd(2) needs CAP_SYS_PTRACE under Docker's default). The
# grab first checks the holder from /proc (the service's uid, no
# capability), then that the listener is that process (SO_PEERCRED, socket(7):
# the pid and uid at its listen(2)): a socket another process bound under
# that name gets nothing and gives nothing.
#
# Only those fds cross the exec: every other fd the grab holds (what the
# spawner's Node or its launch left without close-on-exec) is closed first.
#
# A job's chain is not the spawner's child: the grab forks it, in a session
# of its own, and stays its parent until it ends, reaping every child the
# job gives it with clone(CLONE_PARENT), which only the seccomp filter
# refuses and Node, reaping only what it spawned, would leave as zombies.
# It tells the spawner the job's pid (which leads its process group) on
# the report, and ends as the job ended: with its exit code, or killed
# by its signal. It keeps SETUID and SETGID while it waits: a process of
# node's uid holding fewer capabilities cannot ptrace it to forge either
# (ptrace(2)).
#
# The zygote reads its jobs on stdin: "ID LENGTH\n", then the job. argv:
# recvmsg dup3 fcntl close setsid exit_group setgroups setresgid setresuid
# capset prctl memfd_create (this architecture's numbers), node's uid, then the agent's
# uid, gid and groups. A job: fields each ended by a NUL (no field can hold
# one: the spawner refuses it): the holder's pid ("-": none, the grab's own
# fds are the job's, as for a stop's signal stage), the holder's socket
# name, oom_score_adj ("" keeps it), the fds to take ("0,1,2,17"), the
# number of environment entries, those entries (NAME=value: the job's whole
# environment), then "-stage" and the stage's request, or the argv of what
# to exec. The end of its stdin (the spawner has ended) ends it.
#
# Its stdout is the report to the spawner, one write(2) per line: "P ID PID"
# from a grab once it has forked the job, "E ID CODE SIGNAL TEXT" from the
# zygote once it has reaped the grab (SIGCHLD), TEXT the start of what the
# grab said on its stderr (an anonymous file of its own, which the zygote
# reads then), on one line; each line shorter than PIPE_BUF. A job's
# process holds the report only until it has taken its fds (its grab keeps
# it to say the job's pid); a stop's stage or a release (their own fds:
# "-") never holds it.
#
# It loads no module, as the stage loads none: the constants are Linux's,
# written out.
# WNOHANG (linux/wait.h); EINTR, EAGAIN (asm-generic/errno-base.h); MFD_CLOEXEC (linux/memfd.h); AF_UNIX, SOCK_STREAM (linux/net.h), SOL_SOCKET, SO_PEERCRED, SCM_RIGHTS, MSG_CMSG_CLOEXEC: linux/socket.h,
# asm-generic/socket.h; F_DUPFD_CLOEXEC: F_LINUX_SPECIFIC_BASE + 6, linux/fcntl.h; a cmsghdr's header on LP64: cmsg(3);
# _LINUX_CAPABILITY_VERSION_3: linux/capability.h; PR_SET_DUMPABLE: linux/prctl.h; SUID_DUMP_USER: linux/sched/coredump.h.
sub AF_UNIX () { 1 } sub SOCK_STREAM () { 1 } sub SOL_SOCKET () { 1 } sub SO_PEERCRED () { 17 } sub SCM_RIGHTS () { 1 }
sub WNOHANG () { 1 } sub EAGAIN () { 11 } sub HOLDER_WAIT_S () { 20 } sub CONNECT_RETRY_S () { 0.002 } sub CMSG_HEADER () { 16 } sub SAID_MAX () { 16 } sub MSG_CMSG_CLOEXEC () { 0x40000000 } sub F_DUPFD_CLOEXEC () { 1030 } sub LINUX_CAPABILITY_VERSION_3 () { 0x20080522 } sub PR_SET_DUMPABLE () { 4 } sub SUID_DUMP_USER () { 1 } sub MFD_CLOEXEC () { 1 } sub EINTR () { 4 } sub SAID_TEXT_MAX () { 4000 }

my $program = "clankie-agent-exec";
sub refuse { my ($code, $text) = @_; syswrite STDERR, "$program: $text\n"; exit $code }
my ($recvmsg, $dup3, $fcntl, $close, $setsid, $exit_group, $setgroups, $setresgid, $setresuid, $capset, $prctl, $memfd_create, $uid, $agent_uid, $agent_gid, @agent_groups) = map { /\A(\d{1,10})\z/ ? $1 + 0 : refuse(64, "spawner's grab: bad argument; report this") } @ARGV;
my (%grab, %early, $id, $message);
# One line of the report, whole: perl runs its SIGCHLD handler without SA_RESTART, so a write(2) it interrupts
# (EINTR, nothing written: a line is shorter than PIPE_BUF) is made again.
sub report { my $line = shift; 1 until defined syswrite(STDOUT, $line) || $! != EINTR }
# How a grab ended, once the zygote has reaped it: "E ID CODE SIGNAL TEXT" (TEXT: the start of what it said on its
# stderr, on one line). perl runs the SIGCHLD handler between its own operations, so a grab may be reaped before the
# zygote has recorded it (%grab): its status waits in %early until it is.
sub reaped {
  my ($g, $status) = @_;
  my $job = delete $grab{$g} or return $early{$g} = $status;
  my $text = "";
  sysseek($job->[1], 0, 0) && sysread($job->[1], $text, SAID_TEXT_MAX);
  report("E $job->[0] " . ($status >> 8) . " " . ($status & 127) . " " . ($text =~ s/\s+/ /gr) . "\n");
}
$SIG{CHLD} = sub { while ((my $g = waitpid(-1, WNOHANG)) > 0) { reaped($g, $?) } };
while (1) {
  my $head = <STDIN>;
  exit 0 unless defined $head; # the spawner has ended
  $head =~ /\A(\d{1,10}) (\d{1,9})\n\z/ && read(STDIN, $message, $2) == $2 or refuse(64, "spawner's grab: bad job header; report this");
  $id = $1;
  # Only the grab forked below can have ended early: a child of the zygote's reaped before now was none of its grabs.
  %early = ();
  # The grab's stderr: an anonymous file in memory (memfd_create(2), MFD_CLOEXEC), which no writer fills as it would
  # a pipe that is read only at the end; its start is the report's text.
  my ($memfd_name, $said) = ("grab-stderr");
  my $fd = syscall($memfd_create, $memfd_name, MFD_CLOEXEC);
  # A job the zygote cannot fork a grab for is answered so, and the zygote goes on.
  my $g = $fd >= 0 && open($said, "+<&=", $fd) ? fork : undef;
  if (!defined $g) { report("E $id 71 0 $program: a grab's stderr or fork(2) failed: " . ($! == EAGAIN ? "EAGAIN: node's uid is at its process limit; try again once processes of node's have ended, or raise the container's process limit" : "errno " . ($! + 0) . "; report this") . "\n"); next }
  if ($g == 0) {
    $SIG{CHLD} = "DEFAULT"; # the grab reaps its own job (parent), not the zygote's handler
    %grab = (); # closes the other jobs' stderr files: this grab holds none of them
    # Its stdio: /dev/null, the report to the spawner, and the file the zygote reads at its end.
    open(STDIN, "+<", "/dev/null") && syscall($dup3, $fd, 2, 0) == 2 or refuse(71, "/dev/null or dup3 onto the grab's stdio failed: errno " . ($! + 0) . "; report this");
    last;
  }
  $grab{$g} = [$id, $said];
  reaped($g, delete $early{$g}) if exists $early{$g};
}
my ($holder, $name, $oom, $fds, $count, @chain) = split /\0/, substr($message, 0, -1), -1;
%ENV = map { /\A([^=]+)=(.*)\z/s ? ($1, $2) : () } splice @chain, 0, $count // 0;
# Under -T: the fields the grab itself acts on are taken by their form (the stage's request is the stage's to check).
$message =~ /\0\z/ && @chain && $holder =~ /\A(-|[1-9]\d{0,9})\z/ && ($holder = $1, 1) && $fds =~ /\A(\d{1,10}(?:,\d{1,10})*)\z/ && ($fds = $1, 1) && $name =~ /\A([\w-]{0,100})\z/ && ($name = $1, 1) or refuse(64, "spawner's grab: bad job; report this");
if ($holder eq "-") {
  # The report is never what a stop's stage (as the agent) or a release holds: /dev/null, as fd 0 is.
  syscall($dup3, 0, 1, 0) == 1 or refuse(71, "dup3 onto fd 1 failed: errno " . ($! + 0) . "; report this");
} else {
  my $job = fork // refuse(71, "fork failed: errno " . ($! + 0) . "; raise the container's process limit");
  parent($job) if $job;
  syscall($setsid) > 0 or refuse(71, "setsid failed: errno " . ($! + 0) . "; report this");
  take();
}
my %job = map { $_ => 1 } split /,/, $fds;
opendir(my $dir, "/proc/self/fd") or refuse(71, "opendir /proc/self/fd failed: errno " . ($! + 0) . "; mount /proc in the container");
my @open = map { /\A(\d+)\z/ ? $1 : () } readdir $dir;
closedir $dir;
syscall($close, $_ + 0) for grep { !$job{$_} } @open;
if ($oom ne "") {
  open my $adj, ">", "/proc/self/oom_score_adj" or refuse(71, "open /proc/self/oom_score_adj failed: errno " . ($! + 0) . "; mount /proc in the container");
  print $adj "$oom\n";
  close $adj or refuse(71, "write /proc/self/oom_score_adj failed: errno " . ($! + 0) . "; pass an --oom-score-adj the kernel accepts");
}
unless ($chain[0] eq "-stage") {
  @chain = map { /\A(.*)\z/s } @chain; # the spawner's own plan
  exec { $chain[0] } @chain or refuse(126, "exec $chain[0] failed: errno " . ($! + 0) . "; report this");
}
drop();
# The stage's request; the stage, compiled below this program, runs on from here.
@ARGV = @chain[1 .. $#chain];

# The drop to the agent: groups, then gid, then uid, then every capability
# (capset(2): _LINUX_CAPABILITY_VERSION_3, this process, two empty sets of
# effective, permitted and inheritable, linux/capability.h). Last, the
# process is made dumpable again, as setpriv's execve(2) of the stage's perl
# left it: the change of ids cleared the flag (prctl(2), PR_SET_DUMPABLE),
# which makes the kernel give /proc/self's files to root, and the stage's
# check that its Landlock domain is in force (it may not open its own
# oom_score_adj for writing) would then pass with no domain at all.
sub drop {
  syscall($setgroups, scalar(@agent_groups), pack("L*", @agent_groups)) == 0 or refuse(71, "setgroups failed: errno " . ($! + 0) . "; report this");
  syscall($setresgid, $agent_gid, $agent_gid, $agent_gid) == 0 or refuse(71, "setresgid failed: errno " . ($! + 0) . "; report this");
  syscall($setresuid, $agent_uid, $agent_uid, $agent_uid) == 0 or refuse(71, "setresuid failed: errno " . ($! + 0) . "; report this");
  my ($header, $data) = (pack("L i", LINUX_CAPABILITY_VERSION_3, 0), pack("L6", (0) x 6));
  syscall($capset, $header, $data) == 0 or refuse(71, "capset failed: errno " . ($! + 0) . "; report this");
  syscall($prctl, PR_SET_DUMPABLE, SUID_DUMP_USER, 0, 0, 0) == 0 or refuse(71, "prctl PR_SET_DUMPABLE failed: errno " . ($! + 0) . "; report this");
}

# The job's parent: reaps every child until the job has ended, then ends as
# it did (Node's spawn left every signal's disposition at its default).
sub parent {
  my ($job, $status) = @_;
  syswrite STDOUT, "P $id $job\n"; # the grab's CHLD is at its default: no handler interrupts it
  until (defined $status) { my $gone = waitpid(-1, 0); $gone > 0 or refuse(71, "waitpid failed: errno " . ($! + 0) . "; report this"); $status = $? if $gone == $job }
  1 while waitpid(-1, WNOHANG) > 0;
  # exit_group(2) itself: perl's own exit would first tear its interpreter down, on the path from the job's end to its report.
  syscall($exit_group, $status >> 8) unless $status & 127;
  kill $status & 127, $$;
  refuse(71, "the job was killed by signal " . ($status & 127) . ", which did not end its grab; report this");
}

# The job's fds, from the holder's socket, at their own numbers.
sub take {
  my $gone = "the service's spawn ended before the spawner started it";
  open my $st, "<", "/proc/$holder/status" or refuse(71, "open /proc/$holder/status failed: errno " . ($! + 0) . "; $gone");
  my %f = map { /\A(\w+):\s*(.*)\z/ ? ($1, $2) : () } map { chomp; $_ } <$st>;
  close $st; # and $s below, before the job's fds are placed: perl would close a handle's fd number at the sub's end, the job's by then
  my @ids = split /\s+/, $f{Uid} // "";
  (@ids == 4 && !grep { $_ != $uid } @ids) or refuse(77, "the job's holder $holder is not the service's uid $uid; only the service's own children hand stdio to agent work");
  for my $set (qw(CapInh CapPrm CapEff CapAmb)) {
    ($f{$set} // "x") =~ /\A0+\z/ or refuse(77, "the job's holder $holder holds capabilities ($set $f{$set}); only a capless child of the service hands stdio to agent work");
  }
  # The holder binds its socket as it starts, perhaps after this request reached the spawner: connect(2) is refused until then.
  socket(my $s, AF_UNIX, SOCK_STREAM, 0) or refuse(71, "socket AF_UNIX failed: errno " . ($! + 0) . "; report this");
  my $until = time + HOLDER_WAIT_S;
  # An abstract address (unix(7)): sun_family, then the name with its leading NUL, its length exactly the name's.
  until (connect($s, pack("S", AF_UNIX) . "\0$name")) {
    time < $until && -e "/proc/$holder" or refuse(71, "connect to the job's holder $holder failed: errno " . ($! + 0) . "; $gone");
    select(undef, undef, undef, CONNECT_RETRY_S);
  }
  my ($pid, $peer) = unpack "i I", getsockopt($s, SOL_SOCKET, SO_PEERCRED) // "";
  ($pid // 0) == $holder && ($peer // -1) == $uid or refuse(77, "the socket the job's holder $holder named is held by process " . ($pid // "?") . "; only the service's own holder hands stdio to agent work");
  my @want = split /,/, $fds;
  my ($top) = sort { $b <=> $a } @want;
  syswrite($s, "$fds\n") or refuse(71, "write to the job's holder $holder failed: errno " . ($! + 0) . "; $gone");
  # struct msghdr, iovec and cmsghdr (recvmsg(2), cmsg(3)) as LP64 lays them out; the fds arrive close-on-exec.
  # The holder's data is "f" with the fds, or the number of a kept fd it does not hold open (then no fd).
  my ($said, $control) = (chr(0) x SAID_MAX, chr(0) x (CMSG_HEADER + 4 * @want));
  my $iov = pack "p Q", $said, SAID_MAX;
  my $msg = pack "p L x4 p Q p Q i x4", undef, 0, $iov, 1, $control, length $control, 0;
  my $n = syscall($recvmsg, fileno $s, $msg, MSG_CMSG_CLOEXEC);
  $n > 0 or refuse(71, "recvmsg from the job's holder $holder failed: errno " . ($! + 0) . "; $gone");
  close $s;
  substr($said, 0, $n) =~ /\A(\d+)\z/ and refuse(64, "--keep-fd $1: fd $1 is not open; open it in the service's spawn (spawnAgent's stdio at index $1) before the spawn");
  my ($len, $level, $type, @got) = unpack "Q i i i" . @want, $control;
  $level == SOL_SOCKET && $type == SCM_RIGHTS && $len == CMSG_HEADER + 4 * @want or refuse(71, "the job's holder $holder sent no " . @want . " fds; $gone");
  # Above every fd the job takes first, so that no placement overwrites an fd not yet placed.
  my @high = map { syscall($fcntl, $_, F_DUPFD_CLOEXEC, $top + 1) } @got;
  for my $i (0 .. $#want) {
    $high[$i] > $top && syscall($dup3, $high[$i], $want[$i] + 0, 0) == $want[$i] or refuse(71, "dup3 onto fd $want[$i] failed: errno " . ($! + 0) . "; report this");
  }
}
