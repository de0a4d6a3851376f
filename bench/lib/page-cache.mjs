/*
 * The page-cache state of the executables a benchmark compares.
 *
 * How a file's pages came into the page cache changes how many page faults
 * a start of it takes: a file written with a few large write(2) calls, as
 * postject writes dist/clankie-separate, is cached in large folios, and a
 * start maps many pages per fault; a file read back through the faults of
 * its own starts (after a reboot, or once evicted) is cached page by page.
 * Measured here (kernel 6.18, ext4), `node -e 0` of the same binary: 2,751
 * page faults from a cache filled by its own starts, 2,358 straight after a
 * copy made with one large write, 2,376 after a `dd bs=64k` read: about
 * 2.5 ms of every start on this machine. npm writes node_modules/ in small
 * pieces and build.mjs writes dist/ whole, so a benchmark run right after a
 * build compared a shim started from large folios with a `node -e 0` started
 * from small ones, in the shim's favour.
 *
 * So every benchmark part first evicts each executable it compares (fsync,
 * then POSIX_FADV_DONTNEED through dd's iflag=nocache, coreutils), and each
 * is then read back by its own first starts (the warm-up runs), as a body's
 * binaries are after a reboot. Pages mapped by a running process are not
 * evicted (posix_fadvise(2)): nothing runs these executables at that point,
 * and fincore(1) says what stayed.
 */
import { capture, run } from "./process.mjs";

/** Evicts each file's pages from the page cache; returns the bytes still resident per file (0 when all went). */
export function evictFromPageCache(paths) {
  const resident = {};
  for (const path of new Set(paths)) {
    run("/usr/bin/sync", [path]);
    run("/usr/bin/dd", [`if=${path}`, "iflag=nocache", "count=0", "status=none"]);
    resident[path] = Number(capture("/usr/bin/fincore", ["--bytes", "--noheadings", "--output", "RES", path]).trim());
  }
  return resident;
}

/** One sentence for docs/benchmarks.md: what was evicted and whether any of it stayed. */
export function evictionNote(resident) {
  const stayed = Object.entries(resident).filter(([, bytes]) => bytes > 0);
  const names = Object.keys(resident).map((path) => `\`${path}\``).join(", ");
  return (
    `Page cache: before this part, ${names} were evicted (bench/lib/page-cache.mjs), so that each starts from pages its own starts read back, as after a reboot` +
    (stayed.length === 0
      ? "."
      : `; still resident, being mapped by a running process (the Node that runs this benchmark, when it is that binary), so in the state its own start read them back in: ${stayed.map(([path, bytes]) => `\`${path}\` ${bytes.toLocaleString("en-US")} bytes`).join(", ")}.`)
  );
}
