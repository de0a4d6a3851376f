import { test } from "uvu";
import * as assert from "uvu/assert";
import { AgentStopError, STOP_RETRY_DELAYS_MS } from "../../../src/service/agent-stop.ts";

test("an undelivered stop: 12 tries over about 6.3 s, and an error that says the job may still run", () => {
  assert.is(STOP_RETRY_DELAYS_MS.length + 1, 12);
  assert.is(STOP_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0), 6260);
  const error = new AgentStopError(42, "SIGKILL", 12, "the signal stage exited 127: perl: error while loading shared libraries");
  assert.instance(error, Error);
  assert.is(error.name, "AgentStopError");
  assert.is(error.failed, true);
  assert.is(error.message, "cannot stop agent process group 42: SIGKILL was not delivered after 12 tries (last: the signal stage exited 127: perl: error while loading shared libraries); the job may still be running");
});

test.run();
