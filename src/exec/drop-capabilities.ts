/*
 * What a program the service starts for itself holds: nothing. The service
 * holds no capability, its bounding set included (docs/security.md, "The
 * service holds no capability"), so its children hold none either way; this
 * drop is a guard for a caller that does hold ambient capabilities, as ADR
 * 0272's service did (SETUID and SETGID). capabilities(7) keeps the ambient
 * set across execve(2) for a non-root, non-set-user-ID program: P'(ambient) =
 * P(ambient), P'(permitted) = (P(inheritable) & F(inheritable)) |
 * (F(permitted) & P(bounding)) | P'(ambient). A child of such a caller
 * started by plain child_process or execa runs with CapPrm, CapEff and CapAmb
 * 0xc0, and `setpriv --reuid=0` makes it root.
 *
 * So every systemExec child is started through
 *
 *   setpriv --inh-caps=-all --ambient-caps=-all -- PROGRAM ARGS...
 *
 * which empties the inheritable set (capset(2): lowering needs no
 * capability) and the ambient set (prctl(2) PR_CAP_AMBIENT_CLEAR_ALL, no
 * capability needed) and then execs PROGRAM in place, same pid. The kernel
 * keeps the ambient set within permitted and inheritable, so emptying the
 * inheritable set alone empties the ambient set too: a lowering setpriv did
 * not report (it does not report a failed ambient raise) cannot leave one
 * behind. With both empty, the execve(2) of a program without file
 * capabilities leaves permitted and effective empty; NoNewPrivs (which the entrypoint requires)
 * and the image's stripped set-user-ID bits keep what the caller's bounding
 * set still holds out of reach for good. The audit starts its image walk
 * through this drop in turn (startCapture's dropCapabilities), as it walks
 * agent-writable /tmp. Pure.
 */
import { TOOLS } from "../constants.ts";

export const DROP_CAPABILITIES = [TOOLS.setpriv, "--inh-caps=-all", "--ambient-caps=-all", "--"] as const;

/** Pure: the file and argv that start `path` with no capability. */
export function withoutCapabilities(path: string, args: readonly string[]): { file: string; args: string[] } {
  const [file, ...options] = DROP_CAPABILITIES;
  return { file, args: [...options, path, ...args] };
}
