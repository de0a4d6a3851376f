/*
 * The request channel between the service (src/service/spawner-client.ts)
 * and the resident spawner (src/agent-exec/spawner.ts): one JSON object a
 * line each way. Types only: neither bundle carries a byte of it.
 */

/** What the service sends. */
export type SpawnerRequest =
  | { t: "spawn"; id: number; holder: number; socket: string; argv: readonly string[]; env: Readonly<Record<string, string>> }
  | { t: "signal"; seq: number; signal: string; job?: number; pgid?: number }
  | { t: "release"; seq: number; pid: number };

/** What the spawner answers. */
export type SpawnerReply =
  | { t: "started"; id: number; pid: number }
  | { t: "exit"; id: number; code: number | null; signal: string | null; line: string }
  | { t: "done"; seq: number; code: number | null; signal: string | null; stderr: string };
