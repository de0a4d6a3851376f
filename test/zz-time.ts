import { inBody, SANDBOX_FIXTURES, SANDBOX_NODE } from "./helpers/sandbox.ts";
import { seededBody } from "./helpers/stand-in.ts";
inBody(seededBody(), (body) => {
  const r = body.run({ as: "root", command: [SANDBOX_NODE, `${SANDBOX_FIXTURES}/zz-time.mjs`, "20"], timeoutMs: 300_000 });
  console.log(r.stdout.split("\n").find((l) => l.startsWith("{")), r.stderr.split("\n").filter((l) => !l.includes("separated:")).join(" ").slice(0, 300));
});
