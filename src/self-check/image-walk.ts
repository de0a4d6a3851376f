/*
 * One read-only walk over the image's filesystems: from / across every
 * mount, but not into the kernel's pseudo filesystems, /proc, /sys, or the
 * volumes (/state and /workspace have their own checks). It collects every
 * regular file with a set-user-ID or set-group-ID bit, and every regular
 * file someone can execute (the candidates for file capabilities: a file
 * nobody can execute cannot hand out capabilities, and only its owner could
 * make it executable).
 */
import { STATE_DIR, WORKSPACE_DIR } from "../constants.ts";
import { octal } from "./check.ts";
import { excludedDirectories, hasOption, type Mount, mountOf } from "./mounts.ts";
import { displayPath, type FsPath, walkReadOnly, type WalkProblem } from "./walk.ts";

export interface PrivilegedFile {
  path: string;
  mode: string;
  uid: number;
  gid: number;
  bits: Array<"setuid" | "setgid">;
  mount: string | null;
  /** The mount is nosuid: the bit has no effect while it stays so. */
  nosuid: boolean;
}

export interface ImageWalk {
  visited: number;
  privileged: PrivilegedFile[];
  executables: FsPath[];
  problems: WalkProblem[];
  excluded: string[];
}

export const IMAGE_WALK_SKIP: readonly string[] = ["/proc", "/sys", STATE_DIR, WORKSPACE_DIR];

export function walkImage(mounts: readonly Mount[], root = "/"): ImageWalk {
  const excluded = excludedDirectories(mounts, IMAGE_WALK_SKIP);
  const result: ImageWalk = { visited: 0, privileged: [], executables: [], problems: [], excluded: [...excluded].sort() };
  result.visited = walkReadOnly<null>(
    root,
    null,
    (entry) => {
      if (entry.kind === "directory") return null;
      if (entry.kind !== "file") return undefined;
      const mode = entry.st.mode;
      if (mode & 0o6000) {
        const path = displayPath(entry.fsPath);
        const mount = mountOf(mounts, path);
        result.privileged.push({
          path,
          mode: octal(mode),
          uid: entry.st.uid,
          gid: entry.st.gid,
          bits: [...(mode & 0o4000 ? ["setuid" as const] : []), ...(mode & 0o2000 ? ["setgid" as const] : [])],
          mount: mount?.point ?? null,
          nosuid: hasOption(mount, "nosuid"),
        });
      }
      if (mode & 0o111) result.executables.push(entry.fsPath);
      return undefined;
    },
    result.problems,
    { crossDevices: true, excluded },
  );
  return result;
}
