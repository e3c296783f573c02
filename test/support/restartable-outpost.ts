/**
 * A whole Outpost in this process that can be stopped and started again on the same ports, the
 * same database and the same data directory, as an operator restarts it: for agents that must
 * ride out Outpost being down.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { loadConfig } from "../../server/config.ts";
import { startOutpost, type Outpost } from "../../server/compose.ts";
import { createTestDatabase } from "./database.ts";
import { freePort } from "./outpost.ts";

export interface RestartableOutpost {
  baseUrl: string;
  gameIssuerUrl: string;
  /** The running instance (undefined while stopped). */
  current(): Outpost | undefined;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Another instance on the same PostgreSQL database (a PostgreSQL server only), on ports of its own; closed with this one. */
  another(): Promise<Outpost>;
  close(): Promise<void>;
}

export async function startRestartableOutpost(env: Record<string, string> = {}): Promise<RestartableOutpost> {
  // On the embedded database (no DATABASE_URL), Outpost keeps its own in DATA_DIR, which survives restarts.
  const database = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), "outpost-restartable-"));
  const [port, gamePort] = [await freePort(), await freePort()];
  const config = loadConfig({
    PORT: String(port),
    GAME_PORT: String(gamePort),
    GAME_ISSUER_URL: `http://127.0.0.1:${gamePort}`,
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    DATABASE_URL: database?.url,
    KEY_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    LOG_LEVEL: "silent",
    SIGN_UPS_PER_IP_PER_HOUR: "100000",
    ...env,
  });
  let outpost: Outpost | undefined;
  const others = new Set<Outpost>();
  const restartable: RestartableOutpost = {
    baseUrl: `http://127.0.0.1:${config.port}`,
    gameIssuerUrl: `http://127.0.0.1:${gamePort}`,
    current: () => outpost,
    async start() {
      outpost ??= await startOutpost(config, pino({ level: "silent" }));
    },
    async stop() {
      await outpost?.stop();
      outpost = undefined;
    },
    async another() {
      if (!database) throw new Error("another instance needs a PostgreSQL server (DATABASE_URL)");
      const [otherPort, otherGamePort] = [await freePort(), await freePort()];
      const other = await startOutpost({ ...config, port: otherPort, gamePort: otherGamePort }, pino({ level: "silent" }));
      // Stopped once, by the test or at close.
      const handle: Outpost = { ...other, stop: async () => void (others.delete(handle) && (await other.stop())) };
      others.add(handle);
      return handle;
    },
    async close() {
      await Promise.all([...others].map((o) => o.stop()));
      await restartable.stop();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  await restartable.start();
  return restartable;
}
