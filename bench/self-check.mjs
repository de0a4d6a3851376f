/*
 * The audit: the full audit without --probe (`clankie-separate --self-check
 * --json`) on a /state of 100,000 entries; goal under one second.
 *
 * Three bodies are started for real in the launch sandbox (bwrap + setpriv,
 * the entrypoint takes /state over, drops to node and runs `sleep` as the
 * service): with the image's /usr (the stand-in base of the image test,
 * scripts/image/make-base.sh, exported from Docker) and a 100,000-entry
 * /state, which is the figure the goal is about; with the host's /usr (six
 * times as many entries) and the same /state; and with the host's /usr and an
 * empty /state. Then hyperfine, on the host, runs the audit in each as root
 * the way `docker exec` does (nsenter into the body's namespaces, setpriv to
 * the launch's six capabilities and NoNewPrivs), all in the same run. The
 * audit exits 1 when a check fails, which it does with the host's /usr (full
 * of setuid files), hence hyperfine -i.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { runHyperfine } from "./lib/hyperfine.mjs";
import { loadAverage } from "./lib/machine.mjs";
import { codeBlock, folded, ms, resultsTable, verdict } from "./lib/markdown.mjs";
import { capture, run } from "./lib/process.mjs";
import { Body, ROOT_CAPS } from "../test/helpers/bwrap-sandbox.ts";
import { makeTree, writeScript } from "./lib/tree.mjs";

const GOAL_MS = 1000;
const AUDIT = "/usr/local/sbin/clankie-separate";
const READY = "clankie-bench-ready";

const BASE_IMAGE = "clankie-base:bookworm-node24";

/** /usr of the image's base, built by scripts/image/make-base.sh (cached in Docker) and exported here. */
function imageUsr(repo, work, env) {
  run("/bin/sh", [join(repo, "scripts/image/make-base.sh"), BASE_IMAGE], { env });
  const root = join(work, "image-root");
  mkdirSync(root, { recursive: true });
  const id = capture("docker", ["create", BASE_IMAGE, "true"], { env }).trim();
  try {
    run("/bin/sh", ["-c", 'docker export "$1" | tar -x -C "$2" usr', "sh", id, root], { env });
  } finally {
    spawnSync("docker", ["rm", id], { env, stdio: "ignore" });
  }
  return join(root, "usr");
}

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
  const scripts = join(work, "audit-scripts");
  mkdirSync(scripts, { recursive: true, mode: 0o755 });
  const { dirs, files } = plan.tree;
  process.stdout.write(`\n== audit: the image's /usr from ${BASE_IMAGE}\n`);
  const baseUsr = imageUsr(repo, work, env);
  const full = new Body({ dir: join(work, "audit-full") });
  const empty = new Body({ dir: join(work, "audit-empty") });
  const inImage = new Body({ dir: join(work, "audit-image"), usr: baseUsr, state: full.state, workspace: full.workspace });
  process.stdout.write(`\n== audit: making ${dirs} directories x ${files} files in ${full.state}\n`);
  const entries = makeTree(full.state, dirs, files);
  const count = (dir) => capture("find", [dir, "-xdev"], { maxBuffer: 256 << 20 }).split("\n").filter(Boolean).length;
  const usrEntries = count("/usr");
  const baseUsrEntries = count(baseUsr);

  const bodies = [];
  try {
    process.stdout.write("== audit: starting both bodies (the entrypoint takes /state over first)\n");
    const a = await startBody(full, join(scripts, "body-full.sh"), env);
    bodies.push(a);
    const b = await startBody(empty, join(scripts, "body-empty.sh"), env);
    bodies.push(b);
    const c = await startBody(inImage, join(scripts, "body-image.sh"), env);
    bodies.push(c);

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
    const seenImage = once(c.pid1);
    if ([seenFull, seenEmpty, seenImage].some((seen) => seen.doc.mode !== "separated")) {
      throw new Error(`bench: a body is not separated: ${seenFull.doc.mode}, ${seenEmpty.doc.mode}, ${seenImage.doc.mode}`);
    }
    const failing = (doc) => (doc.checks ?? []).filter((c) => c.status === "fail").map((c) => c.id);
    const stateFailing = (doc) => failing(doc).filter((id) => id.startsWith("state."));
    if ([seenFull, seenEmpty, seenImage].some((seen) => stateFailing(seen.doc).length)) {
      throw new Error(`bench: a /state check fails after the takeover: ${stateFailing(seenFull.doc)} / ${stateFailing(seenEmpty.doc)} / ${stateFailing(seenImage.doc)}`);
    }
    const visitedOf = (doc) => doc.checks.find((check) => check.id === "image.setuid")?.found?.visited ?? "?";

    process.stdout.write(`\n== audit: the audit on ${entries} entries and on an empty /state (load average ${loadAverage()})\n`);
    const load = loadAverage();
    const measured = runHyperfine(
      {
        warmup: plan.audit.warmup,
        runs: plan.audit.runs,
        ignoreFailure: true,
        json: join(work, "audit.json"),
        commands: [
          { name: `audit, /state of ${entries.toLocaleString("en-US")} entries, the image's /usr`, argv: auditArgv(c.pid1) },
          { name: `audit, /state of ${entries.toLocaleString("en-US")} entries, the host's /usr`, argv: auditArgv(a.pid1) },
          { name: "audit, empty /state, the host's /usr", argv: auditArgv(b.pid1) },
        ],
      },
      { env },
    );
    const [fig, host, ref] = measured.results;
    const met = fig.median < GOAL_MS;
    const markdown = [
      "## The audit (`--self-check --json`, no --probe)",
      "",
      `Goal: the full audit without --probe under ${ms(GOAL_MS)} on a /state of 100,000 entries.`,
      "",
      `Result: **${ms(fig.median)}** (median of the whole command) with ${entries.toLocaleString("en-US")} entries below /state and the image's /usr ` +
        `(${baseUsrEntries.toLocaleString("en-US")} entries; the audit visited ${visitedOf(seenImage.doc).toLocaleString("en-US")} on the image's filesystems): goal ${verdict(met)}. ` +
        `With the host's /usr instead (${usrEntries.toLocaleString("en-US")} entries, ${visitedOf(seenFull.doc).toLocaleString("en-US")} visited): ${ms(host.median)}; ` +
        `the same with an empty /state: ${ms(ref.median)}. The image walk and the /state walk (both perl) run side by side, one per CPU, so the audit takes about the longer of the two. ` +
        `One audit of each outside hyperfine (a wall time as measured from Node): ${ms(seenImage.wall)}, ${ms(seenFull.wall)}, ${ms(seenEmpty.wall)}.`,
      "",
      `How: three bodies started for real in the launch sandbox (bwrap + setpriv as for the tree walk; the entrypoint took /state over, dropped to node and runs \`sleep\` as the service). ` +
        `/state holds ${dirs.toLocaleString("en-US")} directories of ${files} empty files (bench/lib/tree.mjs; the image body shares it and /workspace with the host-/usr body, so that the layout marker fits both), or nothing. ` +
        `The image's /usr is that of ${BASE_IMAGE} (scripts/image/make-base.sh: debootstrap bookworm minbase plus Node 24.20.0, the image test's stand-in for node:24.20.0-bookworm-slim), exported from Docker and bound read-only. ` +
        "Each command is what `docker exec CONTAINER clankie-separate --self-check --json` does as root: nsenter into the body's mount, pid and IPC namespaces, " +
        "setpriv to the launch's six capabilities and NoNewPrivs, then the audit; nsenter and setpriv are in every command alike. " +
        `The audit judged every body \`separated\`; no \`state.*\` check failed.`,
      "",
      `Caveats: with the host's /usr the audit exits 1 (failing checks: ${failing(seenFull.doc).join(", ") || "none"}; with the image's /usr: ${failing(seenImage.doc).join(", ") || "none"}), ` +
        "so hyperfine runs with `-i` (the exit status is ignored); a failing audit runs every check all the same. Load average before the run: " +
        `${load}.`,
      "",
      codeBlock(measured.invocation),
      "",
      resultsTable(measured.results, ["audit, empty /state, the host's /usr"]),
      "",
      folded("the script that starts the full body (the empty one differs by its directory)", codeBlock(a.text)),
    ].join("\n");
    return {
      markdown,
      summary: [
        {
          part: "audit",
          measure: `--self-check --json as root, /state of ${entries.toLocaleString("en-US")} entries, the image's /usr`,
          figure: ms(fig.median),
          reference: `host's /usr ${ms(host.median)}`,
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
