/*
 * The floor of any one-thread Node walk, for the tree walk's restart (b): lstat every entry
 * below a directory, with the same lookups the entrypoint makes (chdir onto
 * each directory's fd, bare names, Buffer names) and nothing else: no rules,
 * no checks, no changes. Run inside the launch sandbox with the pinned Node.
 *
 *   node lstat-floor.mjs /state
 */
import { closeSync, lstatSync, opendirSync, openSync, constants } from "node:fs";

const flags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
let entries = 0;
// Depth first, each directory walked as soon as it is found, as the entrypoint's walk does.
const open = (fd) => ({ fd, dir: opendirSync(`/proc/self/fd/${fd}`, { encoding: "buffer", bufferSize: 128 }) });
const stack = [open(openSync(process.argv[2], flags))];
let cwd = -1;
while (stack.length > 0) {
  const frame = stack[stack.length - 1];
  if (cwd !== frame.fd) {
    process.chdir(`/proc/self/fd/${frame.fd}`);
    cwd = frame.fd;
  }
  const entry = frame.dir.readSync();
  if (entry === null) {
    frame.dir.closeSync();
    closeSync(frame.fd);
    stack.pop();
    continue;
  }
  entries++;
  if (lstatSync(entry.name).isDirectory()) stack.push(open(openSync(entry.name, flags)));
}
process.stdout.write(`${entries}\n`);
