import type { FileRouter } from "./agents/file-router.ts";
import type { LifecycleRouter } from "./agents/lifecycle-router.ts";
import type { StatsIngest } from "./stats/ingest.ts";
import type { Heartbeats } from "./agents/heartbeats.ts";
import type { StatsRetention } from "./stats/partitions.ts";
import type { Notifier } from "./notifications/notify.ts";
import type { Logger } from "pino";
import type { Orm } from "./db/orm.ts";
import type { RateLimits } from "./ratelimit/limits.ts";
import type { RateLimitConfig } from "./ratelimit/policies.ts";
import type { SigningKeys } from "./keys/signing-keys.ts";
import type { AgentConnections } from "./agents/connections.ts";
import type { ConsoleRouter } from "./agents/console-router.ts";
import type { LoginVerifier } from "./game-oauth/login-verifier.ts";
import type { AuthorizationEvents } from "./game-oauth/events.ts";
import type { LoginCodeHasher } from "./game-oauth/login-codes.ts";
import type { WatchRegistry } from "./game-oauth/watches.ts";
import type { Passwords } from "./auth/passwords.ts";
import type { KnownDevices } from "./auth/known-devices.ts";
import type { Statements } from "./db/sql.ts";
import type { ActivityWriter } from "./activity/record.ts";
import type { CredentialStore } from "./auth/credential-store.ts";
import type { Metrics } from "./metrics.ts";
import type { KeyEncryptionKey } from "./keys/key-encryption.ts";
import type { OutboundSender } from "./outbound/sender.ts";
import type { Mailer } from "./outbound/mailer.ts";
import type { PushDeps } from "./pwa/push.ts";
import type { Clock } from "./clock.ts";

export interface PlanLimits {
  servers: number;
  gameOAuthClients: number;
  /** The assistant's questions per organization per UTC day. */
  assistantQueriesPerDay: number;
  /** The assistant's tool actions (their quota weights) per organization per UTC day. */
  assistantToolActionsPerDay: number;
  /** Knowledge notes (core/knowledge). */
  notes: number;
  /**
   * Email the organization's integrations may send in any hour, counted per recipient across
   * instances (core/integrations/email-cap.ts); past it, alert email is refused, visibly.
   */
  emailsPerHour: number;
}

/** What core needs of the configuration (the composition root validates it). */
export interface CoreConfig {
  /** Plans by name. */
  plans: Readonly<Record<string, PlanLimits>>;
  /** The plan a new organization starts on; a key of `plans`. */
  defaultPlan: string;
  /** How long a dashboard session lasts. */
  sessionTtlSeconds: number;
  /** How long a dashboard session may go unused before it ends. */
  sessionIdleSeconds: number;
  /** Calls per credential or client IP, and failed sign-ins per account and per IP. */
  rateLimits: RateLimitConfig;
  /** OAuth redirect URIs may use http on any host (local development), not only on loopback. */
  allowInsecureRedirectUris: boolean;
  /**
   * Game servers that cannot prove who their players are (player_auth offline or insecure) may
   * sign players in, as online and proxy servers do (ALLOW_INSECURE_GAME_SERVERS; development).
   */
  allowInsecureGameServers: boolean;
  /** The largest file servers/downloadFile sends and uploadFile takes, in bytes (FILE_TRANSFER_MAX_MB). */
  fileTransferMaxBytes: number;
  /** How late a server schedule's missed run may still start (SCHEDULE_GRACE_SECONDS). */
  scheduleGraceSeconds: number;
  /** How long server statistics are kept, at each resolution. */
  statsRetention: StatsRetention;
  /** The Game OAuth issuer identifier (GAME_ISSUER_URL, an origin without a trailing slash). */
  gameIssuerUrl: string;
  /** The Account OAuth issuer identifier (ACCOUNT_BASE_URL's origin + "/api/auth"). */
  accountIssuerUrl: string;
  /** ACCOUNT_BASE_URL's origin, without a trailing slash: where the dashboard is, and what links sent out are built on (core/public-url.ts). */
  accountBaseUrl: string;
  /**
   * Hot statements may be named prepared statements, parsed once per connection: true on a
   * PostgreSQL server. Not on the embedded database, whose connections share one session (a
   * statement outlives the connection that prepared it, and the next one fails to prepare it).
   */
  namedStatements: boolean;
  /** The assistant's model (OCELOT_MODEL_*); undefined: none configured, so chat answers nothing. */
  assistantModel?: AssistantModelConfig;
  /** How a retry waits for the first request with its idempotency key (tests shorten it); defaults otherwise. */
  idempotency?: IdempotencyOptions;
}

/** How retries with an idempotency key wait (core/idempotency/idempotency-interceptor.ts). */
export interface IdempotencyOptions {
  /** How long a retry waits for the first request with its key to finish (default 10 s; IDEMPOTENCY_WAIT_MS). */
  waitMs?: number;
  /** How often it looks (default 25 ms). */
  pollMs?: number;
  /** A claim running longer than this was abandoned (its instance stopped): its retries get outcome_unknown (default 10 min). */
  abandonedAfterMs?: number;
}

/** An OpenAI-compatible chat-completions endpoint the operator chose (core/chat/model.ts). */
export interface AssistantModelConfig {
  /** The base URL, e.g. http://127.0.0.1:11434/v1; `/chat/completions` is added. */
  url: string;
  /** The model's name as the endpoint knows it. */
  model: string;
  /** Sent as `Authorization: Bearer …` when set. */
  apiKey?: string;
  /** How long the model may stay silent (before its first byte, between two chunks); the whole answer gets five times this. */
  timeoutSeconds: number;
}

/** The clock (core/clock.ts), here too for the many modules that take it with their other deps. */
export { systemClock, type Clock } from "./clock.ts";

export interface CoreDeps {
  orm: Orm;
  /** Plain SQL for the hot paths, as named prepared statements where the database allows. */
  statements: Statements;
  /** Stand-alone activity events (no transaction), written together when many come at once. */
  activity: ActivityWriter;
  /** The user credentials' lookups (no transaction), several calls' in one statement when many come at once. */
  credentials: CredentialStore;
  config: CoreConfig;
  clock: Clock;
  logger: Logger;
  /** The rate-limit counters, built from `config.rateLimits` on the store the database allows. */
  rateLimits: RateLimits;
  /** Password hashing and checking, capped process-wide (one per process). */
  passwords: Passwords;
  /** The issuers' signing keys: sign tokens, publish JWKS, rotate. */
  signingKeys: SigningKeys;
  /** The agent streams open on this instance (one registry per process). */
  agents: AgentConnections;
  /** Console commands to the stream that holds the server, here or on another instance. */
  consoles: ConsoleRouter;
  /** File operations to the stream that holds the server, here or on another instance. */
  files: FileRouter;
  /** Start, stop, restart and kill to the stream that holds the server, here or on another instance. */
  lifecycles: LifecycleRouter;
  /** The samples agents send, written in batches. */
  stats: StatsIngest;
  /** Agents' heartbeats, written in batches (core/agents/heartbeats.ts). */
  heartbeats: Heartbeats;
  /** Decides the code of an in-game `/outpost login` (the Game OAuth issuer's side). */
  loginVerifier: LoginVerifier;
  /** Hosted sign-in sessions' changes, across instances (LISTEN/NOTIFY) or in this process. */
  events: AuthorizationEvents;
  /** The login codes' stored lookup values: an HMAC under a key derived from the KEK. */
  loginCodes: LoginCodeHasher;
  /** Known-device tokens of browsers that signed in (HMAC under a key derived from the KEK). */
  knownDevices: KnownDevices;
  /** The hosted pages' live-status watches open on this instance: one per session, a few per address. */
  watches: WatchRegistry;
  /** Where core reports what the operator's metrics count (token exchanges, sign-ins, refusals). */
  metrics: Metrics;
  /** The KEK, resolved on first need: seals integration credentials as it seals the signing keys. */
  keyEncryptionKey: () => KeyEncryptionKey;
  /** The one way to send HTTP to an address someone else chose (webhooks, Discord, push): SSRF-checked. */
  outbound: OutboundSender;
  /** Email through the deployment's SMTP server (SMTP_URL); `configured` false without one. */
  mailer: Mailer;
  /** Announces kept notifications (bells on every instance, web push) and bounds the open bells. */
  notifier: Notifier;
  /** Web Push: the VAPID subject and keys, and how a push request is posted (the outbound guard). */
  push: PushDeps;
}
