/** A whole Outpost in this process, on a test database, listening on an ephemeral port. */
import { pino } from "pino";
import { loadConfig } from "../../server/config.ts";
import { startOutpost, type Outpost } from "../../server/compose.ts";
import { createTestDatabase, type TestDatabase } from "./database.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestOutpost {
  outpost: Outpost;
  baseUrl: string;
  close(): Promise<void>;
}

export async function startTestOutpost(env: Record<string, string> = {}): Promise<TestOutpost> {
  const database: TestDatabase | undefined = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), "outpost-test-"));
  const config = loadConfig({
    PORT: "0",
    GAME_PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    DATABASE_URL: database?.url,
    LOG_LEVEL: "silent",
    ...env,
  });
  const outpost = await startOutpost(config, pino({ level: "silent" }));
  return {
    outpost,
    baseUrl: `http://127.0.0.1:${outpost.port}`,
    async close() {
      await outpost.stop();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
