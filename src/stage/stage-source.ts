/*
 * The verification stage's program as build.mjs puts it into a bundle (the
 * define __CLANKIE_STAGE__, which stage.ts reads): stage.pl with its
 * protocol tables (protocol.ts) and this architecture's system call numbers
 * filled in, less its comments, and less
 * the sections of the roles the bundle never asks for. Build time and tests
 * only: no bundle imports it (build.mjs checks), and scripts/text-modules.mjs
 * defines the same for src/ run directly.
 */
import { syscallNumbers } from "../os/syscalls.ts";
import { protocolPerl, STAGE_ROLE_KEYS } from "./protocol.ts";
import { PRIVATE_SECTION, SECTION, STAGE_ROLES } from "./sections.ts";
import type { StageRole } from "./stage.ts";
import STAGE_TEMPLATE from "./stage.pl";

/** Every role, as the protocol declares them. */
const ALL_ROLES = Object.keys(STAGE_ROLE_KEYS) as StageRole[];

/** stage.pl with its protocol tables (src/stage/protocol.ts) and the system call numbers of `arch` (process.arch spelling) filled in, every comment kept. */
export function stageText(arch: string = process.arch): string {
  const numbers: Readonly<Record<string, number>> = { ...syscallNumbers(arch) };
  if (STAGE_ROLES !== `(${ALL_ROLES.join("|")})`) throw new Error(`stage: sections.ts lists the roles ${STAGE_ROLES}, protocol.ts declares ${ALL_ROLES.join(", ")}`);
  if (STAGE_TEMPLATE.split(STAGE_ROLES).length !== 2) throw new Error(`stage: stage.pl must list the roles ${STAGE_ROLES} exactly once (stageProgram narrows it)`);
  if (STAGE_TEMPLATE.split("@PROTOCOL@").length !== 2) throw new Error("stage: stage.pl must hold @PROTOCOL@ exactly once (src/stage/protocol.ts fills it in)");
  return STAGE_TEMPLATE.replace("@PROTOCOL@", () => protocolPerl()).replace(/@([a-zA-Z]+)@/g, (_, name: string) => {
    if (numbers[name] === undefined) throw new Error(`stage: no system call number for @${name}@`);
    return String(numbers[name]);
  }).trim();
}

/**
 * `text` without its blank lines and its lines of comment alone, but for
 * the section headers stageProgram cuts at. perl compiles about 3 KB a
 * millisecond, comments included, and the agent's program is compiled on
 * every spawn: a third of stage.pl is comments (0.2 ms of each spawn, and as
 * many bytes fewer in two execve(2) calls). A comment at the end of a line
 * of code stays. The program perl runs is the same: test/unit/stage shows
 * B::Deparse prints each role's program alike with and without them.
 */
export function withoutComments(text: string): string {
  return text
    .split("\n")
    .filter((line) => {
      const start = line.trimStart();
      return start !== "" && (!start.startsWith("#") || line.startsWith(SECTION.slice(1)));
    })
    .join("\n");
}

/**
 * `source` without the sections of the roles not in `roles` (a [private]
 * section goes with the agent's, unless `privateJob` is false: the ordinary
 * shim's bundle, which runs no private job): what a bundle that asks only for `roles`
 * carries. stageProgram cuts each of them from it as it cuts it from the
 * whole (test/unit/stage/stage-source.test.ts).
 */
export function forRoles(source: string, roles: readonly StageRole[], privateJob = true): string {
  const [head, ...sections] = source.split(SECTION);
  const keep = (section: string) => {
    if (!section.startsWith("[")) return true;
    const name = section.slice(1, section.indexOf("]"));
    return (roles as readonly string[]).includes(name) || (name === PRIVATE_SECTION && privateJob && roles.includes("agent"));
  };
  return [head, ...sections.filter(keep)].join(SECTION);
}

/** The Perl program for `arch` as a bundle that asks for `roles` carries it: stageText without its comments and without the other roles' sections. */
export function stageSource(arch: string = process.arch, roles: readonly StageRole[] = ALL_ROLES, privateJob = true): string {
  return forRoles(withoutComments(stageText(arch)), roles, privateJob);
}
