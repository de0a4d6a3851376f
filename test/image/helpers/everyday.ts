/*
 * The verdict on the everyday battery (test/fixtures/image/everyday.mjs):
 * an action that works as the agent's uid alone must work through the shim,
 * unless it is listed below as a denial the boundary needs, with the reason.
 * This list is the one place that says which everyday work the confinement
 * may take away.
 *
 * Listing an action here is a design decision, not a way to make the test
 * pass: each reason names the row of the threat model the denial holds.
 * `ls /`, globs and `find /` on the root, `strace` of the job's own
 * children and `mktemp -p /var/tmp` are deliberately not listed: the
 * confinement must let them work (the Landlock domain's read-dir right on
 * `/`, ptrace within the job's own domain, /var/tmp writable as /tmp is).
 */
import { REPO_MOUNT } from "./engine.ts";

export const EVERYDAY = `${REPO_MOUNT}/test/fixtures/image/everyday.mjs`;

export const NEEDED_DENIALS: Readonly<Record<string, string>> = {
  "proc-comm":
    "Landlock gives agent work no write under /proc, the rule that keeps it from lowering its oom_score_adj (the OOM killer's pick); " +
    "a Landlock rule names existing inodes, and /proc/<pid>/comm of a process not yet started has none to name",
  "renice-child":
    "seccomp sees only a system call's arguments: setpriority and prlimit64 naming a pid other than 0 cannot be told apart from one job " +
    "renicing or limiting another (one job starving another), so naming any pid is refused; `nice` and `ulimit` on itself keep working",
};

interface Run {
  exitCode: number | null;
  stderr: string;
}

export interface EverydayResult {
  id: string;
  what: string;
  agent: Run;
  control: Run;
}

export interface EverydayVerdict {
  /** Actions that work as the agent's uid alone: the ones the battery can judge. */
  meaningful: number;
  /** Those that fail through the shim and are not listed: each with the shim's error. */
  broken: string[];
  /** One line per action: id, through the shim, as the uid alone, and why when it is a listed denial. */
  table: string[];
}

const outcome = (run: Run): string => (run.exitCode === 0 ? "works" : `fails (${run.exitCode})`);

export function judgeEveryday(results: readonly EverydayResult[]): EverydayVerdict {
  const table = [`${"action".padEnd(24)} ${"through the shim".padEnd(17)} ${"uid alone".padEnd(11)} note`];
  const broken: string[] = [];
  let meaningful = 0;
  for (const r of results) {
    const agentOk = r.agent.exitCode === 0;
    const controlOk = r.control.exitCode === 0;
    let note = "";
    if (controlOk) meaningful++;
    if (controlOk && !agentOk) {
      if (NEEDED_DENIALS[r.id] !== undefined) {
        note = "denial the boundary needs";
      } else {
        note = "BROKEN";
        broken.push(`${r.id} (${r.what}): ${r.agent.stderr.split("\n").slice(0, 2).join(" | ") || `exit ${r.agent.exitCode}`}`);
      }
    } else if (!controlOk && !agentOk) {
      note = "fails as the uid alone too: not judged";
    } else if (!controlOk && agentOk) {
      note = "works only through the shim";
    }
    table.push(`${r.id.padEnd(24)} ${outcome(r.agent).padEnd(17)} ${outcome(r.control).padEnd(11)} ${note}`);
  }
  return { meaningful, broken, table };
}
