/*
 * The stage keys of the Landlock domain and the extra paths (the seccomp
 * program's decisions are test/unit/seccomp.test.ts).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AGENT_DEVICE_PATHS, AGENT_WRITABLE_PATHS, confinementKeys, extraPathProblem, NO_EXTRA_CONFINEMENT, seccompProgram } from "../../../src/confinement.ts";

const test = suite("confinement");

test("the stage keys: defaults, the service's extra paths and ports, strict", () => {
  const best = confinementKeys(NO_EXTRA_CONFINEMENT, "x64");
  assert.is(best[0], "confine=best");
  assert.equal(best.filter((k) => k.startsWith("rw=")), AGENT_WRITABLE_PATHS.map((p) => `rw=${p}`));
  assert.equal(best.filter((k) => k.startsWith("dev=")), AGENT_DEVICE_PATHS.map((p) => `dev=${p}`));
  assert.equal(best.filter((k) => k.startsWith("ro")), ["ro=/state/install"]);
  assert.ok(best.includes("hide=state"));
  assert.is(best.filter((k) => /^no(connect|bind)=/.test(k)).length, 0, "no port rules unless asked: they cost a rule per port");
  assert.is(best.at(-1), `seccomp=${seccompProgram("x64", { ptrace: false, network: "all" }).toString("hex")}`);
  const extra = confinementKeys({ strict: true, allowWrite: ["/run/w"], allowRead: ["/opt/r"], denyConnect: [9000, 80, 9000], denyBind: [8080], network: "all" }, "x64");
  assert.is(extra[0], "confine=strict");
  assert.ok(extra.includes("rw+=/run/w") && extra.includes("ro+=/opt/r"));
  assert.ok(extra.includes("noconnect=80,9000") && extra.includes("nobind=8080"));
});

test("extra paths: absolute and normal, never / or /state", () => {
  for (const ok of ["/run/worker", "/state/sockets/w1", "/a b/c"]) assert.is(extraPathProblem(ok), undefined, ok);
  const bad: [string, RegExp][] = [
    ["run/w", /not absolute/],
    ["/", /not a normal path/],
    ["/state", /all of \/state/],
    ["/a/../state", /not a normal path/],
    ["/a/./b", /not a normal path/],
    ["/a//b", /not a normal path/],
    ["/a/", /not a normal path/],
    ["/a\0b", /NUL/],
  ];
  for (const [path, why] of bad) assert.match(extraPathProblem(path) ?? "", why, path);
});

test.run();
