/* Environments the unit and sandbox tests share: what the allowlist keeps, and what the entrypoint sets for the service. */

/** One variable of every kind the allowlist keeps (exact names and the LC_ prefix). */
export const TERMINAL_ENV = { TERM: "xterm-256color", COLORTERM: "truecolor", LANG: "C.UTF-8", LANGUAGE: "en", LC_ALL: "C.UTF-8", LC_CTYPE: "C.UTF-8", TZ: "UTC", NO_COLOR: "1" };

/** What the entrypoint sets in the service's environment for the image's users (ADR 0272), written out here rather than taken from src/. */
export const SERVICE_OWN_ENV = {
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  HOME: "/home/node",
  USER: "node",
  LOGNAME: "node",
  CLANKIE_SEPARATION: "1",
  CLANKIE_AGENT_USER: "clankie-agent",
  CLANKIE_AGENT_UID: "1001",
  CLANKIE_AGENT_EXEC: "/usr/local/sbin/clankie-agent-exec",
};
