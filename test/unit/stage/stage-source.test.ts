/*
 * What a bundle carries of stage.pl (build.mjs defines it): the roles it asks
 * for, cut so that stageProgram gives each of them the program it gives from
 * the whole; the entrypoint's bundle carries the service's alone.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { stageProgram, type StageRole } from "../../../src/stage/stage.ts";
import { forRoles, stageSource } from "../../../src/stage/stage-source.ts";

const test = suite("stage source");
const ROLES: StageRole[] = ["service", "agent", "signal", "cleanup"];

test("a bundle's cut gives each of its roles the program the whole source gives (a private job's too)", () => {
  const whole = stageSource();
  for (const role of ROLES) {
    assert.is(stageProgram([role], forRoles(whole, [role])), stageProgram([role], whole), role);
    assert.is(stageProgram([role], stageSource(process.arch, [role, "signal"])), stageProgram([role], whole), `${role} with signal`);
  }
  assert.is(stageProgram(["agent"], forRoles(whole, ["agent"]), true), stageProgram(["agent"], whole, true), "private job");
});

test("the service's cut holds no section of another role, and is about half the whole (at most 51%)", () => {
  const whole = stageSource();
  const service = stageSource(process.arch, ["service"]);
  for (const name of ["[agent]", "[signal]", "[cleanup]", "[private]"]) {
    assert.ok(whole.includes(`# ---- ${name} `), `the whole holds ${name}`);
    assert.not.ok(service.includes(`# ---- ${name} `), `the service's cut holds ${name}`);
  }
  assert.ok(service.includes("# ---- exec: ") && service.includes("# ---- capabilities: "), "the sections every role keeps stay");
  // 50.1% since the started marker's steps joined the exec every role shares (its size on the root path is held by code-lines.test.ts).
  assert.ok(service.length * 100 <= whole.length * 51, `${service.length} of ${whole.length} bytes`);
  // Control: from the service's cut an agent's program lacks the agent's own steps.
  assert.is.not(stageProgram(["agent"], service), stageProgram(["agent"], whole));
});

test.run();
