/*
 * The image: this executable and the tools it execs, every set-user-ID or
 * set-group-ID file and every file capability on the image's filesystems,
 * and how / and the volumes are mounted. Pure: the files were read by
 * facts.ts (the exec rules' verdict on each program) and image-scan.ts.
 */
import { STATE_DIR, TOOLS, WORKSPACE_DIR } from "../constants.ts";
import { type AssetHashes, ENTRYPOINT_ASSET, PRIVATE_JOB_ASSET, SELF_CHECK_ASSET } from "../embedded-bundle.ts";
import type { Mount } from "../os/mountinfo.ts";
import { bounded, fail, pass, plural, problemLines, type Verdict, warn } from "./check.ts";
import type { BuiltInHash, Mode, Program } from "./fact-types.ts";
import { hasOption, type ImageScan, mountOf, type PrivilegedFile } from "./image-scan.ts";

const REBUILD_FIX = "rebuild the image from this project's Dockerfile: it installs the executable root-owned, mode 0755, under both names";

/** The running executable and the two installed names: one root-owned file, writable by root only, not set-ID. */
export function judgeExecutable(running: string, installed: readonly string[], programs: ReadonlyMap<string, Program>): Verdict {
  const paths = [...new Set([running, ...installed])];
  const problems = paths.flatMap((path) => programs.get(path)?.problems ?? [`${path} was not read`]);
  const files = paths.map((path) => programs.get(path)!.file);
  const found = { running, installed, files };
  const [entry, shim] = installed.map((path) => files.find((f) => f.path === path));
  if (entry && shim && "ino" in entry && "ino" in shim && (entry.ino !== shim.ino || entry.dev !== shim.dev)) {
    problems.push(`${installed[1]} is not the same file as ${installed[0]}`);
  }
  if (problems.length > 0) return fail(problems.join("; "), found, REBUILD_FIX);
  if (!installed.includes(running)) return warn(`this audit runs ${running}, not the installed ${installed[0]}; both are root-owned and writable by root only`, found, `run ${installed[0]} --self-check`);
  return pass(`${installed.join(" and ")}: one root-owned file, writable by root only, in root-owned directories, not set-user-ID`, found);
}

/**
 * The SHA-256 of the embedded bundle (the main script) against the one the
 * build recorded, and the entrypoint's, the audit's and the private-job shim's SEA assets against
 * the hashes the main script pins for them: only then does the bundle's hash
 * cover them.
 */
export function judgeBundle(bundle: { executable: string; bundle?: string | undefined; entrypoint?: AssetHashes | undefined; audit?: AssetHashes | undefined; privateJob?: AssetHashes | undefined; expected: BuiltInHash }): Verdict {
  const { executable, bundle: actual, entrypoint, audit, privateJob, expected } = bundle;
  if (actual === undefined || entrypoint === undefined || audit === undefined || privateJob === undefined) return fail(`${executable} holds no SEA bundle: this is not the single executable`, { executable }, REBUILD_FIX);
  const found: Record<string, unknown> = { executable, sha256: actual, entrypoint, audit, privateJob };
  for (const [asset, what, hashes] of [[ENTRYPOINT_ASSET, "the entrypoint's code", entrypoint], [SELF_CHECK_ASSET, "the audit's code", audit], [PRIVATE_JOB_ASSET, "the private-job shim's code", privateJob]] as const) {
    if (hashes.pinned === undefined) return fail(`the embedded bundle (sha256 ${actual}) pins no hash for ${what} (SEA asset ${asset})`, found, REBUILD_FIX);
    if (hashes.actual !== hashes.pinned) {
      return fail(`${what} (SEA asset ${asset}) has sha256 ${hashes.actual ?? "(unreadable)"}, but the embedded bundle pins ${hashes.pinned}`, found, REBUILD_FIX);
    }
  }
  if ("error" in expected) {
    found.expected = null;
    found.error = expected.error;
    return warn(`embedded bundle sha256 ${actual}; nothing built in to compare it with: ${expected.error}`, found, "build with the bundle hash embedded (SEA asset bundle.sha256) or install dist/SHA256SUMS beside the executable");
  }
  found.expected = expected.value;
  found.expectedFrom = expected.from;
  if (expected.value !== actual) return fail(`embedded bundle sha256 ${actual}, but ${expected.from} says ${expected.value}`, found, REBUILD_FIX);
  return pass(`embedded bundle sha256 ${actual} equals ${expected.from}; the entrypoint's, the audit's and the private-job shim's assets match their pins`, found);
}

/** The tools the stages exec (tini optional). */
export function judgeTools(programs: ReadonlyMap<string, Program>): Verdict {
  const found: Array<Record<string, unknown>> = [];
  const problems: string[] = [];
  for (const [name, path] of Object.entries(TOOLS)) {
    const program = programs.get(path)!;
    if (!program.present) {
      found.push({ name, path, present: false, optional: name === "tini" });
      if (name !== "tini") problems.push(`${path} is missing`);
      continue;
    }
    found.push({ name, path, present: true, problems: program.problems });
    problems.push(...program.problems);
  }
  if (problems.length > 0) return fail(problems.join("; "), { tools: found }, "reinstall them from the distribution (apt-get install --reinstall util-linux perl-base tini) and keep /usr root-owned and writable by root only");
  return pass(`${found.filter((t) => t.present).map((t) => t.path).join(", ")}: root-owned, writable by root only, in root-owned directories, not set-user-ID${found.some((t) => !t.present) ? " (tini is not installed: optional)" : ""}`, { tools: found });
}

/**
 * A set-ID file that only hands out ids the agent already has (set-user-ID
 * to the agent, set-group-ID to one of its groups) grants nothing: agent
 * work can make such files wherever it can write (/tmp), so they warn, and
 * do not fail the audit.
 */
export function grantsOnlyAgent(file: PrivilegedFile, agent: { uid: number; groups: readonly number[] } | undefined): boolean {
  if (!agent) return false;
  return (!file.bits.includes("setuid") || file.uid === agent.uid) && (!file.bits.includes("setgid") || agent.groups.includes(file.gid));
}

function listFiles(files: readonly PrivilegedFile[]): string {
  const list = files.slice(0, 5).map((f) => `${f.path} (${f.mode} ${f.uid}:${f.gid}${f.nosuid ? ", on a nosuid mount" : ""})`).join(", ");
  return files.length > 5 ? `${list} and ${files.length - 5} more` : list;
}

export function judgeSetuid(scan: ImageScan, agent?: { uid: number; groups: readonly number[] }): Verdict {
  const unreadable = problemLines(scan.problems);
  const agentOnly = scan.privileged.filter((f) => grantsOnlyAgent(f, agent));
  const privileged = scan.privileged.filter((f) => !grantsOnlyAgent(f, agent));
  const found = { visited: scan.visited, files: bounded(privileged), agentOnly: bounded(agentOnly), notEntered: scan.excluded, unreadable: bounded(unreadable) };
  if (privileged.length > 0) {
    return fail(`${plural(privileged.length, "set-user-ID or set-group-ID file")}: ${listFiles(privileged)}`,
      found,
      "strip them in the image (find / -xdev -type f -perm /6000 -exec chmod ug-s {} +) and mount added volumes nosuid; NoNewPrivs blocks what remains",
    );
  }
  if (agentOnly.length > 0) {
    return warn(`${plural(agentOnly.length, "set-user-ID or set-group-ID file")} that grant only the agent's own ids (made by agent work): ${listFiles(agentOnly)}`, found, "remove them (chmod ug-s FILE); they grant nothing, and NoNewPrivs makes them inert");
  }
  if (unreadable.length > 0) {
    return warn(`no set-user-ID or set-group-ID file among ${scan.visited} entries, but ${unreadable.length} could not be read: ${unreadable.slice(0, 3).join("; ")}`, found, "run the audit as root (docker exec CONTAINER clankie-separate --self-check) to read every directory");
  }
  return pass(`no set-user-ID or set-group-ID file among ${scan.visited} entries of the image's filesystems`, found);
}

export function judgeFileCapabilities(scan: ImageScan): Verdict {
  const unreadable = [...problemLines(scan.problems), ...scan.unreadableXattrs.map((u) => `lgetxattr ${u.path}: errno ${u.errno}`)];
  const found = { candidates: scan.executables, files: bounded(scan.capabilities), unreadable: bounded(unreadable) };
  const files = scan.capabilities;
  if (files.length > 0) {
    const list = files.slice(0, 5).map((f) => `${f.path} (${f.permitted.join(",").toLowerCase() || "none"}${f.effective ? "=ep" : "=p"})`).join(", ");
    return fail(`${plural(files.length, "file")} with capabilities: ${list}`, found, "remove them in the image (setcap -r FILE); NoNewPrivs keeps them from taking effect meanwhile");
  }
  if (unreadable.length > 0) {
    return warn(`no file capability among ${scan.executables} executables, but ${unreadable.length} entries could not be read: ${unreadable.slice(0, 3).join("; ")}`, found, "run the audit as root (docker exec CONTAINER clankie-separate --self-check) to read every directory");
  }
  return pass(`no file capability on any of ${scan.executables} executables`, found);
}

/*
 * The spawner keeps CAP_SETUID and CAP_SETGID for the body's life (the
 * service holds none), so code that takes it over can become uid 0
 * (setresuid(0)). That process has no
 * DAC_OVERRIDE, CHOWN or FOWNER, but it owns every root-owned file and
 * directory by uid: on a writable root it can rewrite /etc/passwd, the tools
 * the shim runs, and this executable, which runs as root with the launch's
 * six capabilities at the next start of the same container (docker restart
 * keeps the writable layer). A read-only root leaves it nothing to change but
 * the volumes and /tmp. Measured in docs/security.md, "The service's
 * remaining power" (of ADR 0272's service, which held the two). A
 * recommendation, never a failure.
 */
export function judgeReadOnlyRoot(mounts: readonly Mount[], mode: Mode): Verdict {
  const root = mountOf(mounts, "/");
  const fix = "run the container with --read-only --tmpfs /tmp (Kubernetes: readOnlyRootFilesystem: true); docs/launch.md";
  if (!root) return warn("no mount at / in /proc/self/mountinfo: cannot tell whether the root filesystem is read-only", { mountPoint: null }, fix);
  const found = { mountPoint: root.point, options: root.options, fstype: root.fstype };
  if (hasOption(root, "ro")) return pass("/ is mounted read-only: uid 0 without DAC_OVERRIDE, which the spawner's SETUID reaches, has no root-owned file to change outside the volumes and /tmp", found);
  const why =
    mode === "single-uid"
      ? "in the separated launch the spawner holds SETUID and SETGID, and code that takes it over can become uid 0, which owns every root-owned file there"
      : "the spawner's SETUID and SETGID let code that takes it over become uid 0, which, without DAC_OVERRIDE, still owns every root-owned file and directory there: /etc/passwd, the tools the spawner runs, and this executable, which runs as root at the next start of this container";
  return warn(`/ is writable (${root.fstype}, rw): ${why}`, found, fix);
}

/** Recommendations, never failures: volumes that cannot carry set-user-ID programs or devices (the root: image.read-only-root). */
export function judgeMounts(mounts: readonly Mount[]): Verdict {
  const describe = (path: string) => {
    const mount = mountOf(mounts, path);
    return { path, mountPoint: mount?.point ?? null, separate: mount?.point === path, options: mount?.options ?? [], fstype: mount?.fstype ?? null };
  };
  const found = { root: describe("/"), state: describe(STATE_DIR), workspace: describe(WORKSPACE_DIR) };
  const advice: string[] = [];
  for (const volume of [found.state, found.workspace]) {
    const missing = ["nosuid", "nodev"].filter((option) => !volume.options.includes(option));
    if (!volume.separate) advice.push(`${volume.path} is not a mount of its own`);
    else if (missing.length > 0) advice.push(`${volume.path} is mounted without ${missing.join(", ")}`);
  }
  if (advice.length === 0) return pass("/state and /workspace are mounts of their own, nosuid,nodev", found);
  return warn(`recommended: ${advice.join("; ")}`, found, "mount /state and /workspace as volumes of their own with the options nosuid,nodev");
}
