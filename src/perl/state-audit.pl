# The read-only modes of the /state walk (src/self-check/state.ts), appended
# to src/perl/state-acl.pl, whose walk calls them: the same entries, depth
# limit, mount points, fd-based entry of directories and bounded memory as
# fix, and nothing changed. Only subs here: the walk has run by the time
# anything after it would.
#   audit     every entry judged as fix would judge it: what fix would
#             change (its owner, its mode, an ACL) or refuse (a device node,
#             a hard link to another uid's file), and what it leaves alone
#             (a mount point, a directory at the depth limit). Each entry is
#             judged by its name in the directory the walk entered: lstat(2)
#             and lgetxattr(2), no open but a directory's, to enter it.
#   defaults  the audit of /workspace: every directory that carries a
#             default ACL (A records, all of them).
# The audit's records, at most KEEP of each kind in each zone of the
# layout (the release root and what lies below it; the rest), so that the
# output stays bounded however wrong the tree is; T says how many there were:
#   A path access default   an entry with an ACL (as in fix)
#   M path mode uid gid links want why
#                           an entry fix would change or refuse: its st_mode,
#                           owner and link count; the mode fix would give it
#                           (empty: a symlink's, never changed, or an entry
#                           fix refuses); why: empty, device, link (a hard
#                           link to another uid's file) or mount
#   S path deep             a directory at the depth limit
#   T M-private M-release A-private A-release S-private S-release umask
#                           the counts (before V); umask: entries of the
#                           private rule, of the service's owner, that differ
#                           from it only by group bits (what the service's
#                           umask 0007 leaves on what it made since the start)
our (%count, $umask);

# One record of `tag` about the entry at `label` in `zone`, if fewer than KEEP came before it.
sub found {
  my ($tag, $zone, $label, @fields) = @_;
  print join("\0", $tag, pathOf($label, $shown), @fields), "\0" if ++$count{$tag}[$zone == 1 || $zone == 2 ? 1 : 0] <= $keep;
}

# One entry (lstat'ed as @st) by its name in the working directory, `depth`
# levels below ROOT.
sub judge {
  my ($name, $label, $zone, $depth, @st) = @_;
  my ($type, $m) = ($st[2] & 0170000, $st[2] & 07777);
  my $a = $dirsOnly || $type == $LINK ? "" : attribute($lget, $name, $access, $label) // "";
  my $d = $type == $DIR ? attribute($lget, $name, $default, $label) // "" : "";
  if ($dirsOnly) { print "A\0", pathOf($label, $shown), "\0\0$d\0" if length $d; return }
  found("A", $zone, $label, $a, $d) if length($a) || length($d);
  return found("M", $zone, $label, @st[2, 4, 5, 3], "", "device") if $type == 0020000 || $type == 0060000;
  return found("M", $zone, $label, @st[2, 4, 5, 3], "", "link") if $type != $DIR && $st[3] > 1 && $st[4] != $uid;
  my $want = $type == $LINK ? $m : wanted($zone, $m, $type == $DIR, $depth);
  my $owned = $st[4] == $uid && $st[5] == $gid;
  return if $owned && $m == $want;
  return $umask++ if $owned && private($zone, $type == $DIR, $depth) && ($m & ~070) == $want;
  found("M", $zone, $label, @st[2, 4, 5, 3], $type == $LINK ? "" : $want, "");
}

# An entry fix leaves alone: a mount point (the start never reaches what is
# mounted there), or a directory at the depth limit (judged already).
sub left {
  my ($name, $why, $zone) = @_;
  return found("S", $zone, $name, "deep") if $why eq "deep";
  my @st = lstat $name;
  return problem($name, "lstat") unless @st;
  found("M", $zone, $name, @st[2, 4, 5, 3], "", "mount");
}

sub tally { print join("\0", "T", (map { ($count{$_}[0] // 0, $count{$_}[1] // 0) } qw(M A S)), $umask // 0), "\0" }
