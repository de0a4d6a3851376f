# The image scan of src/self-check/image-scan.ts, passed to perl -e.
# Arguments: the lgetxattr(2) number, ENODATA, EOPNOTSUPP, the root ("/").
# Standard input: the directories not to enter, as NUL-terminated bytes
# (mount points need not be UTF-8, and argv would be). Output, NUL-terminated fields:
#   S path mode uid gid     a regular file with a set-user-ID or set-group-ID bit
#   C path hex              an executable's security.capability
#   E path errno            an executable whose attribute could not be read
#   P path syscall errno    an entry the walk could not read
#   V visited executables   the last record: the walk ran to its end
# ENOENT is not reported: the entry was removed since readdir listed it.
my ($nr, $enodata, $enotsup, $root) = @ARGV;
my %skip;
{ local $/ = "\0"; binmode STDIN; while (my $x = <STDIN>) { chomp $x; $skip{$x} = 1 if length $x } }
my $attribute = "security.capability"; # a variable: syscall() hands out writable pointers
binmode STDOUT;
my ($visited, $executables) = (0, 0);
my @stack;
if (lstat $root) { $visited = 1; @stack = ($root) } else { print "P\0$root\0lstat\0", $! + 0, "\0" }
while (@stack) {
  my $d = pop @stack;
  my $h;
  unless (opendir $h, $d) { print "P\0$d\0readdir\0", $! + 0, "\0" unless $! == 2; next }
  my @names = readdir $h;
  closedir $h;
  for my $name (@names) {
    next if $name eq "." || $name eq "..";
    my $p = $d eq "/" ? "/$name" : "$d/$name";
    my @st = lstat $p;
    unless (@st) { print "P\0$p\0lstat\0", $! + 0, "\0" unless $! == 2; next }
    $visited++;
    my $mode = $st[2];
    my $type = $mode & 0170000;
    if ($type == 0040000) { push @stack, $p unless $skip{$p}; next }
    next unless $type == 0100000;
    print "S\0$p\0$mode\0$st[4]\0$st[5]\0" if $mode & 06000;
    next unless $mode & 0111;
    $executables++;
    my $buf = "\0" x 64;
    my $n = syscall($nr + 0, $p, $attribute, $buf, 64);
    if ($n > 0) { print "C\0$p\0", unpack("H*", substr($buf, 0, $n)), "\0" }
    elsif ($n < 0 && $! != $enodata && $! != $enotsup && $! != 2) { print "E\0$p\0", $! + 0, "\0" }
  }
}
print "V\0$visited\0$executables\0";
