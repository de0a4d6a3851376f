/*
 * Kernel settings that change the threat model of ADR 0272. They are the
 * host's, not the container's, and the design must hold with each of them
 * off; they are reported with what they mean here. A setting that weakens
 * the model is a warning, never a failure. Pure.
 */
import { pass, type Verdict, warn } from "./check.ts";
import type { Readable } from "./fact-types.ts";

export interface KernelSetting {
  id: string;
  path: string;
  /** The value (or its absence) that keeps the threat model as stated. */
  judge: (value: string | undefined) => { ok: boolean; meaning: string };
  fix: string;
}

export const KERNEL_SETTINGS: readonly KernelSetting[] = [
  {
    id: "kernel.legacy-tiocsti",
    path: "/proc/sys/dev/tty/legacy_tiocsti",
    judge: (value) =>
      value === "0"
        ? { ok: true, meaning: "TIOCSTI is refused to unprivileged processes: agent work cannot push input into any terminal" }
        : {
            ok: false,
            meaning:
              value === undefined
                ? "no such setting (Linux before 6.2): TIOCSTI always works on a process's controlling terminal; the shim starts agent work in a new session without one, so it cannot reach the service's terminal"
                : "TIOCSTI works on a process's controlling terminal; the shim starts agent work in a new session without one, so it cannot reach the service's terminal, but a terminal it is handed would be injectable",
          },
    fix: "on the host: sysctl -w dev.tty.legacy_tiocsti=0",
  },
  {
    id: "kernel.protected-hardlinks",
    path: "/proc/sys/fs/protected_hardlinks",
    judge: (value) =>
      value === "1"
        ? { ok: true, meaning: "a user cannot hard-link a file it does not own: the agent cannot plant links to service files in /workspace" }
        : { ok: false, meaning: "any user can hard-link files it can find: the agent could plant links to service files in /workspace; the entrypoint leaves such links alone, and /state is not searchable by the agent" },
    fix: "on the host: sysctl -w fs.protected_hardlinks=1",
  },
  {
    id: "kernel.protected-symlinks",
    path: "/proc/sys/fs/protected_symlinks",
    judge: (value) =>
      value === "1"
        ? { ok: true, meaning: "symlinks in sticky world-writable directories (/tmp) are followed only for their owner: the agent cannot redirect a service write through one" }
        : { ok: false, meaning: "symlinks in /tmp are followed for everyone: a service that writes a predictable path in /tmp can be redirected by the agent; the entrypoint and this audit never follow symlinks" },
    fix: "on the host: sysctl -w fs.protected_symlinks=1",
  },
  /*
   * O_CREAT without O_EXCL (what fs.writeFileSync and most libraries do)
   * opens a file that is already there. In a sticky world-writable directory
   * such as /tmp the agent can create the name first, mode 0666, and receive
   * what the service writes there, whatever mode the service asked for (it
   * only applies to a new file). protected_regular (Linux 4.19) makes the
   * kernel refuse that open with EACCES when the file belongs to neither the
   * opener nor the directory's owner; 1 covers world-writable sticky
   * directories, 2 group-writable ones too. The setting is host-wide: a
   * container cannot change it (/proc/sys is read-only there).
   */
  {
    id: "kernel.protected-regular",
    path: "/proc/sys/fs/protected_regular",
    judge: (value) => judgeProtectedCreate(value, "a regular file", "receive what the service writes to a predictable name in /tmp (with O_CREAT but not O_EXCL, the mode the service asks for is ignored: the file is the agent's)"),
    fix: protectedCreateFix("protected_regular"),
  },
  {
    id: "kernel.protected-fifos",
    path: "/proc/sys/fs/protected_fifos",
    judge: (value) => judgeProtectedCreate(value, "a FIFO", "read what the service writes to a predictable name in /tmp, or make the service's open block until it reads"),
    fix: protectedCreateFix("protected_fifos"),
  },
];

function protectedCreateFix(name: string): string {
  return `on the host: sysctl -w fs.${name}=2 (persist it in /etc/sysctl.d); a container cannot set it. Until then the service must create files in /tmp with O_EXCL (fs.mkdtempSync, flag "wx") or keep its temporary files in a directory only it can write`;
}

/** protected_regular and protected_fifos: 0 off, 1 world-writable sticky directories, 2 group-writable sticky ones too. */
function judgeProtectedCreate(value: string | undefined, what: string, risk: string): { ok: boolean; meaning: string } {
  const refused = `an O_CREAT open of ${what} someone else owns in a sticky world-writable directory (/tmp) is refused`;
  if (value === "2") return { ok: true, meaning: `${refused}, in group-writable sticky directories too: the agent cannot plant ${what} for the service to write into` };
  if (value === "1") return { ok: true, meaning: `${refused} (2 also covers group-writable sticky directories; /tmp is world-writable, so 1 is enough here): the agent cannot plant ${what} for the service to write into` };
  const setting = value === undefined ? "no such setting (Linux before 4.19)" : value === "0" ? "off" : `unexpected value ${value}`;
  return { ok: false, meaning: `${setting}: the agent can create ${what} in /tmp under a name the service will open and ${risk}` };
}

export function judgeKernelSetting(setting: KernelSetting, read: Readable<string>): Verdict {
  const value = read.ok ? read.value.trim() : undefined;
  if (!read.ok && !read.error.endsWith("ENOENT")) return warn(`could not read ${setting.path}: ${read.error}`, { path: setting.path, error: read.error }, setting.fix);
  const { ok, meaning } = setting.judge(value);
  const found = { path: setting.path, value: value ?? null, meaning };
  const summary = `${value === undefined ? "absent" : value}: ${meaning}`;
  return ok ? pass(summary, found) : warn(summary, found, setting.fix);
}
