/*
 * src/confinement.ts: the Landlock rules and stage keys as the stage receives
 * them, the extra paths and the built seccomp filters it looks up (the
 * filters themselves: test/unit/seccomp-filter.test.ts).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { lstatSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { confinementKeys, extraPathProblem, imageTopLevel, landlockRules, NO_EXTRA_CONFINEMENT, portRules, seccompHex } from "../../src/confinement.ts";

const test = suite("confinement");

/*
 * The expectations are written here, never read from src/confinement.ts: a
 * path added to what the agent may write, or a right dropped, must fail a test.
 */
/** What agent work may write whole, and the devices a shell writes and uses as terminals. */
const WRITABLE = ["/workspace", "/tmp", "/var/tmp", "/dev/shm", "/state/agent"];
const DEVICES = ["/dev/null", "/dev/zero", "/dev/tty", "/dev/ptmx", "/dev/pts"];
/** LANDLOCK_ACCESS_FS_* (linux/landlock.h). */
const FS_ACCESS = { execute: 1 << 0, writeFile: 1 << 1, readFile: 1 << 2, readDir: 1 << 3, truncate: 1 << 14, ioctlDev: 1 << 15 };
/** LANDLOCK_ACCESS_NET_BIND_TCP, LANDLOCK_ACCESS_NET_CONNECT_TCP. */
const NET_ACCESS = { bindTcp: 1 << 0, connectTcp: 1 << 1 };
/** LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, LANDLOCK_SCOPE_SIGNAL. */
const SCOPE = { abstractUnixSocket: 1 << 0, signal: 1 << 1 };

const TOP = ["/bin", "/etc", "/usr"];

test("the Landlock rules: read and execute the top level given, write the defaults, the service's paths must exist", () => {
  const rules = landlockRules({ ...NO_EXTRA_CONFINEMENT, allowWrite: ["/run/w"], allowRead: ["/opt/r"] }, TOP);
  const rx = FS_ACCESS.execute | FS_ACCESS.readFile | FS_ACCESS.readDir;
  const device = FS_ACCESS.writeFile | FS_ACCESS.readFile | FS_ACCESS.truncate | FS_ACCESS.ioctlDev;
  assert.equal(rules.paths, [
    { access: FS_ACCESS.readDir, must: false, path: "/" },
    ...TOP.map((path) => ({ access: rx, must: false, path })),
    ...WRITABLE.map((path) => ({ access: 0xffff, must: false, path })),
    { access: 0xffff, must: true, path: "/run/w" },
    ...DEVICES.map((path) => ({ access: device, must: false, path })),
    { access: rx, must: false, path: "/state/install" },
    { access: rx, must: true, path: "/opt/r" },
  ]);
  assert.is(rules.scope, SCOPE.abstractUnixSocket | SCOPE.signal);
  assert.is(rules.net, 0, "no port rules unless asked: they cost a rule per port");
  assert.equal(rules.ports, []);
});

test("the image's top level: directories only, never /state or a symbolic link", () => {
  const top = imageTopLevel();
  assert.ok(top.includes("/usr") && top.includes("/etc"), top.join(" "));
  assert.not.ok(top.includes("/state"));
  assert.ok(top.every((path) => !lstatSync(path).isSymbolicLink() && lstatSync(path).isDirectory()));
});

test("denied ports become an allow list in runs: every other port keeps every handled right", () => {
  const { net, ports } = portRules([9000, 80, 9000], [8080]);
  const both = NET_ACCESS.bindTcp | NET_ACCESS.connectTcp;
  assert.is(net, both);
  assert.equal(ports, [
    { access: both, low: 0, high: 79 },
    { access: NET_ACCESS.bindTcp, low: 80, high: 80 },
    { access: both, low: 81, high: 8079 },
    { access: NET_ACCESS.connectTcp, low: 8080, high: 8080 },
    { access: both, low: 8081, high: 8999 },
    { access: NET_ACCESS.bindTcp, low: 9000, high: 9000 },
    { access: both, low: 9001, high: 65535 },
  ]);
  // Only connect handled: a port denied to it gets no rule at all.
  assert.equal(portRules([22], []), { net: NET_ACCESS.connectTcp, ports: [{ access: NET_ACCESS.connectTcp, low: 0, high: 21 }, { access: NET_ACCESS.connectTcp, low: 23, high: 65535 }] });
});

test("the stage keys of a private job: its tree or nothing, never the image's whole top level (which holds /tmp, where other jobs write)", () => {
  const request = { ...NO_EXTRA_CONFINEMENT, privateDir: "/run/clankie-private/0" };
  assert.throws(() => confinementKeys(request, { arch: "x64" }), /a private job's confinement came without its image tree/);
  const keys = confinementKeys(request, { arch: "x64", topLevel: ["/usr"] });
  assert.equal(keys.filter((k) => k.startsWith("path=d:")), ["path=d:may:/usr", "path=d:may:/state/install"]);
});

test("the stage keys: every rule as data, in order, then the seccomp filter", () => {
  const best = confinementKeys(NO_EXTRA_CONFINEMENT, { arch: "x64", topLevel: ["/usr"] });
  assert.equal(best, [
    "confine=best",
    "net=0",
    "scope=3",
    "path=8:may:/",
    "path=d:may:/usr",
    ...WRITABLE.map((p) => `path=ffff:may:${p}`),
    ...DEVICES.map((p) => `path=c006:may:${p}`),
    "path=d:may:/state/install",
    "network=all",
    `seccomp=${seccompHex("x64", { ptrace: true, network: "all" })}`,
    `seccomp-alone=${seccompHex("x64", { ptrace: false, network: "all" })}`,
  ]);
  const extra = confinementKeys({ strict: true, allowWrite: ["/run/w"], allowRead: ["/opt/r"], denyConnect: [80], denyBind: [], network: "all" }, { arch: "x64", topLevel: [] });
  assert.is(extra[0], "confine=strict");
  assert.ok(extra.includes("path=ffff:must:/run/w") && extra.includes("path=d:must:/opt/r"));
  assert.equal(extra.filter((k) => /^(net|port)=/.test(k)), ["net=2", "port=2:0-79", "port=2:81-65535"]);
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

test("a filter that was not built is an error, never a spawn without one", () => {
  assert.throws(() => seccompHex("mips", { ptrace: false, network: "all" }), /no seccomp filter was built for mips:no-ptrace:all/);
});

test.run();
