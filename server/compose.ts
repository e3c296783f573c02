/**
 * The composition root: configuration → database → ORM → core → edge → listeners. Nothing else
 * builds these pieces, and each gets what it needs as arguments.
 */
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { createOrm, migrate, type Orm } from "../core/db/orm.ts";
import { systemClock, type Clock, type CoreDeps } from "../core/deps.ts";
import { openRateLimits, type RateLimits } from "../core/ratelimit/limits.ts";
import { createSigningKeys, type SigningKeys } from "../core/keys/signing-keys.ts";
import type { KeyEncryptionKey } from "../core/keys/key-encryption.ts";
import { createAgentConnections, type AgentConnections } from "../core/agents/connections.ts";
import { startPresenceSweep } from "../core/agents/presence.ts";
import { createNoSignInVerifier } from "../core/game-oauth/login-verifier.ts";
import { createEdgeApp } from "../edge/app.ts";
import { listen, type Listener } from "../edge/listen.ts";
import type { Config } from "./config.ts";
import { createCore, type Core } from "./core.ts";
import { openDatabase, type Database } from "./database.ts";
import { resolveKeyEncryptionKey } from "./key-encryption-key.ts";

/** How often serving instances look for a signing key due for rotation. */
const keyRotationCheckMs = 3_600_000;

export interface Runtime {
  database: Database;
  orm: Orm;
  /** Shared in PostgreSQL on a PostgreSQL server, in memory on the embedded database. */
  rateLimits: RateLimits;
  signingKeys: SigningKeys;
  /** The agent streams open on this process. */
  agents: AgentConnections;
  core: Core;
  close(): Promise<void>;
}

/** Opens the database, migrates it and builds core: what every command needs. */
export async function openRuntime(
  config: Config,
  logger: Logger,
  mode: "serve" | "borrow",
  clock: Clock = systemClock,
): Promise<Runtime> {
  const database = await openDatabase(config, logger, mode);
  let orm: Orm | undefined;
  let rateLimits: RateLimits | undefined;
  try {
    orm = await createOrm({ url: database.url, poolSize: database.poolSize });
    const applied = await migrate(orm);
    if (applied.length) logger.info({ migrations: applied }, "database migrated");
    rateLimits = openRateLimits(config.rateLimits, database, logger);
    let kek: KeyEncryptionKey | undefined;
    const signingKeys = createSigningKeys({
      orm,
      clock,
      logger,
      // Resolved on first need, so commands that never touch the keys never create a KEK file.
      keyEncryptionKey: () => (kek ??= resolveKeyEncryptionKey(config, logger)),
      rotationDays: config.signingKeyRotationDays,
    });
    const agents = createAgentConnections();
    const deps: CoreDeps = {
      orm,
      clock,
      logger,
      rateLimits,
      signingKeys,
      agents,
      loginVerifier: createNoSignInVerifier(),
      config: {
        plans: config.plans,
        defaultPlan: config.defaultPlan,
        sessionTtlSeconds: config.sessionTtlSeconds,
        rateLimits: config.rateLimits,
        allowInsecureRedirectUris: config.allowInsecureRedirectUris,
      },
    };
    const opened = orm;
    const limits = rateLimits;
    return {
      database,
      orm,
      rateLimits,
      signingKeys,
      agents,
      core: createCore(deps),
      async close() {
        await limits.close();
        await opened.close();
        await database.close();
      },
    };
  } catch (error) {
    await rateLimits?.close();
    await orm?.close();
    await database.close();
    throw error;
  }
}

export interface Outpost {
  /** The port the dashboard, HTTP API and Connect services listen on. */
  port: number;
  runtime: Runtime;
  /** Stops accepting, finishes requests in flight, closes the database. */
  stop(): Promise<void>;
}

/** Starts the whole service in this process. */
export async function startOutpost(config: Config, logger: Logger, clock: Clock = systemClock): Promise<Outpost> {
  const runtime = await openRuntime(config, logger, "serve", clock);
  let listener: Listener;
  try {
    const rpcHandler = connectNodeAdapter({
      routes: runtime.core.publicRoutes,
      interceptors: runtime.core.interceptors,
      requestPathPrefix: "/api/rpc",
      // Unknown JSON fields are refused (invalid_argument naming them), not silently dropped.
      jsonOptions: { ignoreUnknownFields: false },
    });
    const app = createEdgeApp({
      accountBaseUrl: config.accountBaseUrl,
      logger,
      transport: runtime.core.transport(),
      rpcHandler,
      ready: async () => {
        await runtime.orm.em.fork().getConnection().execute("select 1");
      },
    });
    // Rotates a key that is due, and stops start-up if KEY_ENCRYPTION_KEY does not open the stored keys.
    await runtime.signingKeys.rotateDue();
    listener = await listen(app.callback(), config.port, config.host);
  } catch (error) {
    await runtime.close();
    throw error;
  }
  logger.info({ port: listener.port, accountBaseUrl: config.accountBaseUrl.origin, database: runtime.database.kind }, "Outpost is serving");
  let rotating: Promise<unknown> = Promise.resolve();
  const rotationTimer = setInterval(() => {
    rotating = runtime.signingKeys.rotateDue().catch((error) => logger.error({ err: error }, "scheduled signing-key rotation failed"));
  }, keyRotationCheckMs).unref();
  const presenceSweep = startPresenceSweep({ orm: runtime.orm, clock, logger });
  let stopping: Promise<void> | undefined;
  return {
    port: listener.port,
    runtime,
    stop() {
      stopping ??= (async () => {
        clearInterval(rotationTimer);
        // Agents' streams would hold their connections open: end them (each records its server
        // offline) while the listener stops taking new ones.
        await Promise.all([listener.close(), runtime.agents.close(), presenceSweep.stop()]);
        await rotating;
        await runtime.close();
        logger.info("Outpost stopped");
      })();
      return stopping;
    },
  };
}
