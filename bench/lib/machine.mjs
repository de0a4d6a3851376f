/* Facts about the machine and the tools, printed at the top of docs/benchmarks.md. */
import { readFileSync } from "node:fs";
import { release } from "node:os";
import { capture } from "./process.mjs";

function firstLine(text) {
  return text.split("\n")[0].trim();
}

export function loadAverage() {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

export function machineFacts({ repo, nodeBinary, treeDir }) {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const memKb = Number(/^MemTotal:\s+(\d+)/m.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0);
  const dirty = capture("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: repo }).trim() !== "";
  return {
    date: new Date().toISOString(),
    nproc: capture("nproc", []).trim(),
    kernel: release(),
    cpu: /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? "unknown",
    memory: `${(memKb / 1048576).toFixed(1)} GiB`,
    loadAverage: loadAverage(),
    commit: `${capture("git", ["rev-parse", "--short", "HEAD"], { cwd: repo }).trim()}${dirty ? " (with uncommitted changes)" : ""}`,
    benchNode: process.version,
    measuredNode: capture(nodeBinary, ["--version"]).trim(),
    hyperfine: firstLine(capture("/usr/bin/hyperfine", ["--version"])),
    bwrap: firstLine(capture("/usr/bin/bwrap", ["--version"])),
    setpriv: firstLine(capture("/usr/bin/setpriv", ["--version"])),
    treeFs: treeDir ? `${treeDir} (${capture("stat", ["-f", "-c", "%T", treeDir]).trim()})` : undefined,
  };
}
