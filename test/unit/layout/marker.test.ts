import { test } from "uvu";
import * as assert from "uvu/assert";
import { formatMarker, parseMarker } from "../../../src/layout/marker.ts";

test("formatMarker: one line, version, device and inode", () => {
  assert.is(formatMarker({ version: 1, dev: 2049, ino: 131074 }), "version=1 dev=2049 ino=131074\n");
  assert.is(formatMarker({ version: 0, dev: 0, ino: 0 }), "version=0 dev=0 ino=0\n");
});

test("parseMarker reads back what formatMarker wrote", () => {
  for (const marker of [
    { version: 1, dev: 2049, ino: 131074 },
    { version: 0, dev: 0, ino: 0 },
    { version: 12, dev: 4294967295, ino: 9007199254740991 },
  ]) {
    assert.equal(parseMarker(formatMarker(marker)), marker);
  }
});

test("parseMarker: anything else is no marker (the next start walks again)", () => {
  const bad = [
    "",
    "version=1 dev=2049 ino=131074",
    "version=1 dev=2049 ino=131074\n\n",
    "version=1 dev=2049 ino=131074\nversion=2 dev=1 ino=1\n",
    "\nversion=1 dev=2049 ino=131074\n",
    " version=1 dev=2049 ino=131074\n",
    "version=1  dev=2049 ino=131074\n",
    "version=1 ino=131074 dev=2049\n",
    "version=1 dev=2049\n",
    "version=-1 dev=2049 ino=131074\n",
    "version=1 dev=0x801 ino=131074\n",
    "version=1 dev=2049 ino=1e5\n",
    "version=1.0 dev=2049 ino=131074\n",
    "version=1 dev=2049 ino=131074\r\n",
    "version= dev=2049 ino=131074\n",
    "VERSION=1 dev=2049 ino=131074\n",
  ];
  for (const text of bad) assert.is(parseMarker(text), undefined, JSON.stringify(text));
});

test.run();
