import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parseEnd } from "../../../src/service/job-process.ts";

const test = suite("job-process");

test("the channel's end of a job: an exit with its line, or a signal with or without SIG", () => {
  assert.equal(parseEnd("x 0 \n"), { exitCode: 0, signal: null, line: "" });
  assert.equal(parseEnd("x 71 clankie-agent-exec: the spawner has ended; restart the body\n"), { exitCode: 71, signal: null, line: "clankie-agent-exec: the spawner has ended; restart the body" });
  assert.equal(parseEnd("k SIGTERM\n"), { exitCode: null, signal: "SIGTERM", line: "" });
  assert.equal(parseEnd("k KILL\n"), { exitCode: null, signal: "SIGKILL", line: "" });
});

test("anything else ends the job as a failure of the channel (71), as the holder exits 71 on a line it cannot read", () => {
  assert.equal(parseEnd(""), { exitCode: 71, signal: null, line: "" });
  assert.equal(parseEnd("z 3"), { exitCode: 71, signal: null, line: "" });
});

test.run();
