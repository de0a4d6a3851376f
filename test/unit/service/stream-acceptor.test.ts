import { suite } from "uvu";
import * as assert from "uvu/assert";
import { acceptorKinds } from "../../../src/service/stream-acceptor.ts";

const test = suite("stream-acceptor");

test("a piped fd is a connection, an ignored one /dev/null at 0-2 and not open above; execa's undefined is Node's default", () => {
  // The holder's control fd is 4 here: the kinds cover fds 0-3.
  assert.equal(acceptorKinds(["pipe", "overlapped", "ignore", "pipe", "pipe"], 4), ["s", "s", "n", "s"]);
  assert.equal(acceptorKinds([undefined, null, undefined, undefined, "pipe"], 4), ["s", "s", "s", "c"]);
  assert.equal(acceptorKinds(["ignore", "ignore", "ignore", "ignore", "pipe"], 4), ["n", "n", "n", "c"]);
});

test("any other stdio keeps the holder: an inherited fd, a number, a stream, ipc", () => {
  for (const other of ["inherit", 1, { fd: 5 }, "ipc"]) {
    assert.is(acceptorKinds(["pipe", other, "pipe", "pipe"], 3), undefined, JSON.stringify(other));
    assert.is(acceptorKinds(["pipe", "pipe", "pipe", other, "pipe"], 4), undefined, `above 2: ${JSON.stringify(other)}`);
  }
});

test.run();
