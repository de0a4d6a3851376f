/*
 * The walk changes the inode it looked at, never whatever the name holds a
 * moment later: a rule callback runs between the walk's lstat and its open,
 * so a test can swap the entry there, deterministically, as a racing writer
 * of the volume would. Each swap must be refused (exit 65, "changed while it
 * was being taken over") and the swapped-in entry left as it was; the control
 * (no swap) shows the same walk does change the entry.
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { EXIT } from "../../../src/constants.ts";
import { walkTree } from "../../../src/entrypoint/tree-walk.ts";
import type { Decision, EntryView } from "../../../src/layout/rules.ts";
import { assertRefusal } from "../../helpers/refusal.ts";

const test = suite("tree-walk");

/** A tree with one entry, `victim` (a file or a directory, 0644/0755), and a rule that makes everything 0600/0700. */
function tree(kind: "file" | "directory"): string {
  const root = mkdtempSync(join(tmpdir(), "clankie-walk-"));
  if (kind === "file") writeFileSync(join(root, "victim"), "v\n", { mode: 0o644 });
  else mkdirSync(join(root, "victim"), { mode: 0o755 });
  chmodSync(join(root, "victim"), kind === "file" ? 0o644 : 0o755);
  return root;
}

/** The rule: 0600 for files, 0700 for directories (owners kept); `swap` runs once, when the rule is asked about `victim`. */
function rules(swap?: () => void) {
  let swapped = false;
  return (entry: EntryView): Decision<null> => {
    if (entry.depth > 0 && entry.name.toString() === "victim" && swap && !swapped) {
      swapped = true;
      swap();
    }
    return { action: "fix", uid: -1, gid: -1, mode: () => (entry.kind === "directory" ? 0o700 : 0o600), descend: entry.kind === "directory" ? null : undefined };
  };
}

const mode = (path: string): number => lstatSync(path).mode & 0o7777;

test("control: without a swap the walk changes the entry it looked at", () => {
  for (const kind of ["file", "directory"] as const) {
    const root = tree(kind);
    try {
      walkTree(root, rules(), null);
      assert.is(mode(join(root, "victim")), kind === "file" ? 0o600 : 0o700, kind);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
});

const SWAPS: [string, "file" | "directory", (root: string) => void, number][] = [
  ["a file replaced by another file (a new inode under the same name)", "file", (root) => {
    renameSync(join(root, "victim"), join(root, "old"));
    writeFileSync(join(root, "victim"), "planted\n", { mode: 0o644 });
    chmodSync(join(root, "victim"), 0o644);
  }, 0o644],
  ["a file replaced by a symbolic link", "file", (root) => {
    writeFileSync(join(root, "elsewhere"), "x\n", { mode: 0o644 });
    chmodSync(join(root, "elsewhere"), 0o644);
    rmSync(join(root, "victim"));
    symlinkSync(join(root, "elsewhere"), join(root, "victim"));
  }, 0o644],
  ["a directory replaced by another directory", "directory", (root) => {
    renameSync(join(root, "victim"), join(root, "old"));
    mkdirSync(join(root, "victim"), { mode: 0o755 });
    chmodSync(join(root, "victim"), 0o755);
  }, 0o755],
  ["a directory replaced by a symbolic link to a directory", "directory", (root) => {
    mkdirSync(join(root, "elsewhere"), { mode: 0o755 });
    chmodSync(join(root, "elsewhere"), 0o755);
    rmSync(join(root, "victim"), { recursive: true });
    symlinkSync(join(root, "elsewhere"), join(root, "victim"));
  }, 0o755],
];

for (const [what, kind, swap, untouched] of SWAPS) {
  test(`${what} between lstat and open: refused (65), and what was swapped in is untouched`, () => {
    const root = tree(kind);
    try {
      assertRefusal(() => walkTree(root, rules(() => swap(root)), null), {
        exitCode: EXIT.dataRefused,
        what: `${root}/victim changed while it was being taken over (another process is writing this tree)`,
        fix: "stop every other container that mounts this volume, then start again",
      });
      // lstat's own mode for a new entry, the target's for a link: neither was changed.
      const target = lstatSync(join(root, "victim")).isSymbolicLink() ? join(root, "elsewhere") : join(root, "victim");
      assert.is(mode(target), untouched);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
}

test("a file removed between lstat and open: refused (65) as changed, not a failed call (71)", () => {
  const root = tree("file");
  try {
    assertRefusal(() => walkTree(root, rules(() => rmSync(join(root, "victim"))), null), {
      exitCode: EXIT.dataRefused,
      what: `${root}/victim changed while it was being taken over (another process is writing this tree)`,
      fix: "stop every other container that mounts this volume, then start again",
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/**
 * Past 32 levels the walk closes the fds of the shallower directories and
 * reopens each, on the way back up, as ".." of the child it just finished.
 * A racer that moves a directory out of its parent meanwhile changes that
 * "..": the walk must refuse rather than go on in the directory it now
 * leads to. Here `b` (below `a`, 40 levels above the bottom) is moved to
 * the root when the rule sees the bottom; the control (no move) walks the
 * same tree to the end and changes every directory in it.
 */
test("a directory moved out of its parent while the walk is below it, past the fds it keeps: refused, not walked on in the wrong directory", () => {
  for (const move of [false, true]) {
    const root = mkdtempSync(join(tmpdir(), "clankie-walk-"));
    try {
      const chain = ["a", "b", ...Array.from({ length: 40 }, (_, i) => `l${i}`)];
      mkdirSync(join(root, ...chain), { recursive: true, mode: 0o755 });
      const rule = (entry: EntryView): Decision<null> => {
        if (move && entry.depth === chain.length) renameSync(join(root, "a", "b"), join(root, "b-moved"));
        return { action: "fix", uid: -1, gid: -1, mode: () => 0o700, descend: null };
      };
      if (!move) {
        walkTree(root, rule, null);
        assert.is(mode(join(root, ...chain)), 0o700, "the control walked to the bottom");
        assert.is(mode(join(root, "a")), 0o700);
        continue;
      }
      assertRefusal(() => walkTree(root, rule, null), {
        exitCode: EXIT.dataRefused,
        what: `${root}/a changed while it was being taken over (another process is writing this tree)`,
      });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
});

/**
 * A directory over 1 MiB is streamed (opendir), and a stream holds an fd:
 * one left open below every descent would be an fd per level again. The
 * stream hands out its subdirectories only once it is closed, so at the
 * bottom of a chain below a streamed directory the walk holds as many fds
 * as below a small one (the control).
 */
test("below a streamed (over 1 MiB) directory the walk holds no more fds than below a small one", () => {
  const fdsAtBottom = (big: boolean): number => {
    const root = mkdtempSync(join(tmpdir(), "clankie-walk-"));
    try {
      mkdirSync(join(root, "dir", "sub", "l1", "l2", "l3"), { recursive: true });
      // Long names fill the directory fast on any filesystem that sizes directories by their names.
      for (let i = 0; big && lstatSync(join(root, "dir")).size <= 1 << 20; i++) {
        assert.ok(i < 100_000, "the directory grew past 1 MiB");
        writeFileSync(join(root, "dir", `${String(i).padStart(6, "0")}${"x".repeat(200)}`), "");
      }
      let at = -1;
      walkTree(root, (entry: EntryView): Decision<null> => {
        if (entry.name.toString() === "l3") at = readdirSync("/proc/self/fd").length;
        return { action: "fix", uid: -1, gid: -1, descend: entry.kind === "directory" ? null : undefined };
      }, null);
      return at;
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  };
  const small = fdsAtBottom(false);
  assert.ok(small > 0, "the rule saw the bottom");
  assert.is(fdsAtBottom(true), small);
});

test.run();
