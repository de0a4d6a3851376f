/*
 * /proc/self/mountinfo (proc(5)): which filesystems are mounted where, with
 * which options. Pure parsing; the audit reads the file once, and the
 * entrypoint's walk (entrypoint/tree-walk.ts) to find the mount points below
 * /state and /workspace.
 *
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *   (1)(2)(3)   (4)   (5)      (6)       (7)   (8) (9)     (10)        (11)
 */

export interface Mount {
  /** Mount point, unescaped. */
  point: string;
  /** Per-mount options (field 6): ro/rw, nosuid, nodev, noexec, ... */
  options: string[];
  fstype: string;
  source: string;
}

/** The kernel escapes space, tab, newline and backslash in paths as \ooo. */
function unescape(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_, digits: string) => String.fromCharCode(Number.parseInt(digits, 8)));
}

export function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const dash = line.indexOf(" - ");
    if (dash < 0) continue;
    const left = line.slice(0, dash).split(" ");
    const right = line.slice(dash + 3).split(" ");
    if (left.length < 6 || right.length < 2) continue;
    mounts.push({ point: unescape(left[4]!), options: left[5]!.split(","), fstype: right[0]!, source: unescape(right[1]!) });
  }
  return mounts;
}
