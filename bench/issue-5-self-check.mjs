/*
 * Issue 5: the full audit without --probe (`clankie-separate --self-check
 * --json`) on a /state of 100,000 entries; goal under one second.
 *
 * Two bodies are started for real in the launch sandbox (bwrap + setpriv, the
 * entrypoint takes /state over, drops to node and runs `sleep` as the
 * service): one with a 100,000-entry /state, one with an empty /state. Then
 * hyperfine, on the host, runs the audit in each as root the way `docker exec`
 * does (nsenter into the body's namespaces, setpriv to the launch's six
 * capabilities and NoNewPrivs), both commands in the same run: the empty body
 * shows the cost of start-up and the image scan, the difference is the /state
 * walk. The audit exits 1 when a check fails, which it does here (the
 * sandbox's /usr is the host's, full of setuid files), hence hyperfine -i.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { runHyperfine } from "./lib/hyperfine.mjs";
import { loadAverage } from "./lib/machine.mjs";
import { codeBlock, folded, ms, resultsTable, verdict } from "./lib/markdown.mjs";
import { capture } from "./lib/process.mjs";
import { Body, ROOT_CAPS } from "./lib/sandbox.mjs";
import { makeTree, writeScript } from "./lib/tree.mjs";

const GOAL_MS = 1000;
const AUDIT = "/usr/local/sbin/clankie-separate";
const READY = "clankie-bench-ready";

/** Starts a separated body whose service is `sleep`; resolves once the service runs, with its pid 1 and a stop(). */
async function startBody(body, scriptPath, env) {
  const text = writeScript(scriptPath, {
    exec: body.argv({ command: ["/bin/sh", "-c", `echo ${READY} >&2; exec /usr/bin/sleep 3600`] }),
    closeFds: true,
  });
  const child = spawn("/bin/bash", [scriptPath], { stdio: ["ignore", "ignore", "pipe"], env });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const deadline = Date.now() + 120_000;
  while (!stderr.includes(READY)) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill("SIGKILL");
      throw new Error(`bench: the body in ${body.dir} did not start: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const pid1 = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim().split(/\s+/)[0]);
  return {
    pid1,
    text,
    log: () => stderr,
    stop() {
      // The sandbox's init changed credentials, which clears bwrap's parent-death signal: end its pid namespace.
      try {
        process.kill(pid1, "SIGKILL");
      } catch {
        /* already gone */
      }
      child.kill("SIGKILL");
    },
  };
}

/** `docker exec CONTAINER clankie-separate --self-check --json`, as root. */
function auditArgv(pid1) {
  return [
    "/usr/bin/nsenter", "-t", String(pid1), "-m", "-p", "-i", "--wd=/", "--",
    "/usr/bin/setpriv", "--inh-caps=-all", "--ambient-caps=-all", `--bounding-set=-all${ROOT_CAPS.map((c) => `,+${c}`).join("")}`, "--no-new-privs", "--",
    AUDIT, "--self-check", "--json",
  ];
}

export async function benchSelfCheck({ repo, work, plan, env }) {
  const dist = join(repo, "dist");
  const scripts = join(work, "issue-5-scripts");
  mkdirSync(scripts, { recursive: true, mode: 0o755 });
  const { dirs, files } = plan.tree;
  const full = new Body(join(work, "audit-full"), { repo, dist });
  const empty = new Body(join(work, "audit-empty"), { repo, dist });
  process.stdout.write(`\n== issue 5: making ${dirs} directories x ${files} files in ${full.state}\n`);
  const entries = makeTree(full.state, dirs, files);
  const usrEntries = capture("find", ["/usr", "-xdev"], { maxBuffer: 256 << 20 }).split("\n").filter(Boolean).length;

  const bodies = [];
  try {
    process.stdout.write("== issue 5: starting both bodies (the entrypoint takes /state over first)\n");
    const a = await startBody(full, join(scripts, "body-full.sh"), env);
    bodies.push(a);
    const b = await startBody(empty, join(scripts, "body-empty.sh"), env);
    bodies.push(b);

    /* One audit of each, kept, to report what it saw. */
    const once = (pid1) => {
      const argv = auditArgv(pid1);
      const started = process.hrtime.bigint();
      const r = spawnSync(argv[0], argv.slice(1), { encoding: "utf8", env, maxBuffer: 64 << 20 });
      const wall = Number(process.hrtime.bigint() - started) / 1e6;
      if (r.status !== 0 && r.status !== 1) throw new Error(`bench: the audit exited ${r.status ?? r.signal}: ${r.stderr}`);
      const doc = JSON.parse(r.stdout);
      return { status: r.status, doc, wall };
    };
    const seenFull = once(a.pid1);
    const seenEmpty = once(b.pid1);
    if (seenFull.doc.mode !== "separated" || seenEmpty.doc.mode !== "separated") {
      throw new Error(`bench: a body is not separated: ${seenFull.doc.mode}, ${seenEmpty.doc.mode}`);
    }
    const failing = (doc) => (doc.checks ?? []).filter((c) => c.status === "fail").map((c) => c.id);
    const stateFailing = (doc) => failing(doc).filter((id) => id.startsWith("state."));
    if (stateFailing(seenFull.doc).length || stateFailing(seenEmpty.doc).length) {
      throw new Error(`bench: a /state check fails after the takeover: ${stateFailing(seenFull.doc)} / ${stateFailing(seenEmpty.doc)}`);
    }

    process.stdout.write(`\n== issue 5: the audit on ${entries} entries and on an empty /state (load average ${loadAverage()})\n`);
    const load = loadAverage();
    const measured = runHyperfine(
      {
        warmup: plan.audit.warmup,
        runs: plan.audit.runs,
        ignoreFailure: true,
        json: join(work, "issue-5.json"),
        commands: [
          { name: "audit, empty /state", argv: auditArgv(b.pid1) },
          { name: `audit, /state of ${entries.toLocaleString("en-US")} entries`, argv: auditArgv(a.pid1) },
        ],
      },
      { env },
    );
    const [ref, fig] = measured.results;
    const met = fig.median < GOAL_MS;
    const markdown = [
      "## Issue 5: the audit (`--self-check --json`, no --probe)",
      "",
      `Goal: the full audit without --probe under ${ms(GOAL_MS)} on a /state of 100,000 entries.`,
      "",
      `Result: **${ms(fig.median)}** (median of the whole command) with ${entries.toLocaleString("en-US")} entries below /state: goal ${verdict(met)}. ` +
        `The same audit on an empty /state, same hyperfine run: ${ms(ref.median)}, so the /state walk costs about ${ms(fig.median - ref.median)}; ` +
        "the rest is the executable's start-up, the process checks and the image scan. " +
        `One audit outside hyperfine (before it, a wall time as measured from Node): ${ms(seenFull.wall)} with the full /state, ${ms(seenEmpty.wall)} with the empty one.`,
      "",
      `How: two bodies started for real in the launch sandbox (bwrap + setpriv as for issue 3; the entrypoint took /state over, dropped to node and runs \`sleep\` as the service), ` +
        `one with /state holding ${dirs.toLocaleString("en-US")} directories of ${files} empty files (bench/lib/tree.mjs), one with /state empty. ` +
        "Each command is what `docker exec CONTAINER clankie-separate --self-check --json` does as root: nsenter into the body's mount, pid and IPC namespaces, " +
        "setpriv to the launch's six capabilities and NoNewPrivs, then the audit; nsenter and setpriv are in both commands alike. " +
        `The audit judged both bodies \`separated\`; no \`state.*\` check failed.`,
      "",
      `Caveats: the sandbox's /usr is the host's (${usrEntries.toLocaleString("en-US")} entries by \`find /usr -xdev\`), much bigger than the image's, so the image checks scan more here than in the image. ` +
        `The audit exits 1 on this body (failing checks, from the host's /usr: ${failing(seenFull.doc).join(", ") || "none"}), ` +
        "so hyperfine runs with `-i` (the exit status is ignored); a failing audit runs every check all the same. Load average before the run: " +
        `${load}.`,
      "",
      codeBlock(measured.invocation),
      "",
      resultsTable(measured.results, ["audit, empty /state"]),
      "",
      folded("the script that starts the full body (the empty one differs by its directory)", codeBlock(a.text)),
    ].join("\n");
    return {
      markdown,
      summary: [
        {
          issue: "5",
          measure: `--self-check --json as root, /state of ${entries.toLocaleString("en-US")} entries`,
          figure: ms(fig.median),
          reference: `empty /state ${ms(ref.median)}`,
          ratio: "",
          goal: `< ${ms(GOAL_MS)}`,
          met,
        },
      ],
    };
  } finally {
    for (const body of bodies) body.stop();
  }
}
