/** A whole Outpost in this process, on a test database, listening on an ephemeral port. */
import { pino } from "pino";
import { loadConfig } from "../../server/config.ts";
import { startOutpost, type Outpost } from "../../server/compose.ts";
import { createTestDatabase, type TestDatabase } from "./database.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";

export interface TestOutpost {
  outpost: Outpost;
  baseUrl: string;
  /** GAME_ISSUER_URL: http://127.0.0.1:<gamePort>, so the issuer's identifier is where it listens. */
  gameIssuerUrl: string;
  close(): Promise<void>;
}

export async function startTestOutpost(env: Record<string, string> = {}): Promise<TestOutpost> {
  const database: TestDatabase | undefined = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), "outpost-test-"));
  // The issuer identifier must name the port it listens on, so that port is chosen before start.
  const gamePort = env.GAME_PORT ?? String(await freePort());
  const config = loadConfig({
    PORT: "0",
    GAME_PORT: gamePort,
    GAME_ISSUER_URL: `http://127.0.0.1:${gamePort}`,
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    DATABASE_URL: database?.url,
    LOG_LEVEL: "silent",
    // Suites sign up many accounts from one address; the suite about sign-up limits sets its own.
    SIGN_UPS_PER_IP_PER_HOUR: "100000",
    ...env,
  });
  const outpost = await startOutpost(config, pino({ level: "silent" }));
  return {
    outpost,
    baseUrl: `http://127.0.0.1:${outpost.port}`,
    gameIssuerUrl: config.gameIssuerUrl.origin,
    async close() {
      await outpost.stop();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A whole Outpost whose ACCOUNT_BASE_URL is where it listens (http://127.0.0.1:<port>), as the
 * Account OAuth issuer's identifier must be for a relying party's discovery.
 */
export async function startListeningOutpost(env: Record<string, string> = {}): Promise<TestOutpost> {
  const port = String(await freePort());
  return startTestOutpost({ PORT: port, ACCOUNT_BASE_URL: `http://127.0.0.1:${port}`, ...env });
}

/** A port free on loopback now (the kernel's choice of an ephemeral one). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
