/* Shared by the unit tests: set process.env values for one call, then put them back. */

/** Runs fn with these process.env values (undefined deletes), then restores them. */
export function withProcessEnv(values: Record<string, string | undefined>, fn: () => void): void {
  const saved = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
  const apply = (v: Record<string, string | undefined>): void => {
    for (const [name, value] of Object.entries(v)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(values);
  try {
    fn();
  } finally {
    apply(saved);
  }
}
