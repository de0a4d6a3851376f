/*
 * The house's arrows run one way (docs/architecture.md):
 *
 *   src/main.ts                      picks a role by name
 *   roles: entrypoint/ agent-exec/ self-check/, and the service's package
 *          API (system-exec.ts with service/)
 *   shared floors: exec/ layout/ stage/ confinement.ts seccomp-filter.ts cli.ts help.ts private-groups.ts
 *          accounts.ts embedded-bundle.ts perl/
 *   ground: os/ constants.ts report.ts build-info.ts
 *
 * No role imports another role; nothing below the roles imports a role or
 * main.ts; the ground floor imports nothing above it. This test reads every
 * relative import under src/ and fails on an arrow that runs up or across.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { REPO } from "../../helpers/paths.ts";

const SRC = join(REPO, "src");

/** The room a module (path relative to src/) belongs to. */
export function roomOf(path: string): string {
  const [top] = path.split("/");
  if (path === "main.ts") return "main";
  if (path === "system-exec.ts" || top === "service") return "role:service";
  if (["entrypoint", "agent-exec", "self-check"].includes(top!)) return `role:${top}`;
  if (top === "os" || ["constants.ts", "report.ts", "build-info.ts"].includes(path)) return "ground";
  return "floor";
}

const LEVEL: Record<string, number> = { ground: 0, floor: 1, role: 2, main: 3 };
const level = (room: string): number => LEVEL[room.startsWith("role:") ? "role" : room]!;

/** Why an import from `from` to `to` (both relative to src/) runs the wrong way, or undefined. */
export function wrongArrow(from: string, to: string): string | undefined {
  const [a, b] = [roomOf(from), roomOf(to)];
  if (a === b) return undefined;
  if (a.startsWith("role:") && b.startsWith("role:")) return `${from} (${a}) imports another role: ${to} (${b})`;
  if (level(b) > level(a)) return `${from} (${a}) imports upward: ${to} (${b})`;
  return undefined;
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [join(dir, entry.name)] : [],
  );
}

const IMPORT = /(?:^|\n)\s*(?:import|export)[^"';]*?from\s*["'](\.[^"']+)["']/g;

function arrows(): [string, string][] {
  return files(SRC).flatMap((file) => {
    const from = relative(SRC, file);
    return [...readFileSync(file, "utf8").matchAll(IMPORT)].map((m) => [from, relative(SRC, normalize(join(dirname(file), m[1]!)))] as [string, string]);
  });
}

test("no arrow runs up or across between rooms", () => {
  const all = arrows();
  assert.ok(all.length > 100, `read ${all.length} imports`);
  assert.equal(all.map(([a, b]) => wrongArrow(a, b)).filter(Boolean), []);
});

/** The import circles among `arrows` (type-only imports included), each as a path that ends where it starts; none repeated. */
export function importCircles(all: readonly (readonly [string, string])[]): string[][] {
  const next = new Map<string, string[]>();
  for (const [from, to] of all) next.set(from, [...(next.get(from) ?? []), to]);
  const circles: string[][] = [];
  const seen = new Set<string>();
  const done = new Set<string>();
  const visit = (module: string, path: string[]) => {
    if (path.includes(module)) {
      const circle = [...path.slice(path.indexOf(module)), module];
      const key = [...circle.slice(0, -1)].sort().join(" ");
      if (!seen.has(key)) circles.push(circle);
      seen.add(key);
      return;
    }
    if (done.has(module)) return;
    for (const to of next.get(module) ?? []) visit(to, [...path, module]);
    done.add(module);
  };
  for (const module of [...next.keys()].sort()) visit(module, []);
  return circles;
}

test("no import circle under src/, type-only imports included", () => {
  assert.equal(importCircles(arrows()).map((circle) => circle.join(" -> ")), []);
});

test("the circle check sees a circle of types, and a longer one", () => {
  assert.equal(importCircles([["self-check/facts.ts", "self-check/state.ts"], ["self-check/state.ts", "self-check/facts.ts"]]), [["self-check/facts.ts", "self-check/state.ts", "self-check/facts.ts"]]);
  assert.equal(importCircles([["a.ts", "b.ts"], ["b.ts", "c.ts"], ["c.ts", "a.ts"], ["c.ts", "d.ts"]]).length, 1);
  assert.equal(importCircles([["a.ts", "b.ts"], ["b.ts", "c.ts"], ["a.ts", "c.ts"]]), []);
});

test("the rule sees an arrow across roles, upward, and from the ground floor", () => {
  assert.match(wrongArrow("self-check/state.ts", "entrypoint/state-layout.ts") ?? "", /imports another role/);
  assert.match(wrongArrow("entrypoint/tree-walk.ts", "self-check/mounts.ts") ?? "", /imports another role/);
  assert.match(wrongArrow("cli.ts", "agent-exec/confinement.ts") ?? "", /imports upward/);
  assert.match(wrongArrow("os/proc-status.ts", "accounts.ts") ?? "", /imports upward/);
  assert.match(wrongArrow("service/agent-stop.ts", "self-check/run.ts") ?? "", /imports another role/);
  assert.is(wrongArrow("self-check/state.ts", "layout/state.ts"), undefined);
  assert.is(wrongArrow("main.ts", "entrypoint/run.ts"), undefined);
});

test.run();
