/*
 * clankie-separate --self-check [--json] [--probe]
 *
 * The audit doctor shows. It reads, and changes nothing: no file is written,
 * no mode or owner changed, no signal sent; --probe starts one process as
 * the agent (and the setpriv and perl children it runs for its attempts)
 * whose attempts leave no trace. Run by the service (doctor), by
 * root (docker exec), or in a legacy single-uid body. It judges the body by
 * the service's process, not by its own, and says which one it judged.
 *
 *   readFacts   every fact, read once (facts.ts)
 *   runChecks   every check of the list, a pure judge of those facts (checks.ts)
 *   render      one document, as text or JSON (render.ts)
 *
 * Exit: 0 when no check failed (warnings allowed), 1 when one did, 64 for a
 * bad command line.
 */
import { PROGRAM_VERSION } from "../build-info.ts";
import { usage } from "../cli.ts";
import { EXIT } from "../constants.ts";
import { namesOf } from "../os/capabilities.ts";
import { writeLine } from "../report.ts";
import { runChecks } from "./checks.ts";
import { type Facts, readFacts } from "./facts.ts";
import { buildDocument, renderJson, renderText, type SelfCheckDocument } from "./render.ts";

export function documentOf(facts: Facts, probe: boolean): SelfCheckDocument {
  const [self, judged, mode, boundary] = [facts.self.value, facts.judged.value, facts.mode, facts.boundary];
  return buildDocument({
    version: PROGRAM_VERSION,
    mode: mode.value.mode,
    boundary: boundary.value,
    judged: { pid: judged.entry.pid, name: judged.entry.name, uid: judged.entry.creds.uids[0], reason: judged.reason },
    auditor: { pid: self.pid, uid: self.creds.uids[0], capabilities: namesOf(self.creds.capEff), noNewPrivs: self.creds.noNewPrivs ? 1 : 0, relation: judged.relation },
    probe,
    checks: runChecks(facts),
  });
}

export async function runSelfCheck(request: { json: boolean; probe: boolean }): Promise<number> {
  const doc = documentOf(await readFacts(request), request.probe);
  writeLine(1, request.json ? renderJson(doc) : renderText(doc));
  return doc.ok ? EXIT.ok : EXIT.checkFailed;
}

/** clankie-separate --self-check [--json] [--probe]: `rest` is what follows --self-check. */
export function parseSelfCheckArgs(rest: readonly string[]): { json: boolean; probe: boolean } {
  let json = false;
  let probe = false;
  for (const arg of rest) {
    if (arg === "--json") json = true;
    else if (arg === "--probe") probe = true;
    else throw usage("clankie-separate", `unknown --self-check option ${JSON.stringify(arg)}`, "use --json and --probe only");
  }
  return { json, probe };
}
