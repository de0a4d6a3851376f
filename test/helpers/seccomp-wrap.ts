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
 * A kernel that answers with a value of its choosing, which SECCOMP_RET_ERRNO
 * (a negative errno, or 0) cannot: SECCOMP_RET_USER_NOTIF hands the call to
 * a supervisor, which answers it (seccomp_unotify(2)). The wrapper sets
 * NoNewPrivs (no root needed), installs the filter with a listener, forks the
 * launch and answers each call the filter hands it with `value`, until the
 * launch exits with its status. struct seccomp_notif is 80 bytes (id, pid,
 * flags, seccomp_data), struct seccomp_notif_resp 24 (id, val, error, flags).
 */
const SUPERVISE = String.raw`
my ($p, $value) = (pack("H*", shift @ARGV), shift @ARGV);
shift @ARGV if @ARGV && $ARGV[0] eq "--";
syscall(157, 38, 1, 0, 0, 0) == 0 or die "seccomp-wrap: PR_SET_NO_NEW_PRIVS: $!\n";
my $fd = syscall(317, 1, 8, pack("S x6 p", length($p) / 8, $p));
$fd >= 0 or die "seccomp-wrap: seccomp NEW_LISTENER: $!\n";
my $pid = fork // die "seccomp-wrap: fork: $!\n";
if ($pid == 0) { syscall(3, $fd); exec { $ARGV[0] } @ARGV or die "seccomp-wrap: exec $ARGV[0]: $!\n" }
while (1) {
  if (waitpid($pid, 1) == $pid) { exit(($? & 127) ? 128 + ($? & 127) : $? >> 8) }
  my $bits = "";
  vec($bits, $fd, 1) = 1;
  next unless select($bits, undef, undef, 0.02) > 0;
  my $notif = "\0" x 80;
  next unless syscall(16, $fd, 0xc0502100, $notif) == 0;
  my $resp = pack("Qqlx4", unpack("Q", $notif), $value, 0);
  syscall(16, $fd, 0xc0182101, $resp);
}
`;

const SECCOMP_RET_USER_NOTIF = 0x7fc00000;

/** A kernel whose landlock_create_ruleset (x86-64) answers the version query (flags 1) with `abi`; every other call runs. */
export function landlockAbi(abi: number): string[] {
  const program = assemble([
    { op: "ld", offset: 0 },
    { op: "jeq", k: 444, then: "create", else: "allow" },
    { op: "label", name: "create" },
    { op: "ld", offset: 16 + 8 * 2 },
    { op: "jeq", k: 1, then: "notify", else: "allow" },
    { op: "label", name: "notify" },
    { op: "ret", k: SECCOMP_RET_USER_NOTIF },
    { op: "label", name: "allow" },
    { op: "ret", k: SECCOMP_RET.allow },
  ]);
  return ["/usr/bin/perl", "-e", SUPERVISE, program.toString("hex"), String(abi), "--"];
}
