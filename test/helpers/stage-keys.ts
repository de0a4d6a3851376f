/*
 * The stage's keys in a stage argv (src/stage/stage.ts, stageArgv): the
 * arguments between the role and the "--" before the command, and where they
 * start. Shared by test/unit/stage's protocol and stage tests.
 */
export function keysOf(argv: readonly string[], role: string): { at: number; keys: string[] } {
  const at = argv.indexOf(role, argv.indexOf("-e") + 3) + 1;
  return { at, keys: argv.slice(at, argv.indexOf("--", at)) };
}
