/**
 * Opening Outpost's runtime: the database (migrated), the ORM, core and what core needs (rate
 * limits, passwords, signing keys, the bus, agents' streams), as every command needs them; the
 * composition root (compose.ts) puts the edge and the listeners on top to serve.
 */
import { createStatements } from "../core/db/sql.ts";
import { createActivityWriter } from "../core/activity/record.ts";
import { createCredentialStore } from "../core/auth/credential-store.ts";
import type { Logger } from "pino";
import { createOrm, migrate, type Orm } from "../core/db/orm.ts";
import { createDatabaseClock, type DatabaseClock } from "../core/db/database-clock.ts";
import { systemClock, type Clock, type CoreDeps } from "../core/deps.ts";
import { openRateLimits, type RateLimits } from "../core/ratelimit/limits.ts";
import { createSigningKeys, type SigningKeys } from "../core/keys/signing-keys.ts";
import { createSignerPool, type SignerPool } from "../core/keys/signer-pool.ts";
import { derivedSecret, type KeyEncryptionKey } from "../core/keys/key-encryption.ts";
import { createAgentConnections, type AgentConnections } from "../core/agents/connections.ts";
import { createFileRouter } from "../core/agents/file-router.ts";
import { createLifecycleRouter } from "../core/agents/lifecycle-router.ts";
import { createStatsIngest } from "../core/stats/ingest.ts";
import { createHeartbeats } from "../core/agents/heartbeats.ts";
import { createConsoleRouter } from "../core/agents/console-router.ts";
import { createWatchRegistry } from "../core/game-oauth/watches.ts";
import { createGameLoginVerifier } from "../core/game-oauth/game-login-verifier.ts";
import { createLoginCodeHasher, loginCodeKeyPurpose } from "../core/game-oauth/login-codes.ts";
import { authorizationEvents, type AuthorizationEvents } from "../core/game-oauth/events.ts";
import { createLocalBus, type Bus } from "../core/bus.ts";
import { createNotifier, pushThroughPwa } from "../core/notifications/notify.ts";
import { createPostgresBus } from "../core/bus-postgres.ts";
import { busKeyPurpose } from "../core/bus-envelope.ts";
import { createPasswords, type Passwords } from "../core/auth/passwords.ts";
import { createKnownDevices, knownDeviceKeyPurpose } from "../core/auth/known-devices.ts";
import { accountIssuerUrl } from "../contract/issuers.ts";
import type { Config } from "./config.ts";
import { createCore, type Core } from "./core.ts";
import { openDatabase, type Database } from "./database.ts";
import { createVapidKeys } from "../core/pwa/vapid-keys.ts";
import { pushPostThrough } from "../core/pwa/push.ts";
import { resolveKeyEncryptionKey } from "./key-encryption-key.ts";
import { openMetrics, type PrometheusMetrics } from "./metrics.ts";
import { createNoMetrics } from "../core/metrics.ts";
import { tracedQueryLogger } from "./tracing.ts";
import { createOutboundSender } from "../core/outbound/sender.ts";
import { createMailer } from "../core/outbound/mailer.ts";

export interface Runtime {
  database: Database;
  /** This process's clock, set by the database's (core/db/database-clock.ts). */
  clock: DatabaseClock;
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
  /** What core was built from (the alert worker sends with its outbound sender, mailer and notifier). */
  deps: CoreDeps;
  close(): Promise<void>;
}

/**
 * Sign-in changes and console traffic cross instances by LISTEN/NOTIFY on a PostgreSQL server,
 * each message under an HMAC keyed from the KEK (the database's other roles can LISTEN and NOTIFY
 * too); the embedded database (one process) and one-off commands keep them in this process.
 */
function openBus(mode: "serve" | "borrow", database: Database, logger: Logger, keyEncryptionKey: () => KeyEncryptionKey, clock: Clock): Bus {
  if (mode !== "serve" || database.kind !== "postgres") return createLocalBus();
  return createPostgresBus({ url: database.url, logger, key: () => derivedSecret(keyEncryptionKey(), busKeyPurpose), clock });
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
    fileTransferMaxBytes: config.fileTransferMaxBytes,
    scheduleGraceSeconds: config.scheduleGraceSeconds,
    idempotency: { waitMs: config.idempotencyWaitMs },
    statsRetention: config.statsRetention,
    gameIssuerUrl: config.gameIssuerUrl.origin,
    accountIssuerUrl: accountIssuerUrl(config.accountBaseUrl),
    accountBaseUrl: config.accountBaseUrl.origin,
    namedStatements: database.kind === "postgres",
    assistantModel: config.assistantModel,
  };
}

type CoreParts = Pick<
  CoreDeps,
  | "orm"
  | "statements"
  | "clock"
  | "logger"
  | "rateLimits"
  | "passwords"
  | "signingKeys"
  | "agents"
  | "consoles"
  | "files"
  | "lifecycles"
  | "stats"
  | "heartbeats"
  | "events"
  | "metrics"
  | "notifier"
>;

/** Core's dependencies: the parts the runtime opened, and what is built from the KEK or per process. */
function coreDepsOf(config: Config, database: Database, parts: CoreParts, keyEncryptionKey: () => KeyEncryptionKey): CoreDeps {
  const outbound = createOutboundSender({ allowLocal: config.allowLocalOutbound });
  const { statements } = parts;
  const coreDeps: Omit<CoreDeps, "loginVerifier"> = {
    ...parts,
    statements,
    activity: createActivityWriter(statements.on(parts.orm.em.fork())),
    credentials: createCredentialStore({ statements, em: parts.orm.em.fork(), clock: parts.clock, sessionIdleSeconds: config.sessionIdleSeconds }),
    // Instances sharing the KEK find each other's login codes; a database dump alone tests no guess.
    loginCodes: createLoginCodeHasher(() => derivedSecret(keyEncryptionKey(), loginCodeKeyPurpose)),
    // Every instance sharing the KEK knows the browsers that signed in at any of them.
    knownDevices: createKnownDevices(() => derivedSecret(keyEncryptionKey(), knownDeviceKeyPurpose)),
    watches: createWatchRegistry(),
    config: coreConfig(config, database),
    keyEncryptionKey,
    outbound,
    mailer: createMailer(config.smtp),
    // The VAPID key is sealed under the KEK; push requests go out through the SSRF-checked sender.
    push: { subject: config.vapidSubject, vapid: createVapidKeys(keyEncryptionKey), post: pushPostThrough(outbound) },
  };
  return { ...coreDeps, loginVerifier: createGameLoginVerifier(coreDeps) };
}

/** What openRuntime has opened so far: closed in the reverse order, at close() or when opening fails. */
interface Opened {
  database: Database;
  orm?: Orm;
  clock?: DatabaseClock;
  rateLimits?: RateLimits;
  signer?: SignerPool;
  bus?: Bus;
  deps?: CoreDeps;
}

async function closeOpened(opened: Opened): Promise<void> {
  opened.clock?.stop();
  await opened.deps?.stats.close();
  await opened.deps?.heartbeats.close();
  await opened.deps?.activity.flush();
  await opened.bus?.close();
  await opened.signer?.close();
  await opened.rateLimits?.close();
  await opened.orm?.close();
  await opened.database.close();
}

/**
 * The migrated ORM and the clock set by the database's. A clock the caller passes in (a test's)
 * is followed from its first reading only, so that moving it by hand is not undone a minute later.
 */
async function openStore(config: Config, logger: Logger, mode: "serve" | "borrow", localClock: Clock, opened: Opened) {
  const loggerFactory = mode === "serve" && config.tracing ? tracedQueryLogger : undefined;
  const orm = (opened.orm = await createOrm({ url: opened.database.url, poolSize: opened.database.poolSize, loggerFactory }));
  const applied = await migrate(orm);
  if (applied.length) logger.info({ migrations: applied }, "database migrated");
  // One set of statements per process: core's, and the clock's reading of the database's time.
  // The embedded database shares one session among its connections, also when reached by its URL
  // (a test's, or a serving process's): there statements run unnamed (core/db/sql.ts).
  const [{ version }] = await orm.em.fork().execute<Array<{ version: string }>>("select version() as version");
  const named = opened.database.kind === "postgres" && !version.includes("PGlite");
  const statements = createStatements(named, (message) => logger.warn(message));
  opened.clock = await createDatabaseClock(statements.on(orm.em.fork()), localClock, logger, { resync: localClock === systemClock });
  return { orm, statements, clock: opened.clock, applied };
}

/** Opens the database, migrates it and builds core: what every command needs. */
export async function openRuntime(config: Config, logger: Logger, mode: "serve" | "borrow", localClock: Clock = systemClock): Promise<Runtime> {
  const database = await openDatabase(config, logger, mode);
  const opened: Opened = { database };
  try {
    const { orm, statements, clock, applied } = await openStore(config, logger, mode, localClock, opened);
    const rateLimits = (opened.rateLimits = openRateLimits(config.rateLimits, database, logger));
    const passwords = createPasswords(config.passwordHashing);
    let kek: KeyEncryptionKey | undefined;
    // Resolved on first need, so commands that never touch the keys never create a KEK file.
    const keyEncryptionKey = () => (kek ??= resolveKeyEncryptionKey(config, logger));
    const signer = (opened.signer = createSignerPool());
    const signingKeys = createSigningKeys({ signer, orm, clock, logger, keyEncryptionKey, rotationDays: config.signingKeyRotationDays });
    const bus = (opened.bus = openBus(mode, database, logger, keyEncryptionKey, clock));
    const events = authorizationEvents(bus);
    const agents = createAgentConnections();
    const consoles = createConsoleRouter({ agents, bus, logger });
    const files = createFileRouter({ agents, bus, logger, query: statements.on(orm.em.fork()) });
    const lifecycles = createLifecycleRouter({ agents, bus, logger });
    const stats = createStatsIngest({ query: statements.on(orm.em.fork()), clock, logger });
    const heartbeats = createHeartbeats({ query: statements.on(orm.em.fork()), clock });
    const metrics = mode === "serve" ? await openMetrics(orm, agents, bus, rateLimits) : undefined;
    // Push needs core's deps, which need the notifier: it reads them when it first sends.
    const notifier = createNotifier({ bus, logger, push: pushThroughPwa(() => deps) });
    const parts = {
      orm,
      statements,
      clock,
      logger,
      rateLimits,
      passwords,
      signingKeys,
      agents,
      consoles,
      files,
      lifecycles,
      stats,
      heartbeats,
      events,
      notifier,
      metrics: metrics ?? createNoMetrics(),
    };
    const deps = (opened.deps = coreDepsOf(config, database, parts, keyEncryptionKey));
    return {
      database,
      orm,
      clock,
      migrationsApplied: applied,
      rateLimits,
      passwords,
      signingKeys,
      keyEncryptionKey,
      agents,
      bus,
      events,
      metrics,
      deps,
      core: createCore(deps),
      close: () => closeOpened(opened),
    };
  } catch (error) {
    await closeOpened(opened);
    throw error;
  }
}
