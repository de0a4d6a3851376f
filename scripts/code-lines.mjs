#!/usr/bin/env node
/*
 * Code lines of what each bundle of the executable can run, after a build
 * (node build.mjs writes .build/*.meta.json, esbuild's metafiles).
 *
 *   node scripts/code-lines.mjs [--json]
 *
 * A code line is a line with something on it that is neither blank nor
 * comment: for .ts, .mjs and .js the TypeScript parser's tokens (so a "//"
 * inside a string or a regular expression stays code, a /* *\/ or JSDoc
 * block does not), for .pl every line but blank ones, "#" comments, POD and
 * what follows __END__. Each module esbuild put into a bundle (some bytes in
 * its output) is counted whole, as it is read, and each Perl program the
 * bundle carries: those imported as text (in the metafile), and the stage's
 * program, which build.mjs defines into every bundle that holds
 * src/stage/stage.ts (__CLANKIE_STAGE__, a string esbuild inlines: stage.pl
 * less its comments and the sections of roles the bundle never asks for) and
 * writes beside it as .build/NAME.stage.pl; the other defines are data (the
 * seccomp filters, system call numbers). The main
 * script (.build/bundle.cjs, less the shim's bundle it carries as a comment)
 * runs before every role.
 *
 * Rows: "root start" is the entrypoint's bundle, which the executable runs
 * started as clankie-separate with a service command (as root: the root
 * phase; as any other uid: the exec of the service command); "audit" is
 * --self-check's bundle (with --help and --version of both names);
 * "spawner (resident + grab + stage)" is clankie-agent-exec's own bundle,
 * which the executable runs as the resident spawner (--spawner): all of it
 * loads in the one process that holds SETUID+SETGID for the body's life, and
 * it carries what runs with those capabilities for every spawn and stop, the
 * grab (src/perl/spawn-grab.pl, imported as text) and the stage program (the
 * agent's and the signal's roles, no [private] section); "shim, private job
 * (shim + stage)" is the private-job bundle, which it runs for every other
 * command line of that name (a command after --, --signal, and the spawner's
 * --private-job and --private-cleanup): the shim with
 * src/agent-exec/private-job.ts, and the stage with the cleanup role and
 * the [private] sections. docs/architecture.md shows these figures, and
 * test/unit/project/code-lines.test.ts holds the root start and the spawner
 * to their ceilings.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const ts = createRequire(import.meta.url)("typescript");

/** The bundles build.mjs writes, by row. */
export const BUNDLES = [
  { row: "root start", meta: "clankie-separate.meta.json" },
  { row: "audit", meta: "clankie-self-check.meta.json" },
  { row: "spawner (resident + grab + stage)", meta: "clankie-agent-exec.meta.json" },
  { row: "shim, private job (shim + stage)", meta: "clankie-private-job.meta.json" },
];

const STAGE_MODULE = "src/stage/stage.ts";

/** Code lines of TypeScript or JavaScript text: lines on which a token that is not a comment lies. */
export function scriptCodeLines(text, fileName = "file.ts") {
  const kind = fileName.endsWith(".ts") ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, kind);
  const lines = new Set();
  const visit = (node) => {
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    const children = node.getChildren(source);
    if (children.length > 0) {
      for (const child of children) visit(child);
      return;
    }
    const start = node.getStart(source);
    const end = node.getEnd();
    if (node.kind === ts.SyntaxKind.EndOfFileToken || end <= start) return; // and an empty list
    const first = source.getLineAndCharacterOfPosition(start).line;
    const last = source.getLineAndCharacterOfPosition(Math.max(start, end - 1)).line;
    const all = text.split("\n");
    for (let line = first; line <= last; line++) if (all[line].trim() !== "") lines.add(line);
  };
  visit(source);
  return lines.size;
}

/** Code lines of a Perl program: not blank, not a "#" comment, not POD, not after __END__ or __DATA__. */
export function perlCodeLines(text) {
  let count = 0;
  let pod = false;
  for (const line of text.split("\n")) {
    if (pod) {
      if (/^=cut\b/.test(line)) pod = false;
      continue;
    }
    if (/^=[a-zA-Z]/.test(line)) {
      pod = !/^=cut\b/.test(line);
      continue;
    }
    if (/^__(END|DATA)__\s*$/.test(line)) break;
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    count += 1;
  }
  return count;
}

export function fileCodeLines(path) {
  const text = readFileSync(join(root, path), "utf8");
  return path.endsWith(".pl") ? perlCodeLines(text) : scriptCodeLines(text, path);
}

/** The source files (relative to the checkout) a metafile's bundle holds: modules with bytes in the output, and the Perl programs it carries (`stage`: its stage program). */
export function bundleFiles(metafile, stage) {
  const files = new Set();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      if (bytesInOutput > 0 && !input.startsWith("<define:")) files.add(input); // defines are data: the seccomp filters
    }
  }
  if (files.has(STAGE_MODULE)) files.add(stage);
  return [...files].sort();
}

/** The main script's code lines, the shim's bundle (a comment in it) left out. */
export function mainScriptCodeLines(text) {
  return scriptCodeLines(text.replace(/^function shim\(\) \{\/\*[\s\S]*?\*\/\}$/m, "function shim() {}"), "bundle.cjs");
}

export function measure(build = join(root, ".build")) {
  const main = mainScriptCodeLines(readFileSync(join(build, "bundle.cjs"), "utf8"));
  const rows = BUNDLES.filter((bundle) => existsSync(join(build, bundle.meta))).map((bundle) => {
    const stage = relative(root, join(build, bundle.meta.replace(/\.meta\.json$/, ".stage.pl")));
    const files = bundleFiles(JSON.parse(readFileSync(join(build, bundle.meta), "utf8")), stage).map((path) => ({ path, lines: fileCodeLines(path) }));
    return { row: bundle.row, files, lines: main + files.reduce((sum, file) => sum + file.lines, 0) };
  });
  return { mainScript: main, rows };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = measure();
  if (process.argv.includes("--json")) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } else {
    for (const row of result.rows) {
      process.stdout.write(`${row.row}: ${row.lines} code lines (main script ${result.mainScript})\n`);
      for (const file of row.files) process.stdout.write(`  ${String(file.lines).padStart(5)}  ${file.path}\n`);
    }
  }
}
