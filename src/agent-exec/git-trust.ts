/*
 * git as the agent in the service's repositories.
 *
 * git refuses a repository whose directory another uid owns ("detected
 * dubious ownership", git-config(1), safe.directory) unless safe.directory
 * names it. Repositories the service created in /workspace are node's, so
 * the agent's git refuses them all. git reads safe.directory only from
 * protected configuration: the system and global files and the command
 * scope, which includes GIT_CONFIG_COUNT / GIT_CONFIG_KEY_<n> /
 * GIT_CONFIG_VALUE_<n> (git(1), ENVIRONMENT). Those variables are set here,
 * in the agent's environment alone:
 *
 * - Nothing the agent can write widens what the service's git trusts: the
 *   service's git never sees this environment, and /etc/gitconfig and the
 *   service's HOME stay out of the agent's reach. Repositories the agent
 *   creates stay refused by service-uid git (ADR 0272, Consequences).
 * - The value is "*". git 2.39 (Debian bookworm) matches a value either as
 *   "*" or as one exact worktree path; "/workspace/*" (a leading-path
 *   match) needs git 2.46, and an exact path cannot name a repository the
 *   service creates while the job runs. "*" gives the agent nothing it can
 *   use against another uid: the owners it stops distrusting are the service
 *   and root, whose configuration the agent's git then runs as the agent;
 *   every other agent job is the agent's own uid, which git trusted already.
 *
 * Appended after any command-scope entries the service passed with --env,
 * so that a `safe.directory=` reset there cannot undo it. git parses the
 * count with strtoul(3) (config.c: an empty value is 0); a count that is not
 * plain decimal digits is left as it is: git then refuses it with its own
 * message ("bogus count in GIT_CONFIG_COUNT"), and guessing an index could
 * overwrite the service's entry.
 */
import type { Environment } from "../exec/environment.ts";

export const GIT_SAFE_DIRECTORY = "*";

/** config.c refuses a count above INT_MAX; ours is one more than the service's. */
const MAX_GIVEN_COUNT = 2 ** 31 - 2;

/** `env` plus one command-scope entry safe.directory=*, after those already there. */
export function withGitTrust(env: Environment): Environment {
  const given = env.GIT_CONFIG_COUNT;
  let index = 0;
  if (given !== undefined && given !== "") {
    if (!/^[0-9]{1,12}$/.test(given) || Number(given) > MAX_GIVEN_COUNT) return env;
    index = Number(given);
  }
  return {
    ...env,
    GIT_CONFIG_COUNT: String(index + 1),
    [`GIT_CONFIG_KEY_${index}`]: "safe.directory",
    [`GIT_CONFIG_VALUE_${index}`]: GIT_SAFE_DIRECTORY,
  };
}
