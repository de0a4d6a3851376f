/*
 * Stands in for execa inside the single executable, whose roles only ever
 * exec-replace. The service imports the real execa through the package entry
 * point clankie-separate/system-exec.
 */
export type Options = Record<string, unknown>;
export type ResultPromise = never;
export function execa(): never {
  throw new Error("the asynchronous exec path is not part of the single executable");
}
