import { suite } from "uvu";
import * as assert from "uvu/assert";
import { optionValue, parseCommand, parseInteger } from "../../src/cli.ts";
import { assertRefusal } from "../helpers/refusal.ts";

/* The parts the roles' parsers share. */

const shared = suite("shared parsing");

shared("a whole number in range, or a usage refusal that names the option and echoes the value", () => {
  assert.is(parseInteger("p", "--n", "-5", -10, 10), -5);
  for (const text of [undefined, "", "+5", "1.0", "11", "-11", "12345678901"]) {
    assertRefusal(() => parseInteger("p", "--n", text, -10, 10), { exitCode: 64, what: `--n needs a whole number from -10 to 10, got ${JSON.stringify(text ?? "")}`, fix: "give --n a number in range (see p --help)" });
  }
});

shared("the command after -- is a copy, and an empty one is refused", () => {
  const rest = ["node", "x"];
  const command = parseCommand("p", rest);
  command.push("more");
  assert.equal(rest, ["node", "x"]);
  for (const empty of [[], [""]]) assertRefusal(() => parseCommand("p", empty), { exitCode: 64, what: "no command given", fix: "put the command after --: p -- COMMAND [ARG...] (see p --help)" });
});

shared("an option's value: after = (the first = only) or the next argument", () => {
  assert.equal(optionValue(["--a=b=c"], 0), { name: "--a", value: "b=c", next: 1 });
  assert.equal(optionValue(["x", "--a", "b"], 1), { name: "--a", value: "b", next: 3 });
  assert.equal(optionValue(["--a"], 0), { name: "--a", value: undefined, next: 2 });
  assert.equal(optionValue(["-e=X"], 0), { name: "-e=X", value: undefined, next: 2 });
});

shared.run();
