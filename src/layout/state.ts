/*
 * The /state contract (ADR 0272, "Mechanism"):
 *   /state                node:node 0711 (traversable, not listable)
 *   /state/<everything>   owned by node, no group or other permission bits
 *   /state/install        node:node 0755: the release root, open to all
 *   /state/install/...    owned by node, writable by node only; other may
 *                         read and execute what the group or other could
 *                         already, never what only the owner could (below)
 *   /state/agent          clankie-agent:clankie-agent 0700; its contents are
 *                         the agent's and are never walked with root's
 *                         powers; it may be a mount point of its own (a
 *                         volume or tmpfs that keeps the agent's files off
 *                         the service's filesystem)
 * Set-user-ID, set-group-ID and sticky bits are stripped everywhere.
 *
 * The release rule. The agent runs the release's tools, so the release must
 * be open to it; but a release also holds files its owner made private (npm
 * writes .npmrc, with its registry token, 0600), and opening those would hand
 * the agent the secret. The group's bits are the record of what was meant to
 * be shared: a release unpacked under umask 0022 is 0755/0644, one the
 * service writes under its umask 0007 is 0770/0660, and a file made private
 * has no group or other read at all. So other gets the union of the group's
 * and other's read and execute bits, and nothing of the owner's alone:
 * 0755 and 0770 become 0755, 0660 becomes 0644, 0600 and 0700 stay as they
 * are. Only the release root itself is always 0755.
 */
import { EXIT, STATE_AGENT_NAME, STATE_INSTALL_NAME } from "../constants.ts";
import { Refusal } from "../report.ts";

export type StateZone = "top" | "private" | "release";

/** Mode rules, pure (unit-tested). */
export const stateModes = {
  top: (): number => 0o711,
  private: (mode: number): number => mode & 0o700,
  releaseRoot: (): number => 0o755,
  release: (mode: number): number => {
    const shared = ((mode >> 3) | mode) & 0o005;
    return (mode & 0o700) | (shared << 3) | shared;
  },
  agentHome: (): number => 0o700,
} as const;

/**
 * The layout as data: the start's walk (src/perl/state-acl.pl, whose
 * audit mode judges by the same `wanted`) is held to these modes by
 * test/unit/self-check/state.test.ts, every mode in each zone. (A read-only find(1) scan of a
 * restart, which stated them a second time as find expressions, was removed:
 * docs/architecture.md, "The restart scan, removed".)
 */
export const STATE_LAYOUT = {
  /** /state itself. */
  top: stateModes.top,
  /** The one top-level name left to someone else: the agent's home (secureState takes over its top). */
  pruned: STATE_AGENT_NAME,
  /** The release root, a top-level name: a directory there is exactly `root`, every entry in it (and a non-directory there) `below`. */
  release: { name: STATE_INSTALL_NAME, root: stateModes.releaseRoot, below: stateModes.release },
  /** Every other entry. */
  private: stateModes.private,
} as const;

/** The two entries /state's rules refuse, by their display path (the start's walk and the audit state them alike). */
export const stateRefusals = {
  device: (path: string): Refusal => new Refusal(EXIT.dataRefused, `${path} is a device node`, `remove it (rm ${JSON.stringify(path)}) and start again`),
  foreignHardLink: (path: string, links: number, uid: number): Refusal =>
    new Refusal(EXIT.dataRefused, `${path} is a hard link (${links} names) to a file owned by uid ${uid}; taking it over would change that file everywhere`, `remove it (rm ${JSON.stringify(path)}) and start again`),
};
