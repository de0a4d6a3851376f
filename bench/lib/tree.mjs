/* Trees to walk and the small shell scripts the benchmark runs. */
import { closeSync, mkdirSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { shellQuote } from "./process.mjs";

/**
 * `dirs` directories of `files` empty files each, below `root` (which exists):
 * dirs * (files + 1) entries, owned by the caller (root), modes 0755 and 0644.
 */
export function makeTree(root, dirs, files) {
  const previous = process.umask(0o022);
  try {
    for (let d = 0; d < dirs; d++) {
      const dir = join(root, `d${String(d).padStart(5, "0")}`);
      mkdirSync(dir, 0o755);
      for (let f = 0; f < files; f++) closeSync(openSync(join(dir, `f${String(f).padStart(3, "0")}`), "wx", 0o644));
    }
  } finally {
    process.umask(previous);
  }
  return dirs * (files + 1);
}

/** argv as a readable shell line: a break before every `--` argument (bwrap, setpriv, the program). */
export function brokenLine(argv) {
  return argv.map((arg, i) => (i > 0 && arg === "--" ? "\\\n  --" : shellQuote(arg))).join(" ");
}

/*
 * Closes every fd above 2 that the script inherited. A container's service
 * starts with 0-2 only, but whatever runs this benchmark may leak more into
 * every child (on the machine it was written on, a pipe at fd 251), and the
 * shim's verification stage rightly refuses a process holding one. dash
 * cannot name an fd above 9, hence bash for these scripts.
 */
const CLOSE_INHERITED_FDS = 'for fd in /proc/$$/fd/*; do n=${fd##*/}; if [ "$n" -gt 2 ]; then eval "exec $n>&-"; fi; done';

/**
 * Writes an executable script; `exec`s the last command (argv `exec`, or a
 * shell line `execLine`), stderr appended to `log` when given. With `closeFds`, a bash script that first closes
 * inherited fds above 2.
 */
export function writeScript(path, { setup = [], exec, execLine = exec && brokenLine(exec), log, closeFds = false }) {
  const lines = [closeFds ? "#!/bin/bash" : "#!/bin/sh", ...(closeFds ? [CLOSE_INHERITED_FDS] : []), ...(setup.length ? ["set -e", ...setup] : [])];
  if (execLine) lines.push(`exec ${execLine}${log ? ` 2>>${shellQuote(log)}` : ""}`);
  const text = `${lines.join("\n")}\n`;
  writeFileSync(path, text, { mode: 0o755 });
  return text;
}
