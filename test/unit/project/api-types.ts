/*
 * The package API's types, checked by tsc (npm run typecheck, the first
 * step of npm test) and never run: spawnAgent, systemExec and runSelfCheck
 * are generic over their options as execa is, so what a service writes
 * needs no cast. Each @ts-expect-error line is a type that must be refused:
 * tsc fails ("Unused '@ts-expect-error' directive") the day the API's types
 * loosen and accept it.
 */
import type { Readable } from "node:stream";
import {
  type AgentError,
  type AgentRefusal,
  AgentSignalAbortError,
  AgentSignalError,
  AgentStopError,
  EXIT_CODES,
  isAgentError,
  type PrivateRelease,
  Refusal,
  refusalOf,
  type SignalAgentError,
  runSelfCheck,
  signalAgent,
  spawnAgent,
  systemExec,
} from "clankie-separate/system-exec";

export async function spawnAgentTypes(): Promise<void> {
  // Default options: stdout and stderr are strings.
  const plain = await spawnAgent("ls");
  const out: string = plain.stdout;
  const started: boolean = plain.started;
  const refused: boolean = plain.refused;
  // @ts-expect-error: without lines, stdout is no array
  const notLines: string[] = plain.stdout;

  // lines: true gives arrays of strings; the subprocess yields strings.
  const child = spawnAgent("git", ["log"], { lines: true, timeout: 1000, stdio: ["ignore", "pipe", "pipe"] });
  for await (const line of child) {
    const text: string = line;
    // @ts-expect-error: a line is a string, never bytes
    const bytes: Uint8Array = line;
    void text, bytes;
  }
  const result = await child;
  const lines: string[] = result.stdout;
  // @ts-expect-error: with lines, stdout is no string
  const joined: string = result.stdout;

  // encoding: "buffer" gives bytes.
  const raw = await spawnAgent("cat", ["f"], { encoding: "buffer" });
  const data: Uint8Array = raw.stdout;
  // @ts-expect-error: with encoding buffer, stdout is no string
  const decoded: string = raw.stdout;

  // stdout: "ignore" gives undefined.
  const quiet = await spawnAgent("true", [], { stdout: "ignore" });
  const nothing: undefined = quiet.stdout;

  // The subprocess's streams are Node's.
  const stream: Readable = spawnAgent("ls").stdout;

  // Shim options are typed, execa's too.
  // @ts-expect-error: network is "all" or "none"
  spawnAgent("ls", [], { network: "some" });
  // @ts-expect-error: a numeric nproc
  spawnAgent("ls", [], { nproc: "512" });

  const refusal: AgentRefusal | undefined = refusalOf(result);
  const code: number | undefined = refusal?.code;
  const said: string | undefined = refusal?.line;
  void out, started, refused, notLines, lines, joined, data, decoded, nothing, stream, code, said;
}

export async function startOutcomeTypes(): Promise<void> {
  // refused narrows the outcome: refusal is there, no `!`.
  const r = await spawnAgent("ls", [], { reject: false, privateJob: true });
  if (r.refused) {
    const code: number = r.refusal.code;
    const line: string | undefined = r.refusal.line;
    const started: false = r.started;
    void code, line, started;
  } else {
    // @ts-expect-error: not refused, no refusal to read
    const none: number = r.refusal.code;
    void none;
  }
  if (r.started) {
    const refused: false = r.refused;
    void refused;
  }
  // @ts-expect-error: before narrowing, refusal may be undefined
  const unknownCode: number = r.refusal.code;
  // A private job's release is typed; a job refused before its lease carries none.
  const release: PrivateRelease | undefined = r.privateRelease;
  const releaseCode: number | undefined = r.privateRelease?.exitCode;
  const releaseSaid: string | undefined = r.privateRelease?.stderr;
  void unknownCode, release, releaseCode, releaseSaid;

  // A rejected spawnAgent: the job's failure (AgentError) or a stop never delivered, told apart without a cast.
  try {
    await spawnAgent("false", [], { lines: true });
  } catch (error) {
    if (error instanceof AgentStopError) {
      const tries: number = error.tries;
      void tries;
    } else if (isAgentError(error)) {
      const failure: AgentError = error;
      const exitCode: number | undefined = error.exitCode;
      if (error.refused) void error.refusal.code;
      void failure, exitCode;
    }
  }
}

export async function systemExecTypes(): Promise<void> {
  const lines: string[] = (await systemExec("git", ["status"], { lines: true })).stdout;
  const text: string = (await systemExec("git", ["status"])).stdout;
  // @ts-expect-error: without lines, stdout is no array
  const wrong: string[] = (await systemExec("git", ["status"])).stdout;
  const audit: string = (await runSelfCheck(["--json"], { pass: ["CLANKIE_BOUNDARY"] })).stdout;
  const auditLines: string[] = (await runSelfCheck([], { lines: true })).stdout;
  // @ts-expect-error: runSelfCheck takes no trustedUids
  runSelfCheck([], { trustedUids: [0] });
  void lines, text, wrong, audit, auditLines;
}

export async function signalAndErrorTypes(pgid: number): Promise<void> {
  await signalAgent(pgid, "SIGTERM", { signal: AbortSignal.timeout(1000), timeoutMs: 2000 });
  // @ts-expect-error: the signal to send is a name, the AbortSignal an option
  await signalAgent(pgid, new AbortController().signal);
  // @ts-expect-error: timeoutMs is a number
  await signalAgent(pgid, "SIGTERM", { timeoutMs: "2s" });
  try {
    await signalAgent(pgid, "SIGTERM", { timeoutMs: 100 });
  } catch (error) {
    if (error instanceof AgentSignalAbortError) {
      const timedOut: boolean = error.timedOut;
      void timedOut;
    }
    if (error instanceof AgentStopError) void error.tries;
    if (error instanceof AgentSignalError) {
      const gone: boolean = error.gone;
      const exitCode: number = error.exitCode;
      const line: string | undefined = error.line;
      void gone, exitCode, line;
    }
    if (error instanceof Refusal) {
      const exitCode: number = error.exitCode;
      const fix: string = error.fix;
      void exitCode, fix;
    }
  }
  // Every way signalAgent rejects, one type.
  await signalAgent(pgid, "SIGTERM").catch((error: SignalAgentError) => {
    if (error instanceof AgentSignalError && error.gone) return "ended";
    if (error instanceof AgentStopError) return "not delivered";
    return error.message;
  });
  const busy: 75 = EXIT_CODES.busy;
  const launchRefused: 77 = EXIT_CODES.launchRefused;
  const usage: 64 = EXIT_CODES.usage;
  // @ts-expect-error: the constants are read-only
  EXIT_CODES.busy = 76;
  void busy, launchRefused, usage;
}
