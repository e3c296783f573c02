/**
 * A real core on a real database for a test suite, reached through Connect clients over an
 * in-memory transport, so validation, authentication and error mapping all run.
 */
import { createVapidKeys } from "../../core/pwa/vapid-keys.ts";
import { pushPostThrough, type PushPost } from "../../core/pwa/push.ts";
import { createStatements } from "../../core/db/sql.ts";
import { createActivityWriter } from "../../core/activity/record.ts";
import { createCredentialStore } from "../../core/auth/credential-store.ts";
import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { randomBytes } from "node:crypto";
import { pino } from "pino";
import { createOrm, migrate, type Orm } from "../../core/db/orm.ts";
import type { Clock, CoreConfig, CoreDeps } from "../../core/deps.ts";
import { openRateLimits, type RateLimits } from "../../core/ratelimit/limits.ts";
import { createSigningKeys, type SigningKeys } from "../../core/keys/signing-keys.ts";
import { createSignerPool } from "../../core/keys/signer-pool.ts";
import { derivedSecret, keyEncryptionKey, type KeyEncryptionKey } from "../../core/keys/key-encryption.ts";
import { createAgentConnections, type AgentConnections } from "../../core/agents/connections.ts";
import { createConsoleRouter } from "../../core/agents/console-router.ts";
import { createFileRouter } from "../../core/agents/file-router.ts";
import { createLifecycleRouter } from "../../core/agents/lifecycle-router.ts";
import { createStatsIngest } from "../../core/stats/ingest.ts";
import { createHeartbeats } from "../../core/agents/heartbeats.ts";
import { defaultRetention } from "../../core/stats/partitions.ts";
import type { LoginVerifier } from "../../core/game-oauth/login-verifier.ts";
import { createGameLoginVerifier } from "../../core/game-oauth/game-login-verifier.ts";
import { createLoginCodeHasher, loginCodeKeyPurpose } from "../../core/game-oauth/login-codes.ts";
import { createWatchRegistry } from "../../core/game-oauth/watches.ts";
import { authorizationEvents, type AuthorizationEvents } from "../../core/game-oauth/events.ts";
import { createLocalBus, type Bus } from "../../core/bus.ts";
import { createNotifier, pushThroughPwa } from "../../core/notifications/notify.ts";
import { createPostgresBus } from "../../core/bus-postgres.ts";
import { busKeyPurpose } from "../../core/bus-envelope.ts";
import { apiKeyHeader, sessionHeader } from "../../contract/credentials.ts";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { createPasswords, type PasswordHashingLimits } from "../../core/auth/passwords.ts";
import { createKnownDevices, knownDeviceKeyPurpose } from "../../core/auth/known-devices.ts";
import { createNoMetrics, type Metrics } from "../../core/metrics.ts";
import { createCore, type Core } from "../../server/core.ts";
import { createTestDatabase, type TestDatabase } from "./database.ts";
import { createOutboundSender, type OutboundOptions } from "../../core/outbound/sender.ts";
import { createMailer, type MailConfig } from "../../core/outbound/mailer.ts";

/** A clock the test moves by hand. */
export class TestClock implements Clock {
  private offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export const testConfig: CoreConfig = {
  plans: {
    free: { servers: 3, gameOAuthClients: 2, notes: 5, assistantQueriesPerDay: 50, assistantToolActionsPerDay: 20, emailsPerHour: 30 },
    pro: { servers: 25, gameOAuthClients: 20, notes: 1000, assistantQueriesPerDay: 50, assistantToolActionsPerDay: 20, emailsPerHour: 30 },
  },
  defaultPlan: "free",
  sessionTtlSeconds: 86_400,
  sessionIdleSeconds: 3 * 3600,
  // Generous, so suites that are not about rate limits never meet them; override per suite with
  // `startTestCore({ ...testConfig, rateLimits: { ...testConfig.rateLimits, requestsPerWindow: 5 } })`.
  rateLimits: {
    requestsPerWindow: 1_000_000,
    requestWindowSeconds: 60,
    signInAttemptsPerAccountIp: 10_000,
    signInAttemptsPerIp: 10_000,
    signInWindowSeconds: 900,
    signInAttemptsPerAccount: 10_000,
    signInAccountWindowSeconds: 3600,
    signUpsPerIp: 10_000,
    signUpWindowSeconds: 3600,
  },
  allowInsecureRedirectUris: false,
  allowInsecureGameServers: false,
  fileTransferMaxBytes: 1024 * 1024 * 1024,
  scheduleGraceSeconds: 600,
  statsRetention: defaultRetention,
  gameIssuerUrl: "http://game.test",
  accountIssuerUrl: "http://account.test/api/auth",
  accountBaseUrl: "http://account.test",
  // What createTestDatabase opens; startTestCore sets it from the database it is given.
  namedStatements: Boolean(process.env.DATABASE_URL),
};

/** The signing keys' key-encryption key of every test core (unless a suite passes its own). */
export const testKeyEncryptionKey = randomBytes(32);

export interface TestCoreOptions {
  /** Another core's database: a second instance on it (closing this core does not drop it). */
  database?: TestDatabase;
  /** The KEK (signing keys, login codes' HMAC); {@link testKeyEncryptionKey} otherwise. */
  keyEncryptionKey?: Buffer;
  /** 30 otherwise. */
  signingKeyRotationDays?: number;
  /** The in-game login codes' verifier; the Game OAuth issuer's otherwise. */
  loginVerifier?: LoginVerifier;
  /** The cap on password hashing; 4 at once and 1000 waiting otherwise. */
  passwordHashing?: PasswordHashingLimits;
  /** What core reports to the operator's metrics; nothing is kept otherwise. */
  metrics?: Metrics;
  /** The outbound sender's options (local development off and the system resolver otherwise). */
  outbound?: Partial<OutboundOptions>;
  /** The SMTP server integration email goes through; none otherwise. */
  smtp?: MailConfig;
  /** How push requests are posted; through the outbound sender (the `outbound` options) otherwise. */
  pushPost?: PushPost;
  /** The VAPID subject; "mailto:outpost@account.test" otherwise. */
  vapidSubject?: string;
}

export type Credential = { session: string } | { apiKey: string } | { headers: Record<string, string> } | undefined;

export interface TestCore {
  orm: Orm;
  clock: TestClock;
  core: Core;
  database: TestDatabase;
  /** The core's rate limits: PostgreSQL's store on DATABASE_URL, memory on the embedded database. */
  rateLimits: RateLimits;
  signingKeys: SigningKeys;
  /** The agent streams open on this core. */
  agents: AgentConnections;
  /** The instances' bus: LISTEN/NOTIFY on a PostgreSQL server, in-process on the embedded database. */
  bus: Bus;
  /** Sign-in events, on the bus. */
  events: AuthorizationEvents;
  /** Everything core was built from (e.g. to call its LoginVerifier directly). */
  deps: CoreDeps;
  /** A client of `service` that sends `credential`. */
  client<S extends DescService>(service: S, credential?: Credential): Client<S>;
  /** Signs up a new account; returns its session token and user id. */
  signUp(email: string, options?: { name?: string }): Promise<{ token: string; userId: string; email: string }>;
  close(): Promise<void>;
}

function credentialHeaders(credential: Credential): Interceptor[] {
  if (!credential) return [];
  const headers = "session" in credential ? { [sessionHeader]: credential.session } : "apiKey" in credential ? { [apiKeyHeader]: credential.apiKey } : credential.headers;
  return [
    (next) => (req) => {
      for (const [name, value] of Object.entries(headers)) req.header.set(name, value);
      return next(req);
    },
  ];
}

/** What core is built on: the database (migrated), the clock, the keys, the limits, the bus. */
interface Foundation {
  database: TestDatabase;
  config: CoreConfig;
  orm: Orm;
  clock: TestClock;
  rateLimits: RateLimits;
  logger: CoreDeps["logger"];
  kek: KeyEncryptionKey;
  signer: ReturnType<typeof createSignerPool>;
  signingKeys: SigningKeys;
  agents: AgentConnections;
  bus: Bus;
}

async function openFoundation(suiteConfig: CoreConfig, options: TestCoreOptions): Promise<Foundation> {
  const database = options.database ?? (await createTestDatabase());
  const config: CoreConfig = { ...suiteConfig, namedStatements: database.kind === "postgres" };
  const orm = await createOrm({ url: database.url, poolSize: database.kind === "embedded" ? 1 : 5 });
  await migrate(orm);
  const clock = new TestClock();
  const rateLimits = openRateLimits(config.rateLimits, database);
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const kek = keyEncryptionKey(options.keyEncryptionKey ?? testKeyEncryptionKey);
  const rotationDays = options.signingKeyRotationDays ?? 30;
  const signer = createSignerPool();
  const signingKeys = createSigningKeys({ orm, clock, logger, keyEncryptionKey: () => kek, rotationDays, signer });
  const agents = createAgentConnections();
  const bus = database.kind === "postgres" ? createPostgresBus({ url: database.url, logger, key: () => derivedSecret(kek, busKeyPurpose) }) : createLocalBus();
  // Listening before the core serves, so a test's first cross-instance message is heard.
  await bus.ready;
  return { database, config, orm, clock, rateLimits, logger, kek, signer, signingKeys, agents, bus };
}

/** Everything core is built from, on the foundation, as the server's composition builds it. */
function assembleDeps(foundation: Foundation, options: TestCoreOptions): CoreDeps {
  const { config, orm, clock, logger, kek, rateLimits, signingKeys, agents, bus } = foundation;
  const events = authorizationEvents(bus);
  const loginCodes = createLoginCodeHasher(() => derivedSecret(kek, loginCodeKeyPurpose));
  const passwords = createPasswords(options.passwordHashing ?? { concurrency: 4, queue: 1000 });
  const knownDevices = createKnownDevices(() => derivedSecret(kek, knownDeviceKeyPurpose));
  const consoles = createConsoleRouter({ agents, bus, logger });
  const outbound = createOutboundSender({ allowLocal: false, ...options.outbound });
  const statements = createStatements(config.namedStatements);
  const coreDeps = {
    orm,
    statements,
    activity: createActivityWriter(statements.on(orm.em.fork())),
    credentials: createCredentialStore({ statements, em: orm.em.fork(), clock, sessionIdleSeconds: config.sessionIdleSeconds }),
    config,
    clock,
    logger,
    rateLimits,
    passwords,
    signingKeys,
    agents,
    consoles,
    files: createFileRouter({ agents, bus, logger, query: statements.on(orm.em.fork()) }),
    lifecycles: createLifecycleRouter({ agents, bus, logger }),
    stats: createStatsIngest({ query: statements.on(orm.em.fork()), clock, logger }),
    heartbeats: createHeartbeats({ query: statements.on(orm.em.fork()), clock }),
    events,
    loginCodes,
    knownDevices,
    watches: createWatchRegistry(),
    notifier: createNotifier({ bus, logger, push: pushThroughPwa(() => deps) }),
    metrics: options.metrics ?? createNoMetrics(),
    keyEncryptionKey: () => kek,
    outbound,
    mailer: createMailer(options.smtp),
    push: { subject: options.vapidSubject ?? "mailto:outpost@account.test", vapid: createVapidKeys(() => kek), post: options.pushPost ?? pushPostThrough(outbound) },
  };
  const loginVerifier = options.loginVerifier ?? createGameLoginVerifier(coreDeps);
  const deps: CoreDeps = { ...coreDeps, loginVerifier };
  return deps;
}

/** Clients of core over its in-memory transport, one transport per credential. */
function clientsOf(core: Core): TestCore["client"] {
  const transports = new Map<string, Transport>();
  return <S extends DescService>(service: S, credential?: Credential) => {
    const key = JSON.stringify(credential ?? null);
    let transport = transports.get(key);
    if (!transport) transports.set(key, (transport = core.transport(credentialHeaders(credential))));
    return createClient(service, transport);
  };
}

export async function startTestCore(suiteConfig: CoreConfig = testConfig, options: TestCoreOptions = {}): Promise<TestCore> {
  const foundation = await openFoundation(suiteConfig, options);
  const { orm, clock, database, rateLimits, signingKeys, agents, bus, signer } = foundation;
  const deps = assembleDeps(foundation, options);
  const core = createCore(deps);
  const client = clientsOf(core);
  let counter = 0;
  return {
    orm,
    clock,
    core,
    database,
    rateLimits,
    signingKeys,
    agents,
    bus,
    events: deps.events,
    deps,
    client,
    async signUp(email, options = {}) {
      const res = await client(IdentityService).signUp({
        email,
        password: `correct horse battery ${++counter}`,
        name: options.name ?? email.split("@")[0],
      });
      return { token: res.sessionToken, userId: res.user!.id, email: res.user!.email };
    },
    async close() {
      await agents.close();
      await deps.stats.close();
      await deps.heartbeats.close();
      await deps.activity.flush();
      await bus.close();
      await signer.close();
      await rateLimits.close();
      await orm.close();
      if (!options.database) await database.drop();
    },
  };
}
