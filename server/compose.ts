/**
 * The composition root: configuration → database → ORM → core → edge → listeners. Nothing else
 * builds these pieces, and each gets what it needs as arguments.
 */
import { createStatements } from "../core/db/statements.ts";
import type { Logger } from "pino";
import { setTimeout as sleep } from "node:timers/promises";
import { createOrm, migrate, type Orm } from "../core/db/orm.ts";
import { systemClock, type Clock, type CoreDeps } from "../core/deps.ts";
import { openRateLimits, type RateLimits } from "../core/ratelimit/limits.ts";
import { createSigningKeys, type SigningKeys } from "../core/keys/signing-keys.ts";
import { createSignerPool, type SignerPool } from "../core/keys/signer-pool.ts";
import { derivedSecret, type KeyEncryptionKey } from "../core/keys/key-encryption.ts";
import { createAgentConnections, type AgentConnections } from "../core/agents/connections.ts";
import { startPresenceSweep } from "../core/agents/presence.ts";
import { createConsoleRouter } from "../core/agents/console-router.ts";
import { createWatchRegistry } from "../core/game-oauth/watches.ts";
import { createGameLoginVerifier } from "../core/game-oauth/game-login-verifier.ts";
import { createLoginCodeHasher, loginCodeKeyPurpose } from "../core/game-oauth/login-codes.ts";
import { startClaimSweep } from "../core/game-oauth/login-claims.ts";
import { authorizationEvents, type AuthorizationEvents } from "../core/game-oauth/events.ts";
import { createLocalBus, type Bus } from "../core/bus.ts";
import { createPostgresBus } from "../core/bus-postgres.ts";
import { busKeyPurpose } from "../core/bus-envelope.ts";
import { startFlowCleanup } from "../core/oauth/cleanup.ts";
import { createPasswords, type Passwords } from "../core/auth/passwords.ts";
import { createKnownDevices, knownDeviceKeyPurpose } from "../core/auth/known-devices.ts";
import { createEdgeApp } from "../edge/app.ts";
import { accountIssuerUrl } from "../contract/issuers.ts";
import { createGameIssuerApp } from "../edge/game-issuer/app.ts";
import { listenAll, type Listener } from "../edge/listen.ts";
import type { Config } from "./config.ts";
import { createCore, type Core } from "./core.ts";
import { openDatabase, type Database } from "./database.ts";
import { resolveKeyEncryptionKey } from "./key-encryption-key.ts";
import { createRpcHandler } from "./rpc-handler.ts";
import { openMetrics, type PrometheusMetrics } from "./metrics.ts";
import { createNoMetrics } from "../core/metrics.ts";
import { createMetricsApp } from "../edge/metrics-endpoint.ts";
import { tracedQueryLogger } from "./tracing.ts";

/** How often serving instances look for a signing key due for rotation. */
const keyRotationCheckMs = 3_600_000;
/** How often serving instances compare their cached signing keys with the stored ones (a purge elsewhere). */
const keyRefreshMs = 2_000;

export interface Runtime {
  database: Database;
  orm: Orm;
  /** The migrations opening it applied (none when the database was up to date). */
  migrationsApplied: readonly string[];
  /** Shared in PostgreSQL on a PostgreSQL server, in memory on the embedded database. */
  rateLimits: RateLimits;
  /** Password hashing, capped for the whole process (PASSWORD_HASH_CONCURRENCY, PASSWORD_HASH_QUEUE). */
  passwords: Passwords;
  signingKeys: SigningKeys;
  /** KEY_ENCRYPTION_KEY (resolved, or generated into DATA_DIR, on first use). */
  keyEncryptionKey(): KeyEncryptionKey;
  /** The agent streams open on this process. */
  agents: AgentConnections;
  /** The instances' bus: LISTEN/NOTIFY on a PostgreSQL server, in this process on the embedded database. */
  bus: Bus;
  /** Hosted sign-ins' changes, on the bus. */
  events: AuthorizationEvents;
  /** What /metrics shows (a serving process only; one-off commands count nothing). */
  metrics: PrometheusMetrics | undefined;
  core: Core;
  close(): Promise<void>;
}

/**
 * Sign-in changes and console traffic cross instances by LISTEN/NOTIFY on a PostgreSQL server,
 * each message under an HMAC keyed from the KEK (the database's other roles can LISTEN and NOTIFY
 * too); the embedded database (one process) and one-off commands keep them in this process.
 */
function openBus(mode: "serve" | "borrow", database: Database, logger: Logger, keyEncryptionKey: () => KeyEncryptionKey): Bus {
  if (mode !== "serve" || database.kind !== "postgres") return createLocalBus();
  return createPostgresBus({ url: database.url, logger, key: () => derivedSecret(keyEncryptionKey(), busKeyPurpose) });
}

/** What core needs of the configuration. */
function coreConfig(config: Config, database: Database): CoreDeps["config"] {
  return {
    plans: config.plans,
    defaultPlan: config.defaultPlan,
    sessionTtlSeconds: config.sessionTtlSeconds,
    sessionIdleSeconds: config.sessionIdleSeconds,
    rateLimits: config.rateLimits,
    allowInsecureRedirectUris: config.allowInsecureRedirectUris,
    allowInsecureGameServers: config.allowInsecureGameServers,
    gameIssuerUrl: config.gameIssuerUrl.origin,
    accountIssuerUrl: accountIssuerUrl(config.accountBaseUrl),
    namedStatements: database.kind === "postgres",
  };
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
  let bus: Bus | undefined;
  let signer: SignerPool | undefined;
  try {
    const loggerFactory = mode === "serve" && config.tracing ? tracedQueryLogger : undefined;
    orm = await createOrm({ url: database.url, poolSize: database.poolSize, loggerFactory });
    const applied = await migrate(orm);
    if (applied.length) logger.info({ migrations: applied }, "database migrated");
    rateLimits = openRateLimits(config.rateLimits, database, logger);
    const passwords = createPasswords(config.passwordHashing);
    let kek: KeyEncryptionKey | undefined;
    // Resolved on first need, so commands that never touch the keys never create a KEK file.
    const keyEncryptionKey = () => (kek ??= resolveKeyEncryptionKey(config, logger));
    signer = createSignerPool();
    const signingKeys = createSigningKeys({
      signer,
      orm,
      clock,
      logger,
      keyEncryptionKey,
      rotationDays: config.signingKeyRotationDays,
    });
    bus = openBus(mode, database, logger, keyEncryptionKey);
    const events = authorizationEvents(bus);
    const agents = createAgentConnections();
    const consoles = createConsoleRouter({ agents, bus, logger });
    const metrics = mode === "serve" ? await openMetrics(orm, agents, bus, rateLimits) : undefined;
    const coreDeps: Omit<CoreDeps, "loginVerifier"> = {
      orm,
      statements: createStatements(database.kind === "postgres"),
      clock,
      logger,
      rateLimits,
      passwords,
      signingKeys,
      agents,
      consoles,
      events,
      // Instances sharing the KEK find each other's login codes; a database dump alone tests no guess.
      loginCodes: createLoginCodeHasher(() => derivedSecret(keyEncryptionKey(), loginCodeKeyPurpose)),
      // Every instance sharing the KEK knows the browsers that signed in at any of them.
      knownDevices: createKnownDevices(() => derivedSecret(keyEncryptionKey(), knownDeviceKeyPurpose)),
      watches: createWatchRegistry(),
      metrics: metrics ?? createNoMetrics(),
      config: coreConfig(config, database),
    };
    const deps: CoreDeps = { ...coreDeps, loginVerifier: createGameLoginVerifier(coreDeps) };
    const limits = rateLimits;
    const opened = orm;
    const shared = bus;
    const signatures = signer;
    return {
      database,
      orm,
      migrationsApplied: applied,
      rateLimits,
      passwords,
      signingKeys,
      keyEncryptionKey,
      agents,
      bus: shared,
      events,
      metrics,
      core: createCore(deps),
      async close() {
        await shared.close();
        await signatures.close();
        await limits.close();
        await opened.close();
        await database.close();
      },
    };
  } catch (error) {
    await bus?.close();
    await signer?.close();
    await rateLimits?.close();
    await orm?.close();
    await database.close();
    throw error;
  }
}

export interface Outpost {
  /** The port the dashboard, HTTP API and Connect services listen on. */
  port: number;
  /** The port the Game OAuth issuer (GAME_ISSUER_URL) listens on. */
  gamePort: number;
  /** The port of the /metrics listener, when METRICS_PORT is set. */
  metricsPort: number | undefined;
  runtime: Runtime;
  /**
   * Shuts down gracefully (docs/operations.md): /readyz unready for SHUTDOWN_DELAY_MS, then no new
   * connections, streams ended with a reconnect hint, requests in flight finished (or cut as the
   * shutdown's bound nears), the database closed.
   */
  stop(): Promise<void>;
}

/** The edge, the Game OAuth issuer and (METRICS_PORT) the metrics' app, with where each listens. */
function createApps(config: Config, logger: Logger, runtime: Runtime, lifecycle: { shutdown: AbortSignal; draining: () => boolean }) {
  const metrics = runtime.metrics!;
  const endpoint = { scrape: metrics.scrape, token: config.metrics.token };
  const app = createEdgeApp({
    accountBaseUrl: config.accountBaseUrl,
    gameIssuerUrl: config.gameIssuerUrl,
    logger,
    transport: runtime.core.transport(),
    rpcHandler: createRpcHandler(runtime.core.publicRoutes, runtime.core.interceptors),
    trustedProxies: config.trustedProxies,
    metrics: { ...endpoint, request: metrics.request },
    shutdown: lifecycle.shutdown,
    draining: lifecycle.draining,
    ready: async () => void (await runtime.orm.em.fork().getConnection().execute("select 1")),
  });
  const gameIssuer = createGameIssuerApp({
    issuerUrl: config.gameIssuerUrl,
    transport: runtime.core.transport(),
    logger,
    trustedProxies: config.trustedProxies,
    // Every instance sharing the KEK verifies the others' challenges (browser and agent may
    // reach different instances; so may the page and its challenge check).
    botCheck: { hmacKey: derivedSecret(runtime.keyEncryptionKey(), "hosted page proof of work") },
    metrics,
    shutdown: lifecycle.shutdown,
  });
  return [
    { app, port: config.port, host: config.host },
    { app: gameIssuer, port: config.gamePort, host: config.host },
    ...(config.metrics.port === undefined ? [] : [{ app: createMetricsApp(endpoint), port: config.metrics.port, host: config.metrics.host }]),
  ];
}

/** Starts the whole service in this process. */
export async function startOutpost(config: Config, logger: Logger, clock: Clock = systemClock): Promise<Outpost> {
  const runtime = await openRuntime(config, logger, "serve", clock);
  // Aborted when streams must end (the shutdown, after its delay); `draining` turns /readyz unready first.
  const shutdown = new AbortController();
  let draining = false;
  let listeners: Listener[];
  try {
    // Rotates a key that is due, and stops start-up if KEY_ENCRYPTION_KEY does not open the stored keys.
    await runtime.signingKeys.rotateDue();
    listeners = await listenAll(createApps(config, logger, runtime, { shutdown: shutdown.signal, draining: () => draining }));
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const [listener, gameListener, metricsListener] = listeners;
  logger.info(
    {
      port: listener.port,
      gamePort: gameListener.port,
      metricsPort: metricsListener?.port,
      accountBaseUrl: config.accountBaseUrl.origin,
      gameIssuerUrl: config.gameIssuerUrl.origin,
      database: runtime.database.kind,
    },
    "Outpost is serving",
  );
  let rotating: Promise<unknown> = Promise.resolve();
  const rotationTimer = setInterval(() => {
    rotating = runtime.signingKeys.rotateDue().catch((error) => logger.error({ err: error }, "scheduled signing-key rotation failed"));
  }, keyRotationCheckMs).unref();
  let refreshing: Promise<unknown> = Promise.resolve();
  const refreshTimer = setInterval(() => {
    refreshing = runtime.signingKeys.refresh().catch((error) => logger.warn({ err: error }, "re-reading the signing keys failed"));
  }, keyRefreshMs).unref();
  const presenceSweep = startPresenceSweep({ orm: runtime.orm, clock, logger });
  const flowCleanup = startFlowCleanup({ orm: runtime.orm, clock, logger });
  const claimSweep = startClaimSweep({ orm: runtime.orm, clock, logger, events: runtime.events });
  let stopping: Promise<void> | undefined;
  return {
    port: listener.port,
    gamePort: gameListener.port,
    metricsPort: metricsListener?.port,
    runtime,
    stop() {
      stopping ??= (async () => {
        const started = Date.now();
        const { timeoutMs, delayMs } = config.shutdown;
        // A proxy that polls /readyz stops sending new requests here while they are still served.
        draining = true;
        if (delayMs > 0) await sleep(delayMs);
        clearInterval(rotationTimer);
        clearInterval(refreshTimer);
        shutdown.abort();
        // Requests in flight get what is left of the bound, less a moment kept for closing the database.
        const graceMs = Math.max(0, timeoutMs - (Date.now() - started) - Math.min(2_000, timeoutMs / 4));
        // Agents' streams would hold their connections open: end them (each records its server
        // offline, and the agent reconnects elsewhere) while the listeners stop taking new ones.
        await Promise.all([
          ...listeners.map((l) => l.close(graceMs)),
          runtime.agents.close(),
          presenceSweep.stop(),
          flowCleanup.stop(),
          claimSweep.stop(),
        ]);
        await Promise.all([rotating, refreshing]);
        await runtime.close();
        logger.info({ ms: Date.now() - started }, "Outpost stopped");
      })();
      return stopping;
    },
  };
}
