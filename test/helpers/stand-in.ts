/*
 * The stand-in service (test/fixtures/stand-in-service.mjs) in the launch
 * sandbox: a body as today's single-uid image leaves it, seeded by the
 * service itself, and one run of a mode whose JSON line is the result.
 */
import { withControlRunner } from "./control-runner.ts";
import { chownSync } from "node:fs";
import * as assert from "uvu/assert";
import { Body, IDS, type LaunchOptions, SANDBOX_FIXTURES, SANDBOX_NODE } from "./sandbox.ts";

export const STAND_IN = [SANDBOX_NODE, `${SANDBOX_FIXTURES}/stand-in-service.mjs`];

/** Everything node's (today's body), seeded by the service. */
export function seededBody(options: { passwd?: string; group?: string } = {}): Body {
  const body = new Body(options);
  chownSync(body.state, IDS.service, IDS.service);
  chownSync(body.workspace, IDS.service, IDS.service);
  const seeded = body.run({ as: "node", command: [...STAND_IN, "seed"] });
  assert.is(seeded.status, 0, seeded.stderr);
  return body;
}

export interface ServiceRun<T> {
  json: T;
  stdout: string;
  stderr: string;
  status: number | null;
}

/** Runs a mode of the stand-in service as the ADR launch and parses the JSON line it prints. */
export function serviceJson<T>(body: Body, args: readonly string[], launch: Partial<LaunchOptions> = {}): ServiceRun<T> {
  const run = body.run({ as: "root", command: [...STAND_IN, ...args], timeoutMs: 90_000, ...launch });
  // On a terminal, characters the control injected with TIOCSTI are echoed before the JSON.
  const line = run.stdout.split(/\r?\n/).find((l) => l.includes('{"'));
  if (!line) throw new Error(`no JSON from the service (exit ${run.status}): ${run.stdout}\n${run.stderr}`);
  return { json: JSON.parse(line.slice(line.indexOf("{"))) as T, stdout: run.stdout, stderr: run.stderr, status: run.status };
}

export interface AgentResult {
  pid: number;
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** serviceJson, with the root-side control runner started beside the launch (test/helpers/control-runner.ts): for modes whose controls run as the agent's uid alone. */
export function serviceJsonWithControls<T>(body: Body, args: readonly string[], launch: Partial<LaunchOptions> = {}): ServiceRun<T> {
  return serviceJson<T>(body, args, { ...launch, direct: true, command: withControlRunner([...STAND_IN, ...args]) });
}

/** One spawnAgent call by the service (its "agent" mode), with spawnAgent's options. */
export function agentRun(body: Body, options: object, command: readonly string[], launch: Partial<LaunchOptions> = {}): AgentResult {
  return serviceJson<AgentResult>(body, ["agent", JSON.stringify(options), ...command], launch).json;
}
