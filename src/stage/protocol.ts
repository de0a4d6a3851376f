/*
 * The verification stage's protocol, declared once: which keys each role
 * takes, which may repeat, and the form of each value. Both sides come from
 * here. stage.pl gets these tables at build time (stage-source.ts fills
 * @PROTOCOL@ with protocolPerl's text), so perl refuses a key, a missing key
 * or a value of another form by this declaration (exit 64); stage.ts's
 * roleKeys writes the keys, and test/unit/stage/protocol.test.ts holds every
 * key it writes, for every role, to the list and forms below. Build time and
 * tests only: no bundle imports it (build.mjs checks).
 *
 * A form is a regular expression that perl and JavaScript read alike: ASCII
 * classes, (?:...), {m,n}, | and no "." (each side anchors it whole: perl's
 * \A(...)\z, JavaScript's ^(?:...)$). A key that may repeat (path=, port=)
 * is given zero or more times where the list names it; every other key
 * exactly once.
 */

import { AGENT_SIGNALS } from "../constants.ts";

const HEX = "[0-9a-f]{1,16}";
const NUMBERS = String.raw`(?:\d{1,10}(?:,\d{1,10})*)?`;
const FILTER = "(?:[0-9a-f]{16})+";
/** Anything after a slash, newlines included: a path as the caller gave it. */
const ABSOLUTE = String.raw`/[\s\S]*`;
const LEASE = String.raw`/run/clankie-private/\d{1,2}`;

export const STAGE_KEY_FORMS = {
  uid: String.raw`\d{1,10}`,
  gid: String.raw`\d{1,10}`,
  groups: NUMBERS,
  inh: HEX,
  prm: HEX,
  eff: HEX,
  amb: HEX,
  nnp: "1",
  bnd: HEX,
  umask: "[0-7]{4}",
  nproc: String.raw`(?:\d{1,9})?`,
  session: "new|own",
  fds: NUMBERS,
  cwd: ABSOLUTE,
  confine: "best|strict",
  net: HEX,
  scope: HEX,
  path: `${HEX}:(?:must|may):${ABSOLUTE}`,
  port: String.raw`${HEX}:\d{1,5}-\d{1,5}`,
  network: "all|none",
  seccomp: FILTER,
  "seccomp-alone": FILTER,
  private: `(?:${LEASE})?`,
  started: String.raw`(?:[1-9]\d{0,6})?`,
  /** A signal the shim delivers (AGENT_SIGNALS), its name without SIG, as stage.ts writes it. */
  signal: AGENT_SIGNALS.map((name) => name.slice("SIG".length)).join("|"),
  pgid: String.raw`[2-9]|[1-9]\d{1,9}`,
  lease: LEASE,
  group: String.raw`\d{1,10}`,
} as const;

export type StageKey = keyof typeof STAGE_KEY_FORMS;

export const REPEATED_STAGE_KEYS: readonly StageKey[] = ["path", "port"];

const IDENTITY_KEYS = ["uid", "gid", "groups", "inh", "prm", "eff", "amb", "nnp"] as const;

/** Each role's keys, in the order roleKeys writes them. */
export const STAGE_ROLE_KEYS = {
  service: [...IDENTITY_KEYS, "bnd", "umask"],
  agent: [...IDENTITY_KEYS, "nproc", "session", "fds", "umask", "cwd", "confine", "net", "scope", "path", "port", "network", "seccomp", "seccomp-alone", "private", "started"],
  signal: [...IDENTITY_KEYS, "fds", "signal", "pgid"],
  cleanup: [...IDENTITY_KEYS, "fds", "lease", "group", "started"],
} as const satisfies Record<string, readonly StageKey[]>;

/**
 * The agent's keys whose value one shim option gives as the stage takes it
 * (--nproc N: nproc=N). src/agent-exec/cli.ts writes them into the request's
 * stageOptions, and nothing between reads them: plan.ts and stage.ts hand
 * them on whole. So a new option the stage acts on touches four files: the
 * service's argv (src/system-exec.ts), cli.ts, this declaration and stage.pl
 * (its help line and README's table besides).
 */
export const AGENT_OPTION_KEYS = ["nproc"] as const satisfies readonly StageKey[];

/** What cli.ts writes for AGENT_OPTION_KEYS: each key's value, of its form. */
export type AgentStageOptions = { readonly [K in (typeof AGENT_OPTION_KEYS)[number]]: string };

/** stage.pl's tables (%ROLE_KEYS, %REPEATED, %FORM), as Perl: what @PROTOCOL@ stands for. */
export function protocolPerl(): string {
  for (const [key, form] of Object.entries(STAGE_KEY_FORMS)) {
    // A single-quoted Perl string keeps every backslash but one before \ or '; and "." would match alike only under /s.
    if (/['.@]|\\$/.test(form)) throw new Error(`stage protocol: the form of ${key}= cannot be written as it is: ${form}`);
  }
  const roles = Object.entries(STAGE_ROLE_KEYS).map(([role, keys]) => `  ${role} => [qw(${keys.join(" ")})],`);
  // Several forms to a line, as a reader would write them.
  const forms: string[] = [];
  for (const [key, form] of Object.entries(STAGE_KEY_FORMS)) {
    const pair = `'${key}' => '${form}',`;
    if (forms.length > 0 && forms.at(-1)!.length + pair.length < 100) forms[forms.length - 1] += ` ${pair}`;
    else forms.push(`  ${pair}`);
  }
  return [
    `my %ROLE_KEYS = (\n${roles.join("\n")}\n);`,
    `my %REPEATED = (${REPEATED_STAGE_KEYS.map((key) => `'${key}' => 1`).join(", ")});`,
    `my %FORM = (\n${forms.join("\n")}\n);`,
  ].join("\n");
}
