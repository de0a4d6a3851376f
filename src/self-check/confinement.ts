/*
 * agent.confinement: what the kernel and the container engine offer to
 * confine agent work beyond its uid. The agent-side verification stage puts
 * every spawn in a Landlock domain and under a seccomp filter where they
 * exist; where they do not, the spawn still runs, under the uid boundary
 * only, and this check says so with its fix.
 *
 * Landlock: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
 * returns the highest ABI the kernel offers, or -1 with ENOSYS (not built),
 * EOPNOTSUPP (built, not enabled at boot) or, under a container engine whose
 * seccomp profile does not know the call, EPERM or ENOSYS. Node cannot make
 * a raw system call, so perl makes it (runCapture of src/exec/capture.ts: root-owned
 * perl, fixed PATH, allowlisted environment). The number is 444 on x86-64
 * and arm64 alike (include/uapi/asm-generic/unistd.h, syscall_64.tbl).
 *
 * seccomp: the Seccomp: field of /proc/self/status exists with
 * CONFIG_SECCOMP; /proc/sys/kernel/seccomp/actions_avail lists "errno" when
 * filters can make a call fail with an error (CONFIG_SECCOMP_FILTER).
 *
 * Both are read in this process's context, which is the service's when
 * doctor runs the audit: the engine's seccomp profile applies here as it does
 * to the agent. What a spawn actually runs under is --probe's to show
 * (probe.seccomp, probe.lower-oom-score, probe.abstract-socket).
 */
import { syscallNumbers } from "../os/syscalls.ts";
import { errnoName } from "../os/errno.ts";
import type { SeccompStatus } from "./process-table.ts";
import { pass, type Verdict, warn } from "./check.ts";

export const SECCOMP_ACTIONS_FILE = "/proc/sys/kernel/seccomp/actions_avail";

/** landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION = 1); perl prints "abi N" or "errno N". */
export const LANDLOCK_ABI_SCRIPT = `my $abi = syscall(${syscallNumbers().landlockCreateRuleset}, 0, 0, 1); print $abi >= 0 ? "abi $abi\\n" : "errno " . ($! + 0) . "\\n";`;

/** What each Landlock ABI adds (Documentation/userspace-api/landlock.rst), and the Linux version that brought it. */
const LANDLOCK_ABI_RULES: ReadonlyArray<{ abi: number; linux: string; rule: string }> = [
  { abi: 1, linux: "5.13", rule: "filesystem access (read, write, execute, create, remove)" },
  { abi: 2, linux: "5.19", rule: "renames and links between directories" },
  { abi: 3, linux: "6.2", rule: "truncation" },
  { abi: 4, linux: "6.7", rule: "TCP bind and connect by port" },
  { abi: 5, linux: "6.10", rule: "ioctl on devices" },
  { abi: 6, linux: "6.12", rule: "scoping of abstract unix sockets and signals" },
  { abi: 7, linux: "6.15", rule: "logging of denials" },
];

/** The ABI the issue's rules need in full: filesystem, TCP ports, scoping. */
const FULL_ABI = 6;

export type LandlockFact = { abi: number } | { errno: string } | { error: string };

export interface ConfinementFacts {
  landlock: LandlockFact;
  /** This process's status fields, and the actions filters may take (or why they could not be read). */
  seccomp: SeccompStatus & { actions: string[] | { error: string } };
}

export function landlockRules(abi: number): string[] {
  return LANDLOCK_ABI_RULES.filter((entry) => entry.abi <= abi).map((entry) => entry.rule);
}

/** Pure: perl's one line. */
export function parseLandlockAnswer(stdout: string): LandlockFact {
  const match = /^(abi|errno) (\d+)\n?$/.exec(stdout);
  if (!match) return { error: `unexpected answer ${JSON.stringify(stdout.slice(0, 80))}` };
  const n = Number(match[2]);
  return match[1] === "abi" ? { abi: n } : { errno: errnoName(n) };
}

const LANDLOCK_FIX =
  "run on a kernel built with CONFIG_SECURITY_LANDLOCK=y that enables it (landlock in the lsm= boot parameter; cat /sys/kernel/security/lsm), under a Docker engine >= 20.10.18, whose default seccomp profile allows system calls 444-446 (landlock_create_ruleset, landlock_add_rule, landlock_restrict_self), or a custom profile that allows them";
const SECCOMP_FIX = "run on a kernel built with CONFIG_SECCOMP_FILTER, under a runtime that does not hide it (gVisor, for one, has its own)";

export function judgeConfinement(facts: ConfinementFacts): Verdict {
  const { landlock, seccomp } = facts;
  const abi = "abi" in landlock ? landlock.abi : null;
  const rules = abi === null ? [] : landlockRules(abi);
  const { missing, fixes } = missingConfinement(facts);
  const seccompFilters = !missing.includes("seccomp filters");
  const found = {
    landlock: { abi, rules, ...landlock },
    seccomp: { status: seccomp.mode, filters: seccomp.filters, actions: Array.isArray(seccomp.actions) ? seccomp.actions : null, ...(!Array.isArray(seccomp.actions) ? { error: seccomp.actions.error } : {}), filtersAvailable: seccompFilters },
  };
  const problems: string[] = [];
  if (abi === null) problems.push(`Landlock is not available (${"errno" in landlock ? `landlock_create_ruleset: ${landlock.errno}` : "error" in landlock ? landlock.error : ""})`);
  else if (abi < FULL_ABI) {
    const lacking = LANDLOCK_ABI_RULES.filter((entry) => entry.abi > abi && entry.abi <= FULL_ABI);
    problems.push(`Landlock ABI ${abi} lacks ${lacking.map((entry) => `${entry.rule} (ABI ${entry.abi})`).join(", ")}`);
    fixes.unshift(`run on Linux ${LANDLOCK_ABI_RULES.find((entry) => entry.abi === FULL_ABI)!.linux} or later for Landlock ABI ${FULL_ABI}`);
  }
  if (!seccompFilters) {
    const why = seccomp.mode === null ? "no Seccomp: field in /proc/self/status" : !Array.isArray(seccomp.actions) ? seccomp.actions.error : `${SECCOMP_ACTIONS_FILE} lists no errno action`;
    problems.push(`seccomp filters are not available (${why})`);
  }
  const offered = abi === null ? "no Landlock" : `Landlock ABI ${abi} (${rules.join("; ")})`;
  const filters = seccompFilters ? "seccomp filters (errno action)" : "no seccomp filters";
  if (problems.length === 0) return pass(`the kernel offers ${offered} and ${filters}: every agent spawn can be confined beyond its uid`, found);
  const consequence = missing.length > 0 ? "agent work then runs under the uid boundary only" : "those limits then rest on the uid boundary only";
  return warn(`${problems.join("; ")}: ${consequence} (offered: ${offered}; ${filters})`, found, fixes.join("; and "));
}

/** What the kernel leaves out: no Landlock domain (null ABI), no seccomp filter that can fail a call. */
function missingConfinement(facts: ConfinementFacts): { missing: string[]; fixes: string[] } {
  const missing: string[] = [];
  const fixes: string[] = [];
  if (!("abi" in facts.landlock)) (missing.push("Landlock"), fixes.push(LANDLOCK_FIX));
  const { seccomp } = facts;
  if (!(Array.isArray(seccomp.actions) && seccomp.mode !== null && seccomp.actions.includes("errno"))) (missing.push("seccomp filters"), fixes.push(SECCOMP_FIX));
  return { missing, fixes };
}

/*
 * agent.stop-route: kill(), a timeout, cancelSignal and signalAgent() end a
 * job through the signal stage, which runs as the agent uid before it
 * confines itself. Among processes of one uid, prlimit64(2), setpriority(2),
 * sched_setscheduler(2) and ioprio_set(2) need no privilege (the kernel's
 * check is the same uid, kernel/sys.c, kernel/sched/syscalls.c), and Landlock
 * does not scope them: only the stage's seccomp filter, with the Landlock
 * domain around it, keeps an agent job from setting the stage's RLIMIT_NOFILE
 * to 0 (the stop is never delivered) or from renicing or starving another
 * job. Without either, the stop route is exposed. A warning, never a failure:
 * the kernel and engine decide.
 */
export function judgeStopRoute(facts: ConfinementFacts): Verdict {
  const { missing, fixes } = missingConfinement(facts);
  const found = { landlock: "abi" in facts.landlock, seccompFilters: !missing.includes("seccomp filters"), missing };
  if (missing.length === 0) return pass("the kernel offers Landlock and seccomp filters: the stages can keep agent jobs from changing the limits, priority or scheduling of the signal stage and of other jobs", found);
  return warn(
    `the stop route is exposed: without ${missing.join(" or ")}, an agent job can change the limits, priority and scheduling of the signal stage and of other agent jobs (prlimit, renice, chrt), so a stop can go undelivered and one job can starve another`,
    found,
    fixes.join("; and "),
  );
}
