/*
 * A launch whose root side also runs the sandbox tests' control runner
 * (test/fixtures/control-runner.pl): the controls that show an attack works
 * for the agent's uid alone are started as root with setpriv, as the service
 * started them when it held SETUID and SETGID. Pass the result as a
 * direct: true command to Body.run.
 */
import { SANDBOX_FIXTURES } from "./sandbox.ts";

export const CONTROL_SOCKET = "/tmp/clankie-test-control.sock";

/** The launch of clankie-separate SERVICE... with the control runner started beside it, as root. */
export function withControlRunner(service: readonly string[]): string[] {
  return ["/bin/sh", "-c", `/usr/bin/perl ${SANDBOX_FIXTURES}/control-runner.pl serve ${CONTROL_SOCKET} & exec "$@"`, "sh", "/usr/local/sbin/clankie-separate", ...service];
}
