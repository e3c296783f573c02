/** A whole Outpost in this process, on a test database, listening on an ephemeral port. */
import { pino } from "pino";
import { loadConfig } from "../../server/config.ts";
import { startOutpost, type Outpost } from "../../server/compose.ts";
import type { Clock } from "../../core/deps.ts";
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

export interface TestOutpostOptions {
  /** ACCOUNT_BASE_URL is where it listens (http://127.0.0.1:<port>), for a relying party's discovery. */
  listening?: boolean;
  /** This machine's clock, as startOutpost takes it (the database's sets it). */
  clock?: Clock;
}

export async function startTestOutpost(env: Record<string, string> = {}, options: TestOutpostOptions = {}): Promise<TestOutpost> {
  const database: TestDatabase | undefined = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), "outpost-test-"));
  const cleanUp = async () => {
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  // A port free when chosen can be taken before Outpost listens on it (by any socket's ephemeral
  // port meanwhile): then new ones are chosen and it starts again.
  for (let attempt = 1; ; attempt++) {
    // The issuer identifier must name the port it listens on, so that port is chosen before start.
    const gamePort = env.GAME_PORT ?? String(await freePort());
    const port = options.listening ? String(await freePort()) : "0";
    const config = loadConfig({
      PORT: port,
      GAME_PORT: gamePort,
      GAME_ISSUER_URL: `http://127.0.0.1:${gamePort}`,
      ...(options.listening && { ACCOUNT_BASE_URL: `http://127.0.0.1:${port}` }),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      DATABASE_URL: database?.url,
      LOG_LEVEL: "silent",
      // Suites sign up many accounts from one address; the suite about sign-up limits sets its own.
      SIGN_UPS_PER_IP_PER_HOUR: "100000",
      ...env,
    });
    let outpost: Outpost;
    try {
      outpost = await startOutpost(config, pino({ level: "silent" }), options.clock);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EADDRINUSE" && env.GAME_PORT === undefined && attempt < 5) continue;
      await cleanUp();
      throw error;
    }
    return {
      outpost,
      baseUrl: `http://127.0.0.1:${outpost.port}`,
      gameIssuerUrl: config.gameIssuerUrl.origin,
      async close() {
        await outpost.stop();
        await cleanUp();
      },
    };
  }
}

/**
 * A whole Outpost whose ACCOUNT_BASE_URL is where it listens (http://127.0.0.1:<port>), as the
 * Account OAuth issuer's identifier must be for a relying party's discovery.
 */
export function startListeningOutpost(env: Record<string, string> = {}): Promise<TestOutpost> {
  return startTestOutpost(env, { listening: true });
}

/**
 * A port free on loopback now, for a listener that starts a moment later. Chosen below the
 * kernel's ephemeral range (32768 and up on Linux), where no outgoing connection's local port can
 * take it meanwhile; random in 20000–32767, and checked free by listening on it.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    if (await listensOn(port)) return port;
  }
  throw new Error("no free port found below the ephemeral range");
}

function listensOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}
