/*
 * A launch wrapper (LaunchOptions.wrap) that makes the kernel look like one
 * without Landlock, or without seccomp filters, to everything the launch
 * starts: a seccomp filter, installed by root before the launch, that answers
 * the named system calls with an errno, as a kernel built without them or an
 * older engine's profile would. With errno 0 the call returns 0 and does
 * nothing (seccomp(2): SECCOMP_RET_ERRNO sets the return value to -errno): a
 * kernel that lies, which only a check of what the call should have done
 * can see. Assembled by the program's own assembler, whose jumps the unit
 * tests check.
 */
import { assemble, SECCOMP_RET } from "../../src/seccomp-filter.ts";

export interface Refused {
  nr: number;
  /** Only when the first argument's low word is this (prctl's option). */
  arg0?: number;
  errno: number;
}

const INSTALL = String.raw`
my $p = pack "H*", shift @ARGV;
shift @ARGV if @ARGV && $ARGV[0] eq "--";
syscall(157, 22, 2, pack("S x6 p", length($p) / 8, $p), 0, 0) == 0 or die "seccomp-wrap: $!\n";
exec { $ARGV[0] } @ARGV or die "seccomp-wrap: exec $ARGV[0]: $!\n";
`;

export function refusing(calls: readonly Refused[]): string[] {
  const program = assemble([
    { op: "ld", offset: 0 },
    ...calls.map((c, i) => ({ op: "jeq" as const, k: c.nr, then: `r${i}` })),
    { op: "ret", k: SECCOMP_RET.allow },
    ...calls.flatMap((c, i) => [
      { op: "label" as const, name: `r${i}` },
      ...(c.arg0 === undefined ? [] : [{ op: "ld" as const, offset: 16 }, { op: "jeq" as const, k: c.arg0, then: `e${i}`, else: "allow" }]),
      { op: "label" as const, name: `e${i}` },
      { op: "ret" as const, k: SECCOMP_RET.errno | c.errno },
    ]),
    { op: "label", name: "allow" },
    { op: "ret", k: SECCOMP_RET.allow },
  ]);
  return ["/usr/bin/perl", "-e", INSTALL, program.toString("hex"), "--"];
}

const ENOSYS = 38;
const EINVAL = 22;
/** A kernel without Landlock (x86-64): landlock_* answer ENOSYS. */
export const WITHOUT_LANDLOCK = refusing([444, 445, 446].map((nr) => ({ nr, errno: ENOSYS })));
/** A kernel without seccomp filters (x86-64): prctl(PR_SET_SECCOMP) and seccomp(2) answer EINVAL. */
export const WITHOUT_SECCOMP = refusing([{ nr: 157, arg0: 22, errno: EINVAL }, { nr: 317, errno: EINVAL }]);

/** A kernel whose landlock_restrict_self (x86-64) answers 0 and enforces nothing. */
export const LANDLOCK_LIES = refusing([{ nr: 446, errno: 0 }]);
/** A kernel whose prctl(PR_SET_SECCOMP) and seccomp(2) (x86-64) answer 0 and install nothing. */
export const SECCOMP_LIES = refusing([{ nr: 157, arg0: 22, errno: 0 }, { nr: 317, errno: 0 }]);

/*
 * A kernel that lies as a test tells it to, where SECCOMP_RET_ERRNO (a
 * negative errno, or 0, for every call alike) cannot: SECCOMP_RET_USER_NOTIF
 * hands each call of the named system calls to a supervisor
 * (seccomp_unotify(2)), which answers the ones a lie names (the Nth call, a
 * call with a given argument, an openat(2) of a given path) with an errno, a
 * value or an fd of another file, and lets every other call run
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE). No root needed: the wrapper's child sets
 * NoNewPrivs, installs the filter with a listener, hands the listener to the
 * supervisor (pidfd_getfd(2)) and execs the launch; the supervisor, outside
 * the filter, answers until the launch exits, with its status. struct
 * seccomp_notif is 80 bytes (id, pid, flags, seccomp_data), struct
 * seccomp_notif_resp 24 (id, val, error, flags), struct seccomp_notif_addfd
 * 24 (id, flags, srcfd, newfd, newfd_flags). x86-64 numbers.
 */
const SUPERVISE = String.raw`
my ($p, $spec) = (pack("H*", shift @ARGV), shift @ARGV);
shift @ARGV if @ARGV && $ARGV[0] eq "--";
my @rules = map { [split /\t/, $_, -1] } grep { length } split /\n/, $spec;
my @seen = (0) x @rules;
pipe(my $fd_r, my $fd_w) or die "seccomp-wrap: pipe: $!\n";
pipe(my $go_r, my $go_w) or die "seccomp-wrap: pipe: $!\n";
my $pid = fork // die "seccomp-wrap: fork: $!\n";
if ($pid == 0) {
  close $fd_r; close $go_w;
  syscall(157, 38, 1, 0, 0, 0) == 0 or die "seccomp-wrap: PR_SET_NO_NEW_PRIVS: $!\n";
  my $listener = syscall(317, 1, 8, pack("S x6 p", length($p) / 8, $p));
  $listener >= 0 or die "seccomp-wrap: seccomp NEW_LISTENER: $!\n";
  syswrite $fd_w, pack("l", $listener);
  sysread $go_r, my $go, 1;
  syscall(3, $listener);
  exec { $ARGV[0] } @ARGV or die "seccomp-wrap: exec $ARGV[0]: $!\n";
}
close $fd_w; close $go_r;
sysread($fd_r, my $packed, 4) == 4 or die "seccomp-wrap: no listener\n";
my $pidfd = syscall(434, $pid, 0);
my $fd = syscall(438, $pidfd, unpack("l", $packed), 0);
$fd >= 0 or die "seccomp-wrap: pidfd_getfd: $!\n";
syswrite $go_w, "g";
close $go_w;
sub respond { my $r = pack("Qqll", @_); syscall(16, $fd, 0xc0182101, $r) }
sub path_at {
  my ($tid, $addr) = @_;
  open my $mem, "<", "/proc/$tid/mem" or return "";
  sysseek($mem, $addr, 0) or return "";
  sysread($mem, my $buf, 4096) or return "";
  $buf =~ s/\0.*//s;
  return $buf;
}
while (1) {
  if (waitpid($pid, 1) == $pid) { exit(($? & 127) ? 128 + ($? & 127) : $? >> 8) }
  my $bits = "";
  vec($bits, $fd, 1) = 1;
  next unless select($bits, undef, undef, 0.02) > 0;
  my $notif = "\0" x 80;
  next unless syscall(16, $fd, 0xc0502100, $notif) == 0;
  my ($id, $tid, undef, $nr, undef, undef, @args) = unpack("QLLlLQQ6", $notif);
  my $lie;
  for my $i (0 .. $#rules) {
    my ($rnr, $index, $value, $path, $calls, undef, undef, undef, $at) = @{$rules[$i]};
    next unless $nr == $rnr;
    next if $index ne "" && ($args[$index] & 0xffffffff) != $value;
    next if $path ne "" && path_at($tid, $args[$at]) ne $path;
    my $n = ++$seen[$i];
    next if $calls ne "" && !grep { $_ == $n } split /,/, $calls;
    $lie = $rules[$i];
    last;
  }
  if (!$lie) { respond($id, 0, 0, 1); next }
  my (undef, undef, undef, undef, undef, $errno, $answer, $file) = @$lie;
  if ($file ne "") {
    open my $src, "<", $file or die "seccomp-wrap: $file: $!\n";
    my $addfd = pack("QLLLL", $id, 2, fileno($src), 0, 02000000);
    syscall(16, $fd, 0x40182103, $addfd);
    close $src;
  } elsif ($errno ne "") { respond($id, 0, -$errno, 0) }
  else { respond($id, $answer, 0, 0) }
}
`;

const SECCOMP_RET_USER_NOTIF = 0x7fc00000;

/** One lie: which calls of system call `nr` it answers, and with what (an errno, a value, or an fd of `file` for an openat). */
export interface Lie {
  nr: number;
  /** Only calls whose argument `arg[0]` has the low word `arg[1]`. */
  arg?: readonly [number, number];
  /** Only a call whose path argument (`pathArg`, default 1: openat(2)'s) is this exact path. */
  path?: string;
  pathArg?: number;
  /** Only the Nth of the calls that match (1-based); every one when absent. */
  calls?: readonly number[];
  errno?: number;
  value?: number;
  file?: string;
}

export const NR = { read: 0, rtSigprocmask: 14, execve: 59, pipe: 22, clone: 56, kill: 62, chdir: 80, prctl: 157, openat: 257, pipe2: 293, prlimit64: 302, pidfdSendSignal: 424, pidfdOpen: 434, landlockCreateRuleset: 444, landlockAddRule: 445, landlockRestrictSelf: 446 } as const;

/** A launch wrapper under which the kernel tells `lies`; every other call runs. */
export function lyingKernel(lies: readonly Lie[]): string[] {
  const nrs = [...new Set(lies.map((lie) => lie.nr))];
  const program = assemble([
    { op: "ld", offset: 0 },
    ...nrs.map((nr) => ({ op: "jeq" as const, k: nr, then: "notify" })),
    { op: "ret", k: SECCOMP_RET.allow },
    { op: "label", name: "notify" },
    { op: "ret", k: SECCOMP_RET_USER_NOTIF },
  ]);
  const spec = lies
    .map((lie) => [lie.nr, lie.arg?.[0] ?? "", lie.arg?.[1] ?? "", lie.path ?? "", (lie.calls ?? []).join(","), lie.errno ?? "", lie.value ?? 0, lie.file ?? "", lie.pathArg ?? 1].join("\t"))
    .join("\n");
  return ["/usr/bin/perl", "-e", SUPERVISE, program.toString("hex"), spec, "--"];
}

/** A kernel whose landlock_create_ruleset answers the version query (flags 1) with `abi`. */
export function landlockAbi(abi: number): string[] {
  return lyingKernel([{ nr: NR.landlockCreateRuleset, arg: [2, 1], value: abi }]);
}
