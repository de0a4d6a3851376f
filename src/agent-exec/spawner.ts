/*
 * clankie-agent-exec --spawner: the resident spawner. The root phase starts
 * it as node with SETUID and SETGID (and nothing else), beside the service,
 * which holds no capability; the two share one request channel, a
 * socketpair(2) the root phase made, at fd CLANKIE_SPAWNER_FD in each. Every
 * piece of agent work, and every stop of it, is a request on that channel:
 * there is no other way to start a process as the agent.
 *
 * A spawn: the service hands the job's stdio, kept fds and started marker to
 * its acceptor or a capless holder (src/service/), and names its pid. The
 * spawner parses the request as a command's options (run-args.ts), plans the
 * job (plan.ts, agentGrabJob: the stage's request), and writes it to a grab,
 * which forks the job in a session of its own and stays its parent (reaping
 * what clone(CLONE_PARENT) gives it). The grab was started before the
 * request came (one waits, idle, for the next job; the next is started once
 * this job's answer has gone), with the verification stage compiled into it
 * (GRAB_PROGRAM), so that a spawn waits for neither a fork of the spawner nor
 * a perl's start:
 *
 *   perl spawn-grab.pl + the stage, forked: the job's fds, the drop to the agent,
 *   the stage in the same process -> COMMAND
 *
 * where the grab takes the fds by SCM_RIGHTS on the holder's or acceptor's
 * socket: the job's streams go from the service to the job, never through
 * the spawner. A private job's lease changes groups (setegid(2)), which the
 * resident process never does: its chain is the grab, then the per-job
 * private shim (private-start.ts) as a child, which leases, drops through
 * setpriv and execs as before.
 *
 * A stop names a job the spawner started; the grab delivers it the same way,
 * with the stage's signal role, as the agent. When the channel ends (the
 * service has exited), every running job's group is killed and the spawner
 * exits.
 */
import { createInterface } from "node:readline";
import { Socket } from "node:net";
import { setFlagsFromString } from "node:v8";
import { agentGroups, type Identities, readIdentities } from "../accounts.ts";
import { AGENT_EXEC_PATH, EXIT, SPAWNER_FD_VARIABLE, STARTED_FD_VARIABLE, SYSTEM_PATH, TOOLS } from "../constants.ts";
import { uncarried } from "../exec/environment.ts";
import { gateExec, resolveCommand } from "../exec/rules.ts";
import { type ChildProcess, startChild } from "../exec/start-child.ts";
import type { SyscallNumbers } from "../os/syscalls.ts";
import { readStatus } from "../os/proc-status.ts";
import { formatRefusal, OsFailure, Refusal } from "../report.ts";
import { stageEnvironment, stageProgram } from "../stage/stage.ts";
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

/** A refusal or failure as the shim's one line and exit code. */
function asLine(error: unknown): { code: number; line: string } {
  if (error instanceof Refusal) return { code: error.exitCode, line: formatRefusal(error.message, error.fix) };
  if (error instanceof OsFailure) return { code: error.exitCode, line: `clankie-agent-exec: ${error.message}` };
  if ((error as NodeJS.ErrnoException).code === "EAGAIN") return { code: EXIT.osError, line: `clankie-agent-exec: ${(error as Error).message}: node's uid is at its process limit; try again once processes of node's have ended, or raise the container's process limit` };
  return { code: EXIT.osError, line: `clankie-agent-exec: the spawner failed: ${(error as Error).message}; report this` };
}

/** The chain's argv and environment for one spawn request, and what the grab takes and sets first. Throws the shim's refusals. */
export function planSpawn(ids: Identities, argv: readonly string[], env: Record<string, string>): { chain: string[]; env: Record<string, string>; fds: number[]; oom: string; privateJob: boolean } {
  // The options of a command and the command: a request for the shim's other actions (--signal, --private-cleanup) names an unknown option.
  const request = parseRunArgs(argv);
  const startedFd = parseStartedFd(env[STARTED_FD_VARIABLE], request.keepFds);
  const fds = [0, 1, 2, ...request.keepFds, ...(startedFd === undefined ? [] : [startedFd])];
  // A private job's lease changes groups: the per-job private shim does that, in a child, never here.
  if (request.privateJob) return { chain: [AGENT_EXEC_PATH, ...argv], env: { ...env }, fds, oom: "", privateJob: true };
  const path = resolveCommand(request.command[0]!, request.cwd);
  return { ...agentGrabJob(ids, { needSetsid: false, stageOptions: request.stageOptions, cwd: request.cwd, keepFds: request.keepFds, startedFd, confinement: request.confinement, action: { path, argv: request.command } }, uncarried(env), request.env), fds, oom: String(request.oomScoreAdj), privateJob: false };
}

/** A grab's job, as it reads it on its stdin: each field ended by a NUL (gateExec refuses one in a field). */
export function grabJob(holder: readonly [number | "-", string], plan: { chain: readonly string[]; env: Record<string, string>; fds: readonly number[]; oom: string }): string {
  const env = Object.entries(plan.env).map(([name, value]) => `${name}=${value}`);
  return [String(holder[0]), holder[1], plan.oom, plan.fds.join(","), String(env.length), ...env, ...plan.chain].map((field) => `${field}\0`).join("");
}

/** The grab's program: the grab, then the stage of the agent and its stops (package Stage), which the grab runs on into after its drop (src/perl/spawn-grab.pl), compiled with it before the job comes. */
export const GRAB_PROGRAM = `${GRAB}\npackage Stage;\n${stageProgram(["agent", "signal"])}`;

function collect(child: ChildProcess): () => string {
  let text = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
  return () => text.trim();
}

export function runSpawner(): Promise<number> {
  setFlagsFromString(V8_MEMORY_FLAGS);
  const ids = readIdentities();
  checkCaller(readStatus(), ids);
  const fd = Number(process.env[SPAWNER_FD_VARIABLE]);
  if (!Number.isSafeInteger(fd) || fd < 3) throw new Refusal(EXIT.usage, `${SPAWNER_FD_VARIABLE} is not an fd of 3 or more`, "start the spawner from the root phase (clankie-separate as root), which hands it the channel");
  const channel = new Socket({ fd, readable: true, writable: true });
  const send = (reply: SpawnerReply): void => void channel.write(`${JSON.stringify(reply)}\n`);
  const jobs = new Set<number>(); // pids (each leads its process group), while running
  const unannounced = new Set<Promise<void>>(); // grabs that have not said their job's pid yet
  const byId = new Map<number, number>();
  const endedPrivate = new Set<number>();

  /** The next job's grab, started before the job comes so that a spawn need not wait for perl's start (each job takes it, and the next is started behind it). */
  let warm: ChildProcess | undefined;
  const n = __CLANKIE_SYSCALLS__;
  const startGrab = (): ChildProcess => {
    const grab = startChild({ command: TOOLS.perl, args: ["-T", "-C0", "-e", GRAB_PROGRAM, ...[n.recvmsg, n.dup3, n.fcntl, n.close, n.setsid, n.exitGroup, n.setgroups, n.setresgid, n.setresuid, n.capset, n.prctl, ids.service.uid, ids.agent.uid, ids.agent.gid, ...agentGroups(ids)].map(String)], env: {}, trustedUids: [0] });
    // A grab that has died (its stdin's error) or could not start (fork(2) refused at node's process limit, EAGAIN): its close or its job's own listener answers it, and an idle one is never used.
    for (const emitter of [grab, grab.stdin]) emitter?.on("error", () => {});
    return grab;
  };
  const refill = (): void => {
    try {
      if (!channel.destroyed) warm ??= startGrab();
    } catch {
      // The next job starts its own grab; its failure is that job's answer.
    }
  };
  /** Starts `chain` through a grab, which takes the job's fds from `holder` (its pid and socket; "-": keeps its own 0-2) and closes every other fd the spawner holds before the chain. */
  const throughGrab = (holder: readonly [number | "-", string], plan: { chain: string[]; env: Record<string, string>; fds: readonly number[]; oom: string }): ChildProcess => {
    const env = { ...plan.env, PATH: SYSTEM_PATH };
    gateExec({ command: plan.chain[0] === "-stage" ? TOOLS.perl : plan.chain[0]!, args: plan.chain, env, trustedUids: [0] });
    // A warm grab that has died (killed: any process of node's may; Node then destroys its stdin) or been sent its empty job is left to end; the job starts its own.
    const grab = warm?.pid !== undefined && warm.stdin?.writable ? warm : startGrab();
    warm = undefined;
    grab.stdin?.end(grabJob(holder, { ...plan, env }));
    if (holder[0] === "-") grab.stdout?.resume();
    grab.once("close", () => setImmediate(refill)); // after the job's answer: a start would hold it back
    return grab;
  };
  refill();

  const start = (request: Extract<SpawnerRequest, { t: "spawn" }>): void => {
    let plan: ReturnType<typeof planSpawn>, child: ChildProcess;
    try {
      plan = planSpawn(ids, request.argv, request.env);
      child = throughGrab([request.holder, String(request.socket)], plan);
    } catch (error) {
      send({ t: "exit", id: request.id, ...asLine(error), signal: null });
      return;
    }
    const said = collect(child);
    child.once("error", (error) => send({ t: "exit", id: request.id, ...asLine(error), signal: null }));
    if (child.pid === undefined) return;
    // The grab forks the job, says its pid, and ends as the job ended (src/perl/spawn-grab.pl).
    let pid: number | undefined;
    let announce = (): void => {};
    const announced = new Promise<void>((resolve) => (announce = resolve));
    unannounced.add(announced);
    void announced.then(() => unannounced.delete(announced));
    createInterface({ input: child.stdout!, crlfDelay: Infinity }).on("line", (line) => {
      if (pid !== undefined || !/^P \d+$/.test(line)) return;
      announce();
      pid = Number(line.slice(2));
      jobs.add(pid);
      byId.set(request.id, pid);
      send({ t: "started", id: request.id, pid });
    });
    child.once("close", (code, signal) => {
      announce(); // a grab that ended without a pid (refused before its fork)
      if (pid !== undefined) jobs.delete(pid);
      if (pid !== undefined && plan.privateJob) endedPrivate.add(pid);
      byId.delete(request.id);
      send({ t: "exit", id: request.id, code, signal, line: said() });
    });
  };

  const OWN_STDIO = { fds: [0, 1, 2], oom: "" };
  const signalStage = (pgid: number, signal: string): ChildProcess => {
    return throughGrab(["-", ""], { ...agentGrabJob(ids, { keepFds: [], action: { signal, pgid } }, {}, []), ...OWN_STDIO });
  };

  /** A stop or a release: refused (`refusal`), or the child `begin` starts, whose exit status and stderr are the answer. */
  const answer = (seq: number, refusal: string | undefined, begin: () => ChildProcess): void => {
    const failed = (error: unknown): void => send({ t: "done", seq, code: asLine(error).code, signal: null, stderr: asLine(error).line });
    if (refusal !== undefined) return send({ t: "done", seq, code: EXIT.dataRefused, signal: null, stderr: refusal });
    try {
      const child = begin();
      const said = collect(child);
      child.once("error", failed);
      child.once("close", (code, signal) => send({ t: "done", seq, code, signal, stderr: said() }));
    } catch (error) {
      failed(error);
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
      return answer(request.seq, refusal, () => signalStage(pgid!, request.signal));
    }
    if (request.t === "release") {
      const refusal = endedPrivate.delete(request.pid) ? undefined : `clankie-agent-exec: process ${request.pid} is no ended private job of the spawner's; release only a private job's own pid, once`;
      answer(request.seq, refusal, () => throughGrab(["-", ""], { chain: [AGENT_EXEC_PATH, "--private-cleanup", String(request.pid)], env: {}, ...OWN_STDIO }));
    }
  });
  // The service has exited: no one will read a job's outcome or stop it. Once every grab has said its job's pid, end every job's group, as the agent, then exit.
  return new Promise((done) => {
    channel.once("close", async () => {
      warm?.stdin?.end(); // an empty job: the idle grab starts nothing and exits
      await Promise.all(unannounced);
      const ending = [...jobs].map((pgid) => new Promise<void>((ended) => {
        try {
          signalStage(pgid, "SIGKILL").once("close", () => ended()).once("error", () => ended());
        } catch {
          ended();
        }
      }));
      void Promise.all(ending).then(() => done(EXIT.ok));
    });
    channel.on("error", () => channel.destroy());
  });
}
