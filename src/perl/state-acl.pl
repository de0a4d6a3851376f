# The ACL walk of /state (src/layout/state-acl.ts), passed to perl -e: Node
# has no getxattr(2), and POSIX ACLs live in the extended attributes
# system.posix_acl_access and system.posix_acl_default (acl(5), xattr(7)).
# Arguments: MODE (strip or list), ROOT, PRUNED (the one top-level name never
# entered), then numbers: the service's uid, lgetxattr, getxattr, setxattr, removexattr,
# the open flags of a directory (O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_NONBLOCK)
# and of any entry (O_PATH|O_NOFOLLOW), ENODATA, EOPNOTSUPP, the depth limit
# (a directory that many levels below ROOT is judged, and not entered) and
# the most bytes of a path printed (a longer one is cut, and ends in "...").
# Standard input: mount points to leave alone, as NUL-terminated bytes.
# Output, NUL-terminated fields:
#   A path access default   an entry with an ACL: each attribute as hex, or
#                           empty when absent (strip: as it was, then removed;
#                           the first five only)
#   P path syscall errno    an entry that could not be read (list), or changed
#                           (strip: the last record, exit 71)
#   X path                  strip: an entry changed while it was looked at
#                           (the last record, exit 65)
#   V visited stripped      the last record: the walk ran to its end (stripped:
#                           how many entries had ACLs removed; list: 0)
# Names are bytes. Only what lstat calls a directory, on ROOT's filesystem
# and not a mount point, is entered: opened O_NOFOLLOW, checked to be the
# inode lstat saw, and made the working directory (fchdir), so every name
# is looked up in the directory checked, as openat(2) would; ".." is checked
# on the way back. No symlink is followed (symlinks carry no ACL). strip
# changes an entry only through an O_PATH fd checked the same way (by its
# /proc/self/fd link, which names the inode the fd holds): the access ACL is
# replaced by its three base entries, which the kernel stores as the mode
# (the group bits become the owning group's entry, not the mask, and the
# attribute goes), and the default ACL is removed.
my ($mode, $root, $pruned, $service, $lget, $get, $set, $remove, $dirFlags, $pathFlags, $enodata, $enotsup, $limit, $shown) = @ARGV;
my $strip = $mode eq "strip";
my %skip;
{ local $/ = "\0"; binmode STDIN; while (my $x = <STDIN>) { chomp $x; $skip{$x} = 1 if length $x } }
$_ += 0 for $service, $lget, $get, $set, $remove, $dirFlags, $pathFlags, $enodata, $enotsup, $limit, $shown;
my $longestSkip = 0;
for (keys %skip) { $longestSkip = length if length > $longestSkip }
binmode STDOUT;
my ($access, $default) = ("system.posix_acl_access", "system.posix_acl_default");
my $buf = "\0" x 65536;
my $stripped = 0;
# The directories being walked, ROOT first: [name, names left, dev, ino,
# whether it has no subdirectory, its path's length].
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
sub problem { my ($name, $call) = @_; my $path = pathOf($name, $shown); stop(71, "P", $path, $call, $! + 0) if $strip; print "P\0$path\0$call\0", $! + 0, "\0" }
sub changed { stop(65, "X", pathOf($_[0], $shown)) }

# One attribute of `name` as hex; "" when absent; undef (reported) on a failure.
sub attribute {
  my ($nr, $name, $attr, $label) = @_;
  my $n = syscall($nr, $name, $attr, $buf, 65536);
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

# Strips the ACLs of `name` (lstat'ed as @st) through an fd checked to hold
# that inode. A file another uid owns that has more than one name is left
# as it is (changing it would change a file elsewhere): the walk refuses it.
sub strip {
  my ($name, $label, @st) = @_;
  return if ($st[2] & 0170000) != 0040000 && $st[3] > 1 && $st[4] != $service;
  sysopen(my $fh, $name, $pathFlags) or do { changed($label) if $! == 2 || $! == 40; problem($label, "open") };
  my @o = stat $fh;
  changed($label) unless @o && $o[0] == $st[0] && $o[1] == $st[1];
  my $link = "/proc/self/fd/" . fileno($fh);
  my $a = attribute($get, $link, $access, $label);
  my $d = ($st[2] & 0170000) == 0040000 ? attribute($get, $link, $default, $label) : "";
  print "A\0", pathOf($label, $shown), "\0$a\0$d\0" if ++$stripped <= 5;
  if (length $a) { my $new = base($a); syscall($set, $link, $access, $new, length($new), 0) == 0 or problem($label, "setxattr") }
  if (length $d) { syscall($remove, $link, $default) == 0 or problem($label, "removexattr") }
  close $fh;
}

# One entry, by its name in the working directory: lstat'ed as @st, or not
# yet (@st empty: a name in a directory with no subdirectory).
sub judge {
  my ($name, $label, @st) = @_;
  return if @st && ($st[2] & 0170000) == 0120000;
  my $a = attribute($lget, $name, $access, $label) // "";
  my $d = @st && ($st[2] & 0170000) == 0040000 ? attribute($lget, $name, $default, $label) // "" : "";
  return unless length($a) || length($d);
  return print "A\0", pathOf($label, $shown), "\0$a\0$d\0" unless $strip;
  @st = lstat $name or changed($label) unless @st;
  strip($name, $label, @st);
}

# Makes `name` (lstat'ed as @st) the working directory; its names, or undef
# (list: reported, and the working directory is unchanged). ENOENT 2,
# ENOTDIR 20 and ELOOP 40 (a name moved or replaced since lstat) are the
# same numbers on every Linux architecture.
sub enter {
  my ($name, $label, @st) = @_;
  my ($fh, $h);
  unless (sysopen($fh, $name, $dirFlags)) { changed($label) if $strip && ($! == 2 || $! == 20 || $! == 40); problem($label, "open"); return undef }
  my @o = stat $fh;
  changed($label) unless @o && $o[0] == $st[0] && $o[1] == $st[1];
  unless (opendir $h, "/proc/self/fd/" . fileno($fh)) { problem($label, "readdir"); return undef }
  my @names = grep { $_ ne "." && $_ ne ".." } readdir $h;
  closedir $h;
  unless (chdir $fh) { problem($label, "fchdir"); return undef }
  return \@names;
}

# A directory whose st_nlink is 2 has no subdirectory (each one's ".." is a
# link to it; the kernel keeps the count on ext4, xfs and tmpfs, and where it
# does not, as on btrfs and overlayfs, st_nlink is 1): its names are not
# lstat'ed (a symlink's ACL attributes read as absent), which halves the
# calls on a tree of files.
my @rst = lstat $root;
stop(71, "P", pathOf($root, $shown), "lstat", $! + 0) unless @rst;
my $visited = 1;
my $names = ($rst[2] & 0170000) == 0040000 ? enter($root, $root, @rst) : undef;
@stack = ([$root, $names, @rst[0, 1], $rst[3] == 2, length $root]) if $names;
judge(".", undef, @rst) if $names;
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
  # A path only as long as a mount point can be one (mount points are never hashed at every level of a deep chain).
  my $length = $frame->[5] + ($frame->[5] == 1 ? 0 : 1) + length $name;
  next if $length <= $longestSkip && $skip{pathOf($name, $longestSkip)};
  $visited++;
  # The common case inline: a name in such a directory with no access ACL.
  if ($frame->[4]) { judge($name, $name) unless syscall($lget, $name, $access, $buf, 65536) < 0 && ($! == $enodata || $! == $enotsup || $! == 2); next }
  my @st = lstat $name;
  unless (@st) { $visited--; problem($name, "lstat") unless $! == 2; next }
  next if $st[0] != $rst[0];
  judge($name, $name, @st);
  # A directory at the depth limit is judged, and nothing below it is walked (as the mode walk does).
  next unless ($st[2] & 0170000) == 0040000 && @stack < $limit;
  my $children = enter($name, $name, @st);
  push @stack, [$name, $children, @st[0, 1], $st[3] == 2, $length] if $children;
}
print "V\0$visited\0$stripped\0";
