/*
 * clankie-agent-exec --spawner: the resident spawner. The root phase starts
 * it as node with SETUID and SETGID (and nothing else), beside the service,
 * which holds no capability; the two share one request channel, a
 * socketpair(2) the root phase made, at fd CLANKIE_SPAWNER_FD in each, and
 * the root phase hands it, in CLANKIE_SPAWNER_IDS, node's uid and the
 * agent's uid, gid and groups, which it read from /etc/passwd and
 * /etc/group (no parser of them runs with the spawner's capabilities).
 * Every piece of agent work, and every stop of it, is a request on that
 * channel: there is no other way to start a process as the agent.
 *
 * A spawn: the service hands the job's stdio, kept fds and started marker to
 * its acceptor or a capless holder (src/service/), and names its pid. The
 * spawner parses the request as a command's options (run-args.ts), plans the
 * job (plan.ts, agentGrabJob: the stage's request), and writes it to its
 * zygote, one perl it started once with the grab and the verification stage
 * compiled in (GRAB_PROGRAM). The zygote forks a grab per job, which forks
 * the job in a session of its own and stays its parent (reaping what
 * clone(CLONE_PARENT) gives it), so that a spawn waits for neither a
 * process start nor a compile:
 *
 *   zygote (perl spawn-grab.pl + the stage) -> fork: grab, the job's fds,
 *   the drop to the agent, the stage in the same process -> COMMAND
 *
 * where the grab takes the fds by SCM_RIGHTS on the holder's or acceptor's
 * socket: the job's streams go from the service to the job, never through
 * the spawner. The zygote reports each job's pid, and how its grab ended,
 * on its stdout. A private job's lease changes groups (setegid(2)), which
 * the resident processes never do: its chain is a grab, then the per-job
 * private shim (private-start.ts) as a child, which leases, drops through
 * setpriv and execs as before.
 *
 * A stop names a job the spawner started; a grab delivers it the same way,
 * with the stage's signal role, as the agent. When the channel ends (the
 * service has exited), every running job's group is killed and the spawner
 * exits. When the zygote ends (any process of node's may kill it, as it may
 * kill the spawner), the spawner ends with it.
 */
import { createInterface } from "node:readline";
import { Socket } from "node:net";
import { setFlagsFromString } from "node:v8";
import { constants } from "node:os";
import type { AgentIds } from "../accounts.ts";
import { AGENT_EXEC_PATH, EXIT, SPAWNER_FD_VARIABLE, SPAWNER_IDS_VARIABLE, STARTED_FD_VARIABLE, SYSTEM_PATH, TOOLS } from "../constants.ts";
import { isCarried, uncarried } from "../exec/environment.ts";
import { gateExec, resolveCommand } from "../exec/rules.ts";
import { startChild } from "../exec/start-child.ts";
import type { SyscallNumbers } from "../os/syscalls.ts";
import { readStatus } from "../os/proc-status.ts";
import { formatRefusal, OsFailure, Refusal } from "../report.ts";
import { stageProgram } from "../stage/stage.ts";
import GRAB from "../perl/spawn-grab.pl";
import { checkCaller } from "./caller.ts";
import { parseRunArgs, parseStartedFd } from "./run-args.ts";
import { agentGrabJob } from "./plan.ts";
import type { SpawnerReply, SpawnerRequest } from "../spawner-protocol.ts";

/** This architecture's numbers, defined by build.mjs (scripts/text-modules.mjs under plain Node): the table's module stays out of the spawner. */
declare const __CLANKIE_SYSCALLS__: SyscallNumbers;

/**
 * V8 grows the young generation's semi-spaces (up to 16 MB each) while much
 * of what it allocates survives a scavenge, and never gives them back: a
 * resident process that answers bursts would keep the high-water mark for
 * its life. At a growth factor of 1 they keep their first size; V8 reads the
 * flag at each resize, so setting it at start is enough (v8.setFlagsFromString).
 * --optimize-for-size makes V8 grow the old generation less between
 * collections. --no-maglev and --no-opt keep the spawner's functions in the
 * interpreter and baseline code: its JavaScript per spawn is a parse, a plan
 * and a few writes, and the optimizing compilers' own pages and zones
 * (resident once used) cost more memory than they save time
 * (docs/benchmarks.md has what the first two save, and the last two together).
 */
const V8_MEMORY_FLAGS = "--semi-space-growth-factor=1 --optimize-for-size --no-maglev --no-opt";

/** A job's grab, as the zygote reports it: the job's pid once forked, then how the grab ended and what it said on its stderr. */
interface Grab {
  started(pid: number): void;
  ended(code: number | null, signal: string | null, said: string): void;
}

/** A signal's name by its number (the zygote reports the number waitpid(2) gave). */
const signalName = (signo: number): string | null => Object.keys(constants.signals).find((name) => constants.signals[name as keyof typeof constants.signals] === signo) ?? null;

/** A refusal or failure as the shim's one line and exit code. */
function asLine(error: unknown): { code: number; line: string } {
  if (error instanceof Refusal) return { code: error.exitCode, line: formatRefusal(error.message, error.fix) };
  if (error instanceof OsFailure) return { code: error.exitCode, line: `clankie-agent-exec: ${error.message}` };
  return { code: EXIT.osError, line: `clankie-agent-exec: the spawner failed: ${(error as Error).message}; report this` };
}

/** The chain's argv and environment for one spawn request, and what the grab takes and sets first. Throws the shim's refusals. */
export function planSpawn(ids: AgentIds, argv: readonly string[], env: Record<string, string>): { chain: string[]; env: Record<string, string>; fds: number[]; oom: string; privateJob: boolean } {
  // The service carries every variable of the agent's under CLANKIE_ENV_ and names its marker (src/system-exec.ts): any other name (LD_PRELOAD, NODE_OPTIONS) would reach what a grab execs with the spawner's capabilities, a private job's shim.
  const foreign = Object.keys(env).find((name) => name !== STARTED_FD_VARIABLE && !(isCarried(name) && !/[=\0]/.test(name)));
  if (foreign !== undefined) throw new Refusal(EXIT.usage, `the spawn's environment names ${JSON.stringify(foreign)}: only the agent's carried variables (CLANKIE_ENV_NAME) and ${STARTED_FD_VARIABLE} reach the spawner`, "spawn through spawnAgent, which carries them");
  // The options of a command and the command: a request for the shim's other actions (--signal, --private-cleanup) names an unknown option.
  const request = parseRunArgs(argv);
  const startedFd = parseStartedFd(env[STARTED_FD_VARIABLE], request.keepFds);
  const fds = [0, 1, 2, ...request.keepFds, ...(startedFd === undefined ? [] : [startedFd])];
  // A private job's lease changes groups: the per-job private shim does that, in a child, never here.
  if (request.privateJob) return { chain: [AGENT_EXEC_PATH, ...argv], env: { ...env }, fds, oom: "", privateJob: true };
  const path = resolveCommand(request.command[0]!, request.cwd);
  return { ...agentGrabJob(ids, { needSetsid: false, stageOptions: request.stageOptions, cwd: request.cwd, keepFds: request.keepFds, startedFd, confinement: request.confinement, action: { path, argv: request.command } }, uncarried(env), request.env), fds, oom: String(request.oomScoreAdj), privateJob: false };
}

/** A grab's job, as it reads it: each field ended by a NUL. */
export function grabJob(holder: readonly [number | "-", string], plan: { chain: readonly string[]; env: Record<string, string>; fds: readonly number[]; oom: string }): string {
  const env = Object.entries(plan.env).map(([name, value]) => `${name}=${value}`);
  const fields = [String(holder[0]), String(holder[1]), plan.oom, plan.fds.join(","), String(env.length), ...env, ...plan.chain];
  // A NUL inside a field (the request's holder or socket, say) would end it early, and the grab would read what follows as the job's next fields: a chain of the request's own, exec'd with the spawner's capabilities.
  if (fields.some((field) => field.includes("\0"))) throw new Refusal(EXIT.usage, "a field of the job holds a NUL byte", "send the holder's pid, its socket's name, the command and its environment without NUL bytes");
  return fields.map((field) => `${field}\0`).join("");
}

/** The identities the root phase hands the spawner (accounts.ts, formatAgentIds): "SERVICE:UID:GID:GROUP,GROUP". */
export function parseAgentIds(text: string | undefined): AgentIds {
  const ids = /^(\d{1,10}):(\d{1,10}):(\d{1,10}):(\d{1,10}(?:,\d{1,10})*)$/.exec(text ?? "");
  if (ids === null) throw new Refusal(EXIT.usage, `${SPAWNER_IDS_VARIABLE} is not node's uid and the agent's uid, gid and groups`, "start the spawner from the root phase (clankie-separate as root), which hands them to it");
  return { service: Number(ids[1]), uid: Number(ids[2]), gid: Number(ids[3]), groups: ids[4]!.split(",").map(Number) };
}

/** The zygote's program: the zygote and its grabs, then the stage of the agent and its stops (package Stage), which a grab runs on into after its drop (src/perl/spawn-grab.pl), all compiled once when the spawner starts the zygote. */
export const GRAB_PROGRAM = `${GRAB}\npackage Stage;\n${stageProgram(["agent", "signal"])}`;

export function runSpawner(): Promise<number> {
  setFlagsFromString(V8_MEMORY_FLAGS);
  const ids = parseAgentIds(process.env[SPAWNER_IDS_VARIABLE]);
  checkCaller(readStatus(), ids);
  const fd = Number(process.env[SPAWNER_FD_VARIABLE]);
  if (!Number.isSafeInteger(fd) || fd < 3) throw new Refusal(EXIT.usage, `${SPAWNER_FD_VARIABLE} is not an fd of 3 or more`, "start the spawner from the root phase (clankie-separate as root), which hands it the channel");
  const channel = new Socket({ fd, readable: true, writable: true });
  const send = (reply: SpawnerReply): void => void channel.write(`${JSON.stringify(reply)}\n`);
  const jobs = new Set<number>(); // pids (each leads its process group), while running
  const unannounced = new Set<Promise<void>>(); // grabs that have not said their job's pid yet
  const byId = new Map<number, number>();
  const endedPrivate = new Set<number>();

  /** Each job's grab, by its id on the zygote: told the job's pid ("P"), then how the grab ended ("E"). */
  const grabs = new Map<number, Grab>();
  let nextGrab = 1;
  let closing = false;
  const n = __CLANKIE_SYSCALLS__;
  const zygote = startChild({ command: TOOLS.perl, args: ["-T", "-C0", "-e", GRAB_PROGRAM, ...[n.recvmsg, n.dup3, n.fcntl, n.close, n.setsid, n.exitGroup, n.setgroups, n.setresgid, n.setresuid, n.capset, n.prctl, n.memfdCreate, ids.service, ids.uid, ids.gid, ...ids.groups].map(String)], env: {}, trustedUids: [0] });
  // Any process of node's may kill the zygote, as it may kill the spawner: the spawner ends with it (the service learns it at once, and the body exits).
  const lost = (how: unknown): void => {
    if (closing) return;
    process.stderr.write(`clankie-agent-exec: the spawner's zygote ended (${String(how)}): no agent work can start or be stopped; restart the body (the launcher's restart policy does, as the service exits now)\n`);
    process.exit(EXIT.osError);
  };
  zygote.once("error", (error) => lost(error.message)).once("exit", (code, signal) => lost(signal ?? code));
  zygote.stdin!.on("error", () => {}); // a write after the zygote's end (EPIPE): its exit answers it
  zygote.stderr!.pipe(process.stderr); // its own refusal (a bad job header), on the spawner's stderr
  createInterface({ input: zygote.stdout!, crlfDelay: Infinity }).on("line", (line) => {
    const [, kind, id, value, signo, text] = /^([PE]) (\d+) (\d+)(?: (\d+) (.*))?$/s.exec(line) ?? [];
    const grab = grabs.get(Number(id));
    if (kind === "P") grab?.started(Number(value));
    else if (kind === "E" && grabs.delete(Number(id))) grab!.ended(signo === "0" ? Number(value) : null, signo === "0" ? null : signalName(Number(signo)), (text ?? "").trim());
  });
  /** Starts `chain` through a grab the zygote forks, which takes the job's fds from `holder` (its pid and socket; "-": /dev/null and its stderr) and closes every other fd before the chain. */
  const throughGrab = (holder: readonly [number | "-", string], plan: { chain: string[]; env: Record<string, string>; fds: readonly number[]; oom: string }, grab: Grab): void => {
    const env = { ...plan.env, PATH: SYSTEM_PATH };
    // What a grab execs with the spawner's capabilities (a private job's shim, a release) passes the exec rules before each start; a "-stage" job runs on in the zygote's own perl, which passed them when the zygote started.
    if (plan.chain[0] !== "-stage") gateExec({ command: plan.chain[0]!, args: plan.chain, env, trustedUids: [0] });
    const job = grabJob(holder, { ...plan, env });
    const id = nextGrab++;
    grabs.set(id, grab);
    zygote.stdin!.write(`${id} ${Buffer.byteLength(job)}\n${job}`);
  };

  const start = (request: Extract<SpawnerRequest, { t: "spawn" }>): void => {
    // The grab forks the job, says its pid, and ends as the job ended (src/perl/spawn-grab.pl).
    let pid: number | undefined;
    let announce = (): void => {};
    const announced = new Promise<void>((resolve) => (announce = resolve));
    unannounced.add(announced);
    void announced.then(() => unannounced.delete(announced));
    try {
      // A spawn's stdio comes from a holder of the service's: its pid ("-", a grab's own fds, is a stop's or a release's alone).
      if (!Number.isSafeInteger(request.holder) || request.holder < 1) throw new Refusal(EXIT.usage, `the spawn names no holder's pid (${JSON.stringify(request.holder)})`, "spawn through spawnAgent, which starts the holder or its acceptor and names it");
      const plan = planSpawn(ids, request.argv, request.env);
      throughGrab([request.holder, String(request.socket)], plan, {
        started: (job) => {
          announce();
          jobs.add((pid = job));
          byId.set(request.id, pid);
          send({ t: "started", id: request.id, pid });
        },
        ended: (code, signal, line) => {
          announce(); // a grab that ended without a pid (refused before its fork)
          if (pid !== undefined) jobs.delete(pid);
          if (pid !== undefined && plan.privateJob) endedPrivate.add(pid);
          byId.delete(request.id);
          send({ t: "exit", id: request.id, code, signal, line });
        },
      });
    } catch (error) {
      announce();
      send({ t: "exit", id: request.id, ...asLine(error), signal: null });
    }
  };

  const OWN_STDIO = { fds: [0, 1, 2], oom: "" };
  const signalStage = (pgid: number, signal: string, ended: Grab["ended"]): void => {
    throughGrab(["-", ""], { ...agentGrabJob(ids, { keepFds: [], action: { signal, pgid } }, {}, []), ...OWN_STDIO }, { started: () => {}, ended });
  };

  /** A stop or a release: refused (`refusal`), or the grab `begin` starts, whose end and stderr are the answer. */
  const answer = (seq: number, refusal: string | undefined, begin: (ended: Grab["ended"]) => void): void => {
    if (refusal !== undefined) return send({ t: "done", seq, code: EXIT.dataRefused, signal: null, stderr: refusal });
    try {
      begin((code, signal, stderr) => send({ t: "done", seq, code, signal, stderr }));
    } catch (error) {
      const { code, line } = asLine(error);
      send({ t: "done", seq, code, signal: null, stderr: line });
    }
  };

  createInterface({ input: channel, crlfDelay: Infinity }).on("line", (text) => {
    let request: SpawnerRequest;
    try {
      request = JSON.parse(text) as SpawnerRequest;
    } catch {
      return; // not a request: the channel is the service's alone, and it writes only JSON
    }
    if (request.t === "spawn") return start(request);
    if (request.t === "signal") {
      const pgid = request.job !== undefined ? byId.get(request.job) : request.pgid;
      const refusal = pgid !== undefined && jobs.has(pgid) ? undefined : `clankie-agent-exec: no running job of the spawner's leads process group ${pgid ?? "(not started)"}; pass the pid of a job spawnAgent started`;
      return answer(request.seq, refusal, (ended) => signalStage(pgid!, request.signal, ended));
    }
    if (request.t === "release") {
      const refusal = endedPrivate.delete(request.pid) ? undefined : `clankie-agent-exec: process ${request.pid} is no ended private job of the spawner's; release only a private job's own pid, once`;
      answer(request.seq, refusal, (ended) => throughGrab(["-", ""], { chain: [AGENT_EXEC_PATH, "--private-cleanup", String(request.pid)], env: {}, ...OWN_STDIO }, { started: () => {}, ended }));
    }
  });
  // The service has exited: no one will read a job's outcome or stop it. Once every grab has said its job's pid, end every job's group, as the agent, then exit (the zygote, at the end of its stdin, with the spawner).
  return new Promise((done) => {
    channel.once("close", async () => {
      await Promise.all(unannounced);
      const ending = [...jobs].map((pgid) => new Promise<void>((ended) => {
        try {
          signalStage(pgid, "SIGKILL", () => ended());
        } catch {
          ended();
        }
      }));
      void Promise.all(ending).then(() => {
        closing = true;
        zygote.stdin!.end();
        done(EXIT.ok);
      });
    });
    channel.on("error", () => channel.destroy());
  });
}
