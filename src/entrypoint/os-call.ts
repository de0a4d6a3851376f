/*
 * One system call, and its failure as the OsFailure that names the call and
 * the path (src/report.ts): the try/catch every phase of the entrypoint
 * would otherwise repeat around each call.
 */
import { osFailure } from "../report.ts";

export function osCall<T>(syscall: string, path: string | Buffer, call: () => T): T {
  try {
    return call();
  } catch (error) {
    throw osFailure(syscall, path, error);
  }
}
