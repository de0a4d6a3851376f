/*
 * The everyday battery's builds and JVM temporary files (issue 34): a pip
 * wheel and a pip install -e of a local project, a cargo workspace build and
 * a JVM temporary file, as agent work in each confined mode beside the
 * agent's uid alone (the control). judgeEveryday skips an action whose
 * control fails ("not judged"): a missing toolchain would pass it silently,
 * so here each must work as the uid alone, and the outcome in each mode is
 * stated, not left to the collateral count.
 */
import { type EverydayResult, MODES } from "./everyday.ts";

/** Work in every confined mode: the builds rename between directories (setuptools' build tree, rustc's .rmeta), which a private job once refused (EXDEV). */
export const BUILDS_THAT_WORK = ["pip-wheel", "pip-editable", "cargo-workspace", "jvm-tempfile-tmpdir", "jvm-tool-options"] as const;
/** java.io.tmpdir left at the JDK's /tmp: works where /tmp is writable (a plain job, no network); a private job is refused /tmp (EACCES). */
export const JVM_DEFAULT = "jvm-tempfile";
/** What Tmp.java prints when /tmp is refused. */
export const JVM_REFUSED = /^Tmp: java\.nio\.file\.AccessDeniedException: \/tmp\/ev-\d+\.tmp$/m;

/** One line per action whose outcome is not the stated one; empty when all hold. */
export function buildProblems(results: readonly EverydayResult[]): string[] {
  const problems: string[] = [];
  const byId = new Map(results.map((r) => [r.id, r] as const));
  const say = (id: string, where: string, run: { exitCode: number | null; stderr: string }, expected: string) =>
    problems.push(`${id} ${where}: ${expected}, got exit ${run.exitCode}${run.stderr ? `: ${run.stderr.split("\n").slice(-2).join(" | ")}` : ""}`);
  for (const id of [...BUILDS_THAT_WORK, JVM_DEFAULT]) {
    const r = byId.get(id);
    if (!r) {
      problems.push(`${id}: not in the battery's results`);
      continue;
    }
    if (r.control.exitCode !== 0) say(id, "as the uid alone (the control)", r.control, "works");
    for (const mode of MODES) {
      const run = r.modes[mode];
      if (id === JVM_DEFAULT && mode === "private") {
        if (run.exitCode === 0 || !JVM_REFUSED.test(run.stderr)) say(id, `in ${mode}`, run, "refused /tmp (AccessDeniedException)");
      } else if (run.exitCode !== 0) say(id, `in ${mode}`, run, "works");
    }
  }
  return problems;
}
