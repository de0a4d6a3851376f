/*
 * The Docker engine, driven through its CLI: the image build (a local
 * stand-in base, the single executable handed in from the host) and one
 * session that names, and at the end removes, every container, volume and
 * image it created. The engine is left as it was found: an image that existed
 * before the run (a cached base) is kept, everything the run made is removed.
 * Other containers and builds may share the engine: the session labels what
 * it makes (clankie.e2e=RUN), and counts and removes only that.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmdirSync } from "node:fs";
import { join } from "node:path";
import { ADR_LAUNCH_FLAGS } from "../../../src/constants.ts";
import { DIST, REPO } from "../../helpers/paths.ts";

/** Where the repository is mounted (read-only) in every container: fixtures, dist/lib, node_modules/execa. */
export const REPO_MOUNT = "/opt/clankie";
export const STAND_IN = `${REPO_MOUNT}/test/fixtures/stand-in-service.mjs`;
export const BODY_SERVICE = `${REPO_MOUNT}/test/fixtures/image/body-service.mjs`;

/** Today's launch: the image's USER node, every capability dropped, no published port. */
export const TODAY_FLAGS: readonly string[] = ["--cap-drop", "ALL"];

/** The launcher command of ADR 0272. */
export const ADR_FLAGS: readonly string[] = ADR_LAUNCH_FLAGS;

/**
 * The launch docs/launch.md recommends: the ADR's flags, a read-only root
 * filesystem, a private /tmp (exec: the agent runs what it builds there;
 * nosuid, nodev) and the agent's home on a tmpfs of its own. The volumes come
 * from Session.hardenedVolume.
 */
export const RECOMMENDED_FLAGS: readonly string[] = [
  ...ADR_FLAGS,
  "--read-only",
  "--tmpfs", "/tmp:rw,exec,nosuid,nodev,mode=1777",
  // The agent's home on a filesystem of its own: filling it cannot fill /state.
  "--tmpfs", "/state/agent:rw,exec,nosuid,nodev,size=64m",
  // Private jobs' leases: root's /run, writable under --read-only, gone at every restart.
  "--tmpfs", "/run:rw,exec,nosuid,nodev,mode=755,size=64m",
];

/** The ADR's flags without no-new-privileges: the entrypoint must refuse. */
export const ROOT_WITHOUT_NNP_FLAGS: readonly string[] = ADR_FLAGS.filter((flag, i, all) => flag !== "--security-opt" && all[i - 1] !== "--security-opt");

export const DEFAULT_BASE = "clankie-base:bookworm-node24";

export interface DockerOptions {
  timeoutMs?: number;
  input?: string;
  env?: Record<string, string>;
}

export function docker(args: readonly string[], options: DockerOptions = {}): SpawnSyncReturns<string> {
  return spawnSync("docker", [...args], {
    encoding: "utf8",
    timeout: options.timeoutMs ?? 120_000,
    input: options.input,
    env: { ...process.env, ...(options.env ?? {}) },
    maxBuffer: 64 << 20,
  });
}

function describe(args: readonly string[], result: SpawnSyncReturns<string>): string {
  const how = result.error ? String(result.error) : result.signal ? `signal ${result.signal}` : `exit ${result.status}`;
  return `docker ${args.join(" ")}: ${how}\n${(result.stderr ?? "").trim()}`;
}

/** Runs docker and returns its stdout, or throws with its stderr. */
export function dockerOk(args: readonly string[], options: DockerOptions = {}): string {
  const result = docker(args, options);
  if (result.status !== 0) throw new Error(describe(args, result));
  return result.stdout;
}

export function imageExists(name: string): boolean {
  return docker(["image", "inspect", name], { timeoutMs: 30_000 }).status === 0;
}

/** The ids (sha256:...) of every image, intermediate ones included, that carries a label (KEY=VALUE). */
export function labelledImages(label: string): string[] {
  return dockerOk(["images", "-aq", "--no-trunc", "--filter", `label=${label}`]).split("\n").filter(Boolean);
}

export function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Polls `probe` until it returns a value, or throws after `timeoutMs`. */
export function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 60_000, everyMs = 100): T {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    sleep(everyMs);
  }
}

export interface Timings {
  base: { image: string; seconds: number; built: boolean };
  build: { seconds: number; bytes: number };
}

export interface ToolsTimings {
  /** The tools base (scripts/image/make-tools.sh): built by this run, or cached. */
  base: { image: string; seconds: number; built: boolean; bytes: number };
  build: { seconds: number; bytes: number };
}

export const DEFAULT_TOOLS_BASE = "clankie-tools-base:bookworm";

/**
 * The image ids (12 hex digits) a classic-builder run made: the result of
 * each step it ran. Not a step's "Using cache" result, which another build
 * made and may still hold, nor a FROM step's image (the base, the debs), which
 * the build only names. The classic builder's --label marks the final image
 * only, so the build's own output is what tells the rest.
 */
export function createdIds(stdout: string): string[] {
  return stdout
    .split(/^Step \d+\/\d+ : /m)
    .slice(1)
    .filter((step) => !/^FROM\s/i.test(step) && !/^ ---> Using cache$/m.test(step))
    .flatMap((step) => [...step.matchAll(/^ ---> ([0-9a-f]{12})$/gm)].slice(-1).map((m) => m[1]!));
}

export interface RunOptions {
  name: string;
  flags: readonly string[];
  /** Volumes for /state and /workspace (none: the image's own directories). */
  state?: string;
  workspace?: string;
  command: readonly string[];
  /** Extra docker run flags (limits, -t, -e). */
  extra?: readonly string[];
  /** Another image than the session's (the tools image). */
  image?: string;
  /**
   * Start the tests' root-side control runner (test/fixtures/control-runner.pl)
   * beside the launch, as the sandbox's withControlRunner does: the controls
   * that show an attack works for the agent's uid alone need setpriv as root,
   * which the capless service cannot run. The entrypoint stays
   * clankie-separate, exec'd as PID 1 by the shell that starts the runner.
   */
  controls?: boolean;
}

/** The launch of the image's entrypoint with the control runner started first, as root (RunOptions.controls). */
export const CONTROL_RUNNER_LAUNCH = ["--entrypoint", "/bin/sh"];
export function withControlRunnerCommand(command: readonly string[]): string[] {
  return ["-c", `/usr/bin/perl ${REPO_MOUNT}/test/fixtures/control-runner.pl serve /tmp/clankie-test-control.sock & exec /usr/local/sbin/clankie-separate "$@"`, "sh", ...command];
}

export class Session {
  readonly runId = `${process.pid}-${Date.now().toString(36)}`;
  readonly image = `clankie-separate:e2e-${this.runId}`;
  /** The project's Dockerfile built on the tools base (test/image/tools.Dockerfile), once built. */
  readonly toolsImage = `clankie-separate:e2e-tools-${this.runId}`;
  /** The label on every container, volume and final image this run makes. */
  readonly label = `clankie.e2e=${this.runId}`;
  /**
   * Every image this run's builds made (createdIds), in the order made: the
   * cleanup removes these and no other, so that images other builds left, or
   * make while this run goes on, are neither removed nor counted.
   */
  private readonly ownIds: string[] = [];
  /** Images of this run (a 12-digit id or a tag) that another container, image or tag holds, found by cleanup: theirs to remove. */
  heldByOthers: { image: string; why: string }[] = [];
  private toolsBuilt = false;
  private toolsBaseToRemove: string | undefined;
  private readonly containers = new Set<string>();
  private readonly volumes = new Set<string>();
  /** Whether buildImage reached the engine (the cleanup has images to look for). */
  private engineReached = false;
  private baseToRemove: string | undefined;
  /** A host tmpfs mounted nosuid,nodev that holds the hardened volumes' directories. */
  private hostMount: string | undefined;
  private readonly volumeDirs = new Map<string, string>();
  timings: Timings | undefined;

  /** Checks the engine, builds (or reuses) the base, then builds the image from the host's single executable. */
  buildImage(): Timings {
    const info = docker(["info", "--format", "{{.ServerVersion}}"], { timeoutMs: 30_000 });
    if (info.status !== 0) {
      throw new Error(`the Docker engine is not reachable (${(info.stderr || String(info.error)).trim()}); .ci/run starts it with: dockerd --iptables=false --bridge=none`);
    }
    if (!existsSync(join(DIST, "clankie-separate"))) throw new Error("dist/clankie-separate is missing: run node build.mjs (npm test does)");
    this.engineReached = true;

    const baseImage = process.env.CLANKIE_E2E_BASE_IMAGE ?? DEFAULT_BASE;
    const baseExisted = imageExists(baseImage);
    const baseStarted = Date.now();
    if (!process.env.CLANKIE_E2E_BASE_IMAGE) {
      const made = spawnSync(join(REPO, "scripts/image/make-base.sh"), [baseImage], { encoding: "utf8", timeout: 600_000 });
      if (made.status !== 0) throw new Error(`make-base.sh failed: ${made.stderr}${made.stdout}`);
      process.stdout.write(`   ${made.stdout.trim()}\n`);
    } else if (!baseExisted) {
      throw new Error(`CLANKIE_E2E_BASE_IMAGE=${baseImage} does not exist in the engine`);
    }
    const baseSeconds = (Date.now() - baseStarted) / 1000;
    if (!baseExisted) this.baseToRemove = baseImage;

    // The classic builder: the engine here (20.10, no buildx) has no other,
    // and it takes --network host without an entitlement. host: the engine
    // runs with --bridge=none, and the final stage's apt-get needs the mirror.
    const started = Date.now();
    const build = ["build", "--network", "host", "--label", this.label, "--build-arg", `BASE_IMAGE=${baseImage}`, "--build-arg", `SEA=${process.env.CLANKIE_E2E_SEA ?? "prebuilt"}`, "-t", this.image, REPO];
    const result = docker(build, { timeoutMs: 900_000, env: { DOCKER_BUILDKIT: "0" } });
    this.ownIds.push(...createdIds(result.stdout));
    if (result.status !== 0) throw new Error(`${describe(build, result)}\n${result.stdout.slice(-4000)}`);
    if (!/^Step \d+\/\d+ : /m.test(result.stdout)) throw new Error(`no "Step N/M :" line in the output of ${describe(build, result)}: not the classic builder, whose output tells this run's images`);
    const seconds = (Date.now() - started) / 1000;
    const bytes = Number(dockerOk(["image", "inspect", "-f", "{{.Size}}", this.image]).trim());
    this.timings = { base: { image: baseImage, seconds: baseSeconds, built: !baseExisted }, build: { seconds, bytes } };
    return this.timings;
  }

  /**
   * The tools image: the project's Dockerfile, as buildImage builds it, on a
   * base with git, python3, strace, ripgrep and kin and the build toolchains
   * (pip, cargo, a JDK) installed: scripts/image/make-tools.sh builds that
   * base once per recipe (test/image/tools.Dockerfile), kept when it existed
   * before the run, like the base. Installing the toolchains is the slow part
   * (docs/benchmarks-image.md), so a run pays only for the project's layers.
   */
  buildToolsImage(): ToolsTimings {
    if (!this.timings) throw new Error("buildImage first");
    const toolsBase = process.env.CLANKIE_E2E_TOOLS_BASE ?? DEFAULT_TOOLS_BASE;
    const existed = imageExists(toolsBase);
    const baseStarted = Date.now();
    const made = spawnSync(join(REPO, "scripts/image/make-tools.sh"), [this.timings.base.image, toolsBase], { encoding: "utf8", timeout: 1_800_000 });
    if (made.status !== 0) throw new Error(`make-tools.sh failed: ${made.stderr}${made.stdout}`);
    process.stdout.write(`   ${made.stdout.trim()}\n`);
    if (!existed) this.toolsBaseToRemove = toolsBase;
    const baseSeconds = (Date.now() - baseStarted) / 1000;
    const baseBytes = Number(dockerOk(["image", "inspect", "-f", "{{.Size}}", toolsBase]).trim());

    // As buildImage: the classic builder, --network host for the final stage's apt-get.
    const started = Date.now();
    const build = ["build", "--network", "host", "--label", this.label, "--build-arg", `BASE_IMAGE=${toolsBase}`, "--build-arg", `SEA=${process.env.CLANKIE_E2E_SEA ?? "prebuilt"}`, "-t", this.toolsImage, REPO];
    this.toolsBuilt = true;
    const result = docker(build, { timeoutMs: 900_000, env: { DOCKER_BUILDKIT: "0" } });
    this.ownIds.push(...createdIds(result.stdout));
    if (result.status !== 0) throw new Error(`${describe(build, result)}\n${result.stdout.slice(-4000)}`);
    if (!/^Step \d+\/\d+ : /m.test(result.stdout)) throw new Error(`no "Step N/M :" line in the output of ${describe(build, result)}: not the classic builder, whose output tells this run's images`);
    const bytes = Number(dockerOk(["image", "inspect", "-f", "{{.Size}}", this.toolsImage]).trim());
    return { base: { image: toolsBase, seconds: baseSeconds, built: !existed, bytes: baseBytes }, build: { seconds: (Date.now() - started) / 1000, bytes } };
  }

  name(what: string): string {
    return `clankie-e2e-${this.runId}-${what}`;
  }

  volume(what: string): string {
    const name = this.name(what);
    dockerOk(["volume", "create", "--label", this.label, name]);
    this.volumes.add(name);
    return name;
  }

  /**
   * A volume as docs/launch.md recommends it: a directory on a host
   * filesystem mounted nosuid,nodev, bound into the container. A bind mount
   * keeps its source mount's flags; `--opt o=bind,nosuid,nodev` would not
   * apply them (mount(2) ignores those flags on a bind until a remount).
   * The directory starts as the image's /state and /workspace do: node's, 0755.
   */
  hardenedVolume(what: string, uid: number, gid: number): string {
    if (!this.hostMount) {
      const dir = mkdtempSync("/var/tmp/clankie-e2e-");
      const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "nosuid,nodev,mode=0755,size=512m", "tmpfs", dir], { encoding: "utf8" });
      if (mounted.status !== 0) throw new Error(`mount -t tmpfs ${dir}: ${mounted.stderr}`);
      this.hostMount = dir;
    }
    const dir = join(this.hostMount, what);
    mkdirSync(dir, { mode: 0o755 });
    chownSync(dir, uid, gid);
    const name = this.name(what);
    dockerOk(["volume", "create", "--label", this.label, "--opt", "type=none", "--opt", "o=bind", "--opt", `device=${dir}`, name]);
    this.volumes.add(name);
    this.volumeDirs.set(name, dir);
    return name;
  }

  /** The volume's directory on the host: read straight from the filesystem, not through the container. */
  volumePath(name: string): string {
    return this.volumeDirs.get(name) ?? dockerOk(["volume", "inspect", "-f", "{{.Mountpoint}}", name]).trim();
  }

  /** docker run argv (after "docker") for a launch of this image. */
  runArgs(options: RunOptions, mode: "-d" | "--rm"): string[] {
    const name = this.name(options.name);
    this.containers.add(name);
    return [
      "run", mode, "--name", name, "--label", this.label,
      "--network", "none", // loopback only: the engine has no bridge, and the API is loopback anyway
      ...options.flags,
      ...(options.extra ?? []),
      ...(options.state ? ["-v", `${options.state}:/state`] : []),
      ...(options.workspace ? ["-v", `${options.workspace}:/workspace`] : []),
      "-v", `${REPO}:${REPO_MOUNT}:ro`,
      ...(options.controls ? CONTROL_RUNNER_LAUNCH : []),
      options.image ?? this.image,
      ...(options.controls ? withControlRunnerCommand(options.command) : options.command),
    ];
  }

  /** Starts a container detached; returns its name. */
  start(options: RunOptions): string {
    dockerOk(this.runArgs(options, "-d"));
    return this.name(options.name);
  }

  /** Runs a container to completion and removes it. */
  run(options: RunOptions & DockerOptions): SpawnSyncReturns<string> {
    return docker(this.runArgs(options, "--rm"), options);
  }

  /** Creates a container without starting it (for docker start / kill / start). */
  create(options: RunOptions): string {
    const args = this.runArgs(options, "-d");
    args.splice(0, 2, "create");
    dockerOk(args);
    return this.name(options.name);
  }

  remove(container: string): void {
    docker(["rm", "-f", "-v", container], { timeoutMs: 60_000 });
    this.containers.delete(container);
  }

  /** Removes what this run created, in dependency order; reports what could not be removed. */
  cleanup(): string[] {
    const problems: string[] = [];
    for (const container of this.containers) {
      const result = docker(["rm", "-f", "-v", container], { timeoutMs: 60_000 });
      if (result.status !== 0 && !/No such container/i.test(result.stderr)) problems.push(describe(["rm", container], result));
    }
    for (const volume of this.volumes) {
      // A volume with 200,000 files takes seconds to remove, minutes on a busy disk.
      const result = docker(["volume", "rm", "-f", volume], { timeoutMs: 600_000 });
      if (result.status !== 0) problems.push(describe(["volume", "rm", volume], result));
    }
    if (this.hostMount) {
      const unmounted = spawnSync("umount", [this.hostMount], { encoding: "utf8" });
      if (unmounted.status === 0) rmdirSync(this.hostMount);
      else problems.push(`umount ${this.hostMount}: ${unmounted.stderr.trim()}`);
    }
    if (!this.engineReached) return problems;
    // This run's tags first (they name only its own images), then the images
    // its builds made, newest first, without pruning parents it did not make.
    if (this.toolsBuilt) docker(["rmi", "-f", this.toolsImage], { timeoutMs: 120_000 });
    docker(["rmi", "-f", this.image], { timeoutMs: 120_000 });
    const present = (id: string): boolean => docker(["image", "inspect", id], { timeoutMs: 30_000 }).status === 0;
    for (const id of [...this.ownIds].reverse()) if (present(id)) docker(["rmi", "--no-prune", id], { timeoutMs: 120_000 });
    // The base and the debs, when this run made them: by name and unforced,
    // so that a container or build that took them up meanwhile keeps them.
    // What is left of this run's images: held by another container, image or
    // tag (docker rmi: "conflict: unable to delete"), or a problem.
    this.heldByOthers = [];
    for (const tag of [this.toolsBaseToRemove, this.baseToRemove]) {
      const result = tag ? docker(["rmi", tag], { timeoutMs: 120_000 }) : undefined;
      if (!result || result.status === 0 || /No such image/i.test(result.stderr)) continue;
      if (/conflict: unable to delete/.test(result.stderr)) this.heldByOthers.push({ image: tag!, why: result.stderr.trim() });
      else problems.push(describe(["rmi", tag!], result));
    }
    for (const id of this.ownIds.filter(present)) {
      const again = docker(["rmi", "--no-prune", id], { timeoutMs: 120_000 });
      if (again.status === 0) continue;
      if (/conflict: unable to delete/.test(again.stderr)) this.heldByOthers.push({ image: id, why: again.stderr.trim() });
      else problems.push(describe(["rmi", id], again));
    }
    return problems;
  }
}

export interface Logs {
  stdout: string;
  stderr: string;
}

/** The container's output so far (with -t both streams arrive on stdout, with CR LF). */
export function logsOf(container: string): Logs {
  const result = docker(["logs", container], { timeoutMs: 30_000 });
  if (result.status !== 0) throw new Error(`docker logs ${container}: ${result.stderr}`);
  return { stdout: result.stdout, stderr: result.stderr };
}

export interface ServiceEvent {
  event: string;
  [key: string]: unknown;
}

/** The JSON lines a fixture service printed on stdout. */
export function eventsOf(container: string): ServiceEvent[] {
  return logsOf(container)
    .stdout.split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as ServiceEvent);
}

export function eventOf(container: string, name: string): ServiceEvent | undefined {
  return eventsOf(container).find((e) => e.event === name);
}

/** A GET of the service's /health route from inside the container, as an operator would (docker exec --user node). */
export function healthOk(container: string, port = 8080): boolean {
  const script = `fetch("http://127.0.0.1:${port}/health").then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(2))`;
  return docker(["exec", "--user", "node", container, "node", "-e", script], { timeoutMs: 30_000 }).status === 0;
}
