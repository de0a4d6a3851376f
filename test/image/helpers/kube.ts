/*
 * docs/launch.md's Kubernetes Pod manifest, run on one machine by
 * `podman kube play` (the image test's Kubernetes item). The manifest is read
 * from the docs, so the docs cannot drift from what is run: only its
 * placeholders are filled in (the image, the service command, the body's
 * name) and one hostPath volume added for the service's code, each of which
 * must be found exactly where the docs put it.
 *
 * Podman is configured by a containers.conf of the session's own, named by
 * CONTAINERS_CONF for every podman command it runs (the host's global config
 * is neither read nor changed): the runc runtime (crun refuses every
 * container on a cgroup v1 host here: "cgroups in hybrid mode not
 * supported") and ulimits within the host's hard limits (podman's defaults
 * are above them, and runc's setrlimit then fails with EPERM). The session
 * names, and at the end removes, every pod, volume and image it made.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The docs section whose one yaml block is the manifest. */
const SECTION = "## Kubernetes";
/** Placeholders of the docs' manifest, as written there. */
const IMAGE_LINE = "image: IMAGE";
const ARGS_LINE = 'args: ["SERVICE-COMMAND", "..."]';
const OWNER = "OWNER";
const MOUNTS_LINE = "      volumeMounts:";
const VOLUMES_LINE = "  volumes:";

/** Kubernetes quantities (sizeLimit, memory limits) with a binary suffix. */
const BINARY_SUFFIX: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };
/** tmpfs counts nr_blocks in pages (tmpfs(5)); podman 4.3 refuses size= in a volume's o= (it takes it for a quota). */
const PAGE_BYTES = 4096;
/**
 * The modes the kubelet leaves on a memory-backed emptyDir's tmpfs: tmpfs's
 * default root mode (tmpfs(5): 1777), which it does not change, as 0777
 * already matches its permission bits. The body must work on them, /run too
 * (Docker's recipe gives /run 0755).
 */
const EMPTY_DIR_MODE = "1777";
/**
 * RLIMIT_NPROC for the pod's containers: within conmon's hard limit here
 * (32768, below the shell's 96367), which runc cannot raise without
 * CAP_SYS_RESOURCE. Counted per uid (setrlimit(2)), so it bounds the service's
 * uid on the whole host; the shim sets the agent's own, lower.
 */
const NPROC_LIMIT = 4096;
/** RLIMIT_NOFILE when the host's hard limit is unlimited (podman's own default). */
const NOFILE_DEFAULT = 1048576;

/** The yaml block of docs/launch.md's Kubernetes section. */
export function manifestFromDocs(markdown: string): string {
  const start = markdown.indexOf(`\n${SECTION}\n`);
  if (start < 0) throw new Error(`docs/launch.md has no "${SECTION}" section`);
  const end = markdown.indexOf("\n## ", start + SECTION.length + 2);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  if (blocks.length !== 1) throw new Error(`docs/launch.md's "${SECTION}" section has ${blocks.length} yaml blocks, want 1`);
  return blocks[0]!;
}

export interface Fill {
  image: string;
  args: readonly string[];
  /** The body's name: OWNER in body-OWNER. */
  owner: string;
  /** A host directory mounted read-only: the service's code. */
  hostPath: { path: string; mountPath: string };
}

function replaceOnce(text: string, what: string, by: string): string {
  const at = text.indexOf(what);
  if (at < 0 || text.indexOf(what, at + 1) >= 0) throw new Error(`the manifest must hold "${what}" exactly once`);
  return text.slice(0, at) + by + text.slice(at + what.length);
}

/** The docs' manifest with its placeholders filled in and the service's hostPath added. */
export function fillManifest(manifest: string, fill: Fill): string {
  const owned = manifest.replaceAll(`body-${OWNER}`, `body-${fill.owner}`);
  if (new RegExp(`\\b${OWNER}\\b`).test(owned)) throw new Error(`the manifest names ${OWNER} outside body-${OWNER}`);
  let text = replaceOnce(owned, IMAGE_LINE, `image: ${JSON.stringify(fill.image)}`);
  text = replaceOnce(text, ARGS_LINE, `args: ${JSON.stringify(fill.args)}`);
  text = replaceOnce(text, `\n${MOUNTS_LINE}\n`, `\n${MOUNTS_LINE}\n        - { name: service, mountPath: ${JSON.stringify(fill.hostPath.mountPath)}, readOnly: true }\n`);
  text = replaceOnce(text, `\n${VOLUMES_LINE}\n`, `\n${VOLUMES_LINE}\n    - { name: service, hostPath: { path: ${JSON.stringify(fill.hostPath.path)}, type: Directory } }\n`);
  return text;
}

/** Bytes of a Kubernetes quantity with a binary suffix (1Gi, 512Mi). */
export function quantityBytes(quantity: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)$/.exec(quantity);
  if (!m) throw new Error(`not a quantity with a binary suffix: ${quantity}`);
  return Number(m[1]) * BINARY_SUFFIX[m[2]!]!;
}

export interface EmptyDir {
  name: string;
  sizeBytes: number;
}

/** The manifest's memory-backed emptyDir volumes (flow style, one a line, as the docs write them). */
export function memoryEmptyDirs(manifest: string): EmptyDir[] {
  return [...manifest.matchAll(/^\s*- \{ name: ([\w-]+), emptyDir: \{ medium: Memory, sizeLimit: (\w+) \} \}$/gm)].map((m) => ({ name: m[1]!, sizeBytes: quantityBytes(m[2]!) }));
}

/** The manifest's persistentVolumeClaim names. */
export function claimNames(manifest: string): string[] {
  return [...manifest.matchAll(/persistentVolumeClaim: \{ claimName: ([\w-]+) \}/g)].map((m) => m[1]!);
}

/** The container's memory limit, in bytes. */
export function memoryLimit(manifest: string): number {
  const m = /^\s+limits:\n\s+memory: (\w+)/m.exec(manifest);
  if (!m) throw new Error("the manifest sets no memory limit");
  return quantityBytes(m[1]!);
}

/** The hard limit of a resource of this process ("Max open files"), or undefined when unlimited. */
export function hardLimit(resource: string): number | undefined {
  const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith(resource));
  if (!line) throw new Error(`no "${resource}" in /proc/self/limits`);
  const hard = line.slice(resource.length).trim().split(/\s+/)[1]!;
  return hard === "unlimited" ? undefined : Number(hard);
}

export interface PodmanOptions {
  timeoutMs?: number;
}

export class PodmanSession {
  readonly dir = mkdtempSync("/tmp/clankie-e2e-podman-");
  readonly conf = join(this.dir, "containers.conf");
  private readonly pods = new Set<string>();
  private readonly volumes = new Set<string>();
  private readonly images = new Set<string>();
  /** Images that existed before the run (podman's pause image): kept. */
  private readonly pauseBefore: string[];
  private cleaned = false;
  readonly label: string;

  constructor(label: string) {
    this.label = label;
    const nofile = Math.min(hardLimit("Max open files") ?? NOFILE_DEFAULT, NOFILE_DEFAULT);
    const nproc = Math.min(hardLimit("Max processes") ?? NPROC_LIMIT, NPROC_LIMIT);
    writeFileSync(this.conf, `[containers]\ndefault_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]\n\n[engine]\nruntime = "runc"\n`);
    this.pauseBefore = this.pauseImages();
  }

  podman(args: readonly string[], options: PodmanOptions = {}): SpawnSyncReturns<string> {
    return spawnSync("podman", [...args], { encoding: "utf8", timeout: options.timeoutMs ?? 120_000, env: { ...process.env, CONTAINERS_CONF: this.conf }, maxBuffer: 64 << 20 });
  }

  ok(args: readonly string[], options: PodmanOptions = {}): string {
    const result = this.podman(args, options);
    if (result.status !== 0) throw new Error(`podman ${args.join(" ")}: ${result.error ? String(result.error) : `exit ${result.status}`}\n${(result.stderr ?? "").trim()}`);
    return result.stdout;
  }

  /** podman's version, or an error that says how to install it. */
  version(): string {
    const result = this.podman(["version", "--format", "{{.Client.Version}}"], { timeoutMs: 30_000 });
    if (result.error || result.status !== 0) throw new Error(`podman is not usable (${(result.stderr || String(result.error)).trim()}); scripts/setup-debian.sh installs podman, catatonit and runc`);
    return result.stdout.trim();
  }

  private pauseImages(): string[] {
    const result = this.podman(["images", "-q", "--filter", "reference=localhost/podman-pause"], { timeoutMs: 30_000 });
    return result.status === 0 ? result.stdout.split("\n").filter(Boolean) : [];
  }

  /** Copies a Docker image into podman's store; returns the name podman gave it. */
  loadFromDocker(image: string): string {
    const result = spawnSync("bash", ["-o", "pipefail", "-c", 'docker save "$1" | podman load', "bash", image], { encoding: "utf8", timeout: 600_000, env: { ...process.env, CONTAINERS_CONF: this.conf }, maxBuffer: 64 << 20 });
    const loaded = /^Loaded image(?:\(s\))?: (\S+)$/m.exec(result.stdout)?.[1];
    if (loaded) this.images.add(loaded);
    if (result.status !== 0 || !loaded) throw new Error(`docker save ${image} | podman load: exit ${result.status}\n${result.stderr}${result.stdout}`);
    return loaded;
  }

  /**
   * A podman volume for a memory-backed emptyDir, made before the pod, as
   * docs/launch.md tells a podman 4 operator: podman kube play 4.x ignores
   * medium and sizeLimit and would make an on-disk volume of that name. A
   * tmpfs of the manifest's size and the kubelet's mode, nosuid,nodev.
   */
  tmpfsVolume(dir: EmptyDir): void {
    const options = `nosuid,nodev,nr_blocks=${Math.ceil(dir.sizeBytes / PAGE_BYTES)},mode=${EMPTY_DIR_MODE}`;
    this.volumes.add(dir.name);
    this.ok(["volume", "create", "--label", this.label, "--opt", "type=tmpfs", "--opt", "device=tmpfs", "--opt", `o=${options}`, dir.name]);
  }

  /** The persistentVolumeClaims' volumes are made by kube play; named here so that the cleanup removes them. */
  claim(name: string): void {
    this.volumes.add(name);
  }

  /** Runs the manifest (podman kube play FILE); returns the pod's name. */
  play(manifest: string, pod: string): void {
    const file = join(this.dir, "pod.yaml");
    writeFileSync(file, manifest);
    this.pods.add(pod);
    // --network none: this host has no bridge for podman either (no iptables); the service listens on loopback.
    this.ok(["kube", "play", "--network", "none", file], { timeoutMs: 300_000 });
  }

  /** The host pid of a container's first process (0 when it is not running). */
  initPid(container: string): number {
    return Number(this.ok(["inspect", "-f", "{{.State.Pid}}", container]).trim());
  }

  logs(container: string): { stdout: string; stderr: string } {
    const result = this.podman(["logs", container], { timeoutMs: 30_000 });
    if (result.status !== 0) throw new Error(`podman logs ${container}: ${result.stderr}`);
    return { stdout: result.stdout, stderr: result.stderr };
  }

  /** Removes every pod, volume and image the session made, and its config; returns what could not be removed. */
  cleanup(): string[] {
    if (this.cleaned) return [];
    this.cleaned = true;
    const problems: string[] = [];
    const gone = (r: SpawnSyncReturns<string>): boolean => r.status === 0 || /no such|not found|does not exist/i.test(r.stderr ?? "");
    for (const pod of this.pods) {
      const r = this.podman(["pod", "rm", "-f", pod], { timeoutMs: 120_000 });
      if (!gone(r)) problems.push(`podman pod rm -f ${pod}: ${r.stderr.trim()}`);
    }
    for (const volume of this.volumes) {
      const r = this.podman(["volume", "rm", "-f", volume], { timeoutMs: 120_000 });
      if (!gone(r)) problems.push(`podman volume rm ${volume}: ${r.stderr.trim()}`);
    }
    for (const image of this.images) {
      const r = this.podman(["rmi", image], { timeoutMs: 120_000 });
      if (!gone(r)) problems.push(`podman rmi ${image}: ${r.stderr.trim()}`);
    }
    // kube play builds its pause image (catatonit) on first use: removed when this run made it, unforced (another pod may have taken it up).
    for (const id of this.pauseImages().filter((id) => !this.pauseBefore.includes(id))) {
      const r = this.podman(["rmi", id], { timeoutMs: 120_000 });
      if (!gone(r)) problems.push(`podman rmi ${id} (the pause image this run built): ${r.stderr.trim()}`);
    }
    const left = this.podman(["volume", "ls", "-q", "--filter", `label=${this.label}`], { timeoutMs: 30_000 }).stdout.trim();
    if (left) problems.push(`volumes of this run left: ${left.replace(/\n/g, " ")}`);
    rmSync(this.dir, { recursive: true, force: true });
    return problems;
  }
}

/** A mount's filesystem type and options as a process sees it (mountinfo: the last mount on top wins). */
export function mountOf(pid: number, mountPoint: string): { fstype: string; options: string[]; superOptions: string[] } | undefined {
  const lines = readFileSync(`/proc/${pid}/mountinfo`, "utf8").trim().split("\n").reverse();
  const line = lines.find((l) => l.split(" ")[4] === mountPoint);
  if (!line) return undefined;
  const [before, after] = line.split(" - ") as [string, string];
  const [fstype, , superOptions] = after.split(" ") as [string, string, string];
  return { fstype, options: before.split(" ")[5]!.split(","), superOptions: superOptions.split(",") };
}

/** The Seccomp mode in /proc/<pid>/status (2: a filter). */
export function seccompMode(pid: number): string | undefined {
  try {
    return /^Seccomp:\s+(\d)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  } catch {
    return undefined;
  }
}
