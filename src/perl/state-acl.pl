# The walk of /state (src/layout/state-acl.ts), passed to perl -e: one walk
# that reads each entry's owner, mode and POSIX ACLs, because Node has no
# getxattr(2) and ACLs live in the extended attributes system.posix_acl_access
# and system.posix_acl_default (acl(5), xattr(7)).
# Arguments: MODE (fix; audit and defaults, the read-only modes that
# src/perl/state-audit.pl, appended to this program, defines), ROOT, PRUNED
# (the one top-level name never entered), RELEASE (the top-level name of the
# release root), then numbers:
# the service's uid and gid, lgetxattr, getxattr, setxattr, removexattr, the
# open flags of a directory (O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_NONBLOCK), of a
# regular file (O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_NOCTTY) and of any other
# entry (O_PATH|O_NOFOLLOW), ENODATA, EOPNOTSUPP, the depth limit (a
# directory that many levels below ROOT is judged, and not entered) and the
# most bytes of a path printed (a longer one is cut, and ends in "..."), and
# the most records of each kind and zone the audit prints.
# Standard input: mount points to leave alone, as NUL-terminated bytes.
# Output, NUL-terminated fields:
#   A path access default   an entry with an ACL: each attribute as hex, or
#                           empty when absent (fix: as it was, then removed;
#                           the first five only)
#   P path syscall errno    an entry that could not be read (audit, defaults),
#                           or changed (fix: the last record, exit 71)
#   X path                  fix: an entry changed while it was looked at
#                           (the last record, exit 65)
#   D path                  fix: a device node (the last record, exit 65)
#   H path links uid        fix: a file another uid owns with more than one
#                           name (the last record, exit 65)
#   S path why              fix: an entry left alone, "mount" (another
#                           filesystem, never entered) or "deep" (a directory
#                           at the depth limit: judged, nothing below it
#                           walked); the first five only
#   V visited stripped checked fixed skipped
#                           the last record: the walk ran to its end
# (state-audit.pl adds the audit's records.)
# fix makes every entry what src/layout/state.ts's layout wants (owned by
# the service, the modes of `wanted` below), every ACL removed first: the
# access ACL is replaced by its three base entries, which the kernel stores
# as the mode (the group bits become the owning group's entry, not the mask,
# and the attribute goes), so the mode is judged after the ACL is gone.
# Names are bytes. Only what lstat calls a directory, on ROOT's filesystem
# and not a mount point, is entered: opened O_NOFOLLOW, checked to be the
# inode lstat saw, and made the working directory (fchdir), so every name
# is looked up in the directory checked, as openat(2) would; ".." is checked
# on the way back. No symlink is followed. fix changes an entry only through
# an fd checked the same way, and only when it differs from the layout: a
# /state that fits costs an lstat and an lgetxattr per file. Directories and
# regular files are changed by fchown and fchmod (a FIFO or device renamed
# over a file's name meanwhile is opened non-blocking, with no controlling
# terminal, and refused); anything else is opened O_PATH, which opens
# nothing, and changed through its /proc/self/fd link, which names the inode
# the fd holds (a symlink itself). ACLs are read and changed through that link.
# sysopen's handles without PerlIO's buffer layer: no lseek(2) and no
# ioctl(TCGETS) on every file the walk opens (perlio(3perl), open.pm).
BEGIN { ${^OPEN} = ":unix\0:unix" }
my ($mode, $root, $pruned, $release, $uid, $gid, $lget, $get, $set, $remove, $dirFlags, $fileFlags, $pathFlags, $enodata, $enotsup, $limit, $shown, $keep) = @ARGV;
my ($fix, $audit, $dirsOnly) = map { $mode eq $_ } qw(fix audit defaults);
my %skip;
{ local $/ = "\0"; binmode STDIN; while (my $x = <STDIN>) { chomp $x; $skip{$x} = 1 if length $x } }
$_ += 0 for $uid, $gid, $lget, $get, $set, $remove, $dirFlags, $fileFlags, $pathFlags, $enodata, $enotsup, $limit, $shown, $keep;
my $longestSkip = 0;
for (keys %skip) { $longestSkip = length if length > $longestSkip }
binmode STDOUT;
my ($access, $default) = ("system.posix_acl_access", "system.posix_acl_default");
my ($DIR, $LINK) = (0040000, 0120000);
my $buf = "\0" x 65536;
my ($stripped, $checked, $fixed, $skipped) = (0, 0, 0, 0);
# The directories being walked, ROOT first: [name, names left, dev, ino,
# whether it has no subdirectory, its path's length, its children's zone].
my @stack;

# The path of `name` in the directory on top of the stack (undef: that
# directory's own), at most `max` bytes then "...".
sub pathOf {
  my ($name, $max) = @_;
  my $p = "";
  for my $part ((map { $_->[0] } @stack), defined $name ? ($name) : ()) {
    $p .= ($p eq "" || $p eq "/" ? "" : "/") . $part;
    return substr($p, 0, $max) . "..." if length $p > $max;
  }
  return $p;
}

sub stop { my ($code, @fields) = @_; print join("\0", @fields), "\0"; exit $code }
sub problem { my ($name, $call) = @_; my $path = pathOf($name, $shown); stop(71, "P", $path, $call, $! + 0) if $fix; print "P\0$path\0$call\0", $! + 0, "\0" }
sub changed { stop(65, "X", pathOf($_[0], $shown)) }
# An entry fix leaves alone (`why`: mount, deep) in `zone`; the audit judges it (left, state-audit.pl).
sub skip { $skipped++; return left(@_) if $audit; print "S\0", pathOf($_[0], $shown), "\0$_[1]\0" if $fix && $skipped <= 5 }

# The mode the layout wants (src/layout/state.ts, stateModes; held equal by
# test/unit/self-check/state.test.ts through the audit mode). Zones: 0
# private, 1 in the release, 2 the release root's top-level name, 3 ROOT. A
# directory at the depth limit is closed as private, in the release too.
sub private { my ($zone, $dir, $depth) = @_; $zone == 0 || ($dir && $depth >= $limit) }
sub wanted {
  my ($zone, $m, $dir, $depth) = @_;
  return 0711 if $zone == 3;
  return $m & 0700 if private($zone, $dir, $depth);
  return 0755 if $zone == 2 && $dir;
  my $shared = (($m >> 3) | $m) & 05;
  return ($m & 0700) | ($shared << 3) | $shared;
}

# One attribute of `name` as hex; "" when absent; undef (reported) on a failure.
# Asked first with size 0, which only says whether it is there: the kernel
# allocates and zeroes a buffer of the size given on every call (getxattr(2)).
sub attribute {
  my ($nr, $name, $attr, $label) = @_;
  my $n = syscall($nr, $name, $attr, 0, 0);
  $n = syscall($nr, $name, $attr, $buf, 65536) if $n > 0;
  return unpack("H*", substr($buf, 0, $n)) if $n >= 0;
  return "" if $! == $enodata || $! == $enotsup || $! == 2;
  problem($label, $nr == $lget ? "lgetxattr" : "getxattr");
  return undef;
}

# The access ACL's base entries as an ACL of its own: the owner's (tag 1)
# and other's (0x20) as they are, and the owning group's (4) as far as the
# mask (0x10) let it act, so nobody gains a permission (an entry missing
# counts as none; the kernel never stores an ACL without the three).
sub base {
  my ($hex) = @_;
  my %perm = (1 => 0, 4 => 0, 16 => 7, 32 => 0);
  my @e = unpack("V(vvV)*", pack("H*", $hex));
  shift @e;
  while (@e >= 3) { my ($tag, $p) = splice(@e, 0, 3); $perm{$tag} = $p if exists $perm{$tag} }
  return pack("V(vvV)3", 2, 1, $perm{1}, 0xffffffff, 4, $perm{4} & $perm{16}, 0xffffffff, 32, $perm{32}, 0xffffffff);
}

# fix: makes the inode open at $fh (fstat'ed as @o) the layout's: its ACLs
# (when `acl`: lgetxattr saw one, or a directory) removed first (an access
# ACL's mask is the group bits `wanted` reads), then its owner, then its mode
# (which `wanted` never gives a set-id bit: the chmod follows any chown(2)
# that cleared one). `byFd`: $fh is open for fchown and fchmod.
sub settle {
  my ($fh, $label, $zone, $depth, $acl, $byFd, @o) = @_;
  my $link = "/proc/self/fd/" . fileno($fh);
  my $type = $o[2] & 0170000;
  my $changed = 0;
  if ($acl) {
    my $a = attribute($get, $link, $access, $label);
    my $d = $type == $DIR ? attribute($get, $link, $default, $label) : "";
    if (length($a) || length($d)) {
      print "A\0", pathOf($label, $shown), "\0$a\0$d\0" if ++$stripped <= 5;
      if (length $a) { my $new = base($a); syscall($set, $link, $access, $new, length($new), 0) == 0 or problem($label, "setxattr") }
      if (length $d) { syscall($remove, $link, $default) == 0 or problem($label, "removexattr") }
      @o = stat $fh;
      $changed = 1;
    }
  }
  my $target = $byFd ? $fh : $link;
  if ($o[4] != $uid || $o[5] != $gid) { chown($uid, $gid, $target) or problem($label, "chown"); $changed = 1 }
  my $want = wanted($zone, $o[2] & 07777, $type == $DIR, $depth);
  if ($type != $LINK && ($o[2] & 07777) != $want) { chmod($want, $target) or problem($label, "chmod"); $changed = 1 }
  $fixed++ if $changed;
}

# Opens `name` (lstat'ed as @st) O_NOFOLLOW with `flags`, checked to be that
# inode still; a name moved or replaced since lstat (ENOENT 2, ENOTDIR 20,
# ELOOP 40: the same numbers on every Linux architecture) is a change (the
# audit: a name gone is no entry left to judge, as when lstat finds none).
sub openChecked {
  my ($name, $label, $flags, @st) = @_;
  my $fh;
  unless (sysopen($fh, $name, $flags)) { changed($label) if $fix && ($! == 2 || $! == 20 || $! == 40); problem($label, "open") unless $! == 2; return undef }
  my @o = stat $fh;
  my $type = $st[2] & 0170000;
  changed($label) unless @o && $o[0] == $st[0] && $o[1] == $st[1] && ($o[2] & 0170000) == $type && ($type == $DIR || $o[3] == $st[3]);
  return ($fh, @o);
}

# fix: one entry that is not a directory. It is opened only when its owner,
# its mode or an ACL differs from the layout.
sub take {
  my ($name, $zone, $depth, @st) = @_;
  my $type = $st[2] & 0170000;
  stop(65, "D", pathOf($name, $shown)) if $type == 0020000 || $type == 0060000;
  # A file another uid owns that has more than one name: changing it would change a file elsewhere.
  stop(65, "H", pathOf($name, $shown), $st[3], $st[4]) if $st[3] > 1 && $st[4] != $uid;
  my $acl = $type != $LINK && length(attribute($lget, $name, $access, $name) // "");
  return if !$acl && $st[4] == $uid && $st[5] == $gid && ($type == $LINK || ($st[2] & 07777) == wanted($zone, $st[2] & 07777, 0, $depth));
  my $file = $type == 0100000;
  my ($fh, @o) = openChecked($name, $name, $file ? $fileFlags : $pathFlags, @st);
  settle($fh, $name, $zone, $depth, $acl, $file, @o);
}

# A directory (lstat'ed as @st): fix settles it (the audit judges it by its
# name first, so that one it cannot open is judged too); its names are read,
# and it is made the working directory, unless it is at the depth limit.
# Returns its names, or undef (not entered).
sub enter {
  my ($name, $label, $zone, $depth, @st) = @_;
  judge($name, $label, $zone, $depth, @st) unless $fix;
  my ($fh, @o) = openChecked($name, $label, $dirFlags, @st);
  return undef unless $fh;
  settle($fh, $label, $zone, $depth, 1, 1, @o) if $fix;
  if ($depth >= $limit) { skip($label, "deep", $zone); return undef }
  my $h;
  unless (opendir $h, "/proc/self/fd/" . fileno($fh)) { problem($label, "readdir"); return undef }
  my @names = grep { $_ ne "." && $_ ne ".." } readdir $h;
  closedir $h;
  unless (chdir $fh) { problem($label, "fchdir"); return undef }
  return \@names;
}

# A directory whose st_nlink is 2 has no subdirectory (each one's ".." is a
# link to it; the kernel keeps the count on ext4, xfs and tmpfs, and where it
# does not, as on btrfs and overlayfs, st_nlink is 1): defaults does not
# lstat its names. fix and audit lstat every name: they judge owners and modes.
my @rst = lstat $root;
problem($root, "lstat") unless @rst;
my $visited = 1;
$checked++;
my $names = @rst ? enter($root, $root, 3, 0, @rst) : undef;
@stack = ([$root, $names, @rst[0, 1], $rst[3] == 2, length $root, 0]) if $names;
while (@stack) {
  my $frame = $stack[-1];
  my $name = shift @{ $frame->[1] };
  unless (defined $name) {
    pop @stack;
    last unless @stack;
    my @p = (chdir("..") and stat("."));
    changed(undef) unless @p && $p[0] == $stack[-1][2] && $p[1] == $stack[-1][3];
    next;
  }
  next if @stack == 1 && $name eq $pruned;
  my $zone = @stack == 1 ? ($name eq $release ? 2 : 0) : $frame->[6];
  # A path only as long as a mount point can be one (mount points are never hashed at every level of a deep chain).
  my $length = $frame->[5] + ($frame->[5] == 1 ? 0 : 1) + length $name;
  if ($length <= $longestSkip && $skip{pathOf($name, $longestSkip)}) { skip($name, "mount", $zone); next }
  $visited++;
  next if $dirsOnly && $frame->[4];
  my @st = lstat $name;
  unless (@st) { $visited--; problem($name, "lstat") unless $! == 2; next }
  if ($st[0] != $rst[0]) { skip($name, "mount", $zone); next }
  $checked++;
  if (($st[2] & 0170000) != $DIR) {
    # The common case inline, for fix and the audit alike: a private file of the service's, mode 0?00 (wanted), with no access ACL.
    next if !$dirsOnly && !$zone && $st[4] == $uid && $st[5] == $gid && !($st[2] & 07077) && ($st[2] & 0170000) == 0100000
      && syscall($lget, $name, $access, 0, 0) < 0 && ($! == $enodata || $! == $enotsup);
    $fix ? take($name, $zone, scalar @stack, @st) : $dirsOnly || judge($name, $name, $zone, scalar @stack, @st);
    next;
  }
  my $depth = @stack;
  my $children = enter($name, $name, $zone, $depth, @st);
  push @stack, [$name, $children, @st[0, 1], $st[3] == 2, $length, $zone ? 1 : 0] if $children;
}
tally() if $audit;
print "V\0$visited\0$stripped\0$checked\0$fixed\0$skipped\0";
