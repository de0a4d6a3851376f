/* The name of an errno number (EACCES for 13), from Node's table of this platform's values; "errno N" for one it does not know. */
import { constants } from "node:os";

const NAMES = new Map(Object.entries(constants.errno).map(([name, value]) => [value, name]));

export function errnoName(errno: number | string): string {
  return NAMES.get(Number(errno)) ?? `errno ${errno}`;
}
