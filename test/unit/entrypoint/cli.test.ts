import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type EntrypointRequest, parseEntrypointArgs } from "../../../src/entrypoint/cli.ts";
import { EXIT } from "../../../src/constants.ts";
import { type Accepts, assertRefusal, catchRefusal, type Refuses } from "../../helpers/refusal.ts";

/* ------------------------------------------------------ clankie-separate -- */

const entrypoint = suite("parseEntrypointArgs");
const SEP = (fix: string): string => `${fix} (see clankie-separate --help)`;

const ENTRYPOINT_ACCEPTS: Accepts<EntrypointRequest>[] = [
  { argv: ["--help"], want: { kind: "help" } },
  { argv: ["-h"], want: { kind: "help" } },
  { argv: ["--help", "--bogus"], want: { kind: "help" } },
  { argv: ["--version"], want: { kind: "version" } },
  { argv: ["--", "node", "--help"], want: { kind: "run", command: ["node", "--help"] } },
  { argv: ["--", "--version"], want: { kind: "run", command: ["--version"] } },
  { argv: ["node", "server.js"], want: { kind: "run", command: ["node", "server.js"] } },
  { argv: ["node", "--", "--help"], want: { kind: "run", command: ["node", "--", "--help"] } },
];

for (const { argv, want } of ENTRYPOINT_ACCEPTS) {
  entrypoint(`accepts ${JSON.stringify(argv)}`, () => {
    assert.equal(parseEntrypointArgs(argv), want);
  });
}

const ENTRYPOINT_REFUSES: Refuses[] = [
  { argv: [], what: "no service command given", fix: SEP("name the service command: clankie-separate -- COMMAND [ARG...]") },
  { argv: ["--"], what: "no command given", fix: SEP("put the command after --: clankie-separate -- COMMAND [ARG...]") },
  { argv: ["--", ""], what: "no command given", fix: SEP("put the command after --: clankie-separate -- COMMAND [ARG...]") },
  { argv: ["-x"], what: 'unknown option "-x"', fix: SEP("put the service command after --: clankie-separate -- COMMAND [ARG...]") },
  { argv: ["-"], what: 'unknown option "-"', fix: SEP("put the service command after --: clankie-separate -- COMMAND [ARG...]") },
  { argv: ["--json", "node"], what: 'unknown option "--json"', fix: SEP("put the service command after --: clankie-separate -- COMMAND [ARG...]") },
  // The verification stage is perl now (src/stage/): the old stage flag is an unknown option.
  { argv: ["--verify-service", "--uid=1000", "--gid=1000", "--groups=1000", "--", "x"], what: 'unknown option "--verify-service"', fix: SEP("put the service command after --: clankie-separate -- COMMAND [ARG...]") },
];

for (const { argv, what, fix } of ENTRYPOINT_REFUSES) {
  entrypoint(`refuses ${JSON.stringify(argv)}`, () => {
    assertRefusal(() => parseEntrypointArgs(argv), { exitCode: 64, what, fix });
  });
}

entrypoint("the usage exit code is 64 (sysexits EX_USAGE)", () => {
  assert.is(EXIT.usage, 64);
});

entrypoint("does not change the caller's argv", () => {
  const argv = ["--", "node", "server.js"];
  const request = parseEntrypointArgs(argv);
  assert.ok(request.kind === "run");
  request.command.push("more");
  assert.equal(argv, ["--", "node", "server.js"]);
});

entrypoint("an empty service command is refused at parsing, with or without --", () => {
  assert.is(catchRefusal(() => parseEntrypointArgs([""])).exitCode, EXIT.usage);
  assert.is(catchRefusal(() => parseEntrypointArgs(["--", ""])).exitCode, EXIT.usage);
});

entrypoint.run();

