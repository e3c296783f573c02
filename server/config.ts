/**
 * The configuration, read once from the environment, validated and frozen. A bad value stops
 * start-up with one line naming the variable, what it must be and what it was.
 *
 * Each variable's kind, default and documentation are in config-variables.ts; this module reads
 * them through it and checks what concerns several at once (the default plan is a plan, the
 * metrics' port is not another listener's, the shutdown's delay is within its bound, a model URL
 * needs a model's name), and derives what a default depends on (the SMTP From, the VAPID subject).
 */
import { availableParallelism } from "node:os";
import type { PasswordHashingLimits } from "../core/auth/passwords.ts";
import type { AssistantModelConfig, PlanLimits } from "../core/deps.ts";
import type { RateLimitConfig } from "../core/ratelimit/policies.ts";
import type { TrustedProxies } from "../edge/client-address.ts";
import { ConfigError } from "./config-error.ts";
import { readVariable, type Env } from "./config-variables.ts";

export { ConfigError } from "./config-error.ts";
export { parseKeyEncryptionKey } from "./config-parsers.ts";
export { defaultEmailsPerHour, defaultNoteLimit } from "./config-plans.ts";

export interface Config {
  /** Dashboard, HTTP API, Account OAuth and Connect. */
  port: number;
  /** The Game OAuth issuer. */
  gamePort: number;
  host: string;
  accountBaseUrl: URL;
  gameIssuerUrl: URL;
  /** A PostgreSQL server; undefined selects the embedded database under dataDir. */
  databaseUrl: string | undefined;
  databasePoolSize: number;
  dataDir: string;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  plans: Readonly<Record<string, PlanLimits>>;
  defaultPlan: string;
  sessionTtlSeconds: number;
  /** A session unused for this long ends (before its TTL). */
  sessionIdleSeconds: number;
  /** Calls per minute per credential (per IP without one); failed sign-ins; sign-ups per IP. */
  rateLimits: Readonly<RateLimitConfig>;
  /** Password hashes and checks at once in this process, and how many may wait for a place. */
  passwordHashing: Readonly<PasswordHashingLimits>;
  /** Encrypts the issuers' private signing keys at rest; undefined: one is kept in DATA_DIR. */
  keyEncryptionKey: Buffer | undefined;
  /** Days a signing key stays current before the scheduled rotation replaces it. */
  signingKeyRotationDays: number;
  /** The largest file downloadFile sends and uploadFile takes, in bytes (FILE_TRANSFER_MAX_MB). */
  fileTransferMaxBytes: number;
  /** How late a schedule's missed run may still start (SCHEDULE_GRACE_SECONDS). */
  scheduleGraceSeconds: number;
  /** How long a retry waits for the first request with its idempotency key (IDEMPOTENCY_WAIT_MS). */
  idempotencyWaitMs: number;
  /** How long server statistics are kept, at each resolution (STATS_RAW_HOURS, STATS_MINUTE_DAYS, STATS_QUARTER_DAYS). */
  statsRetention: Readonly<{ rawHours: number; minuteDays: number; quarterDays: number }>;
  /** OAuth redirect URIs may use http on any host, not only on loopback (local development). */
  allowInsecureRedirectUris: boolean;
  /** Game servers that cannot prove who their players are (offline mode) may sign players in (development). */
  allowInsecureGameServers: boolean;
  /** Webhooks, Discord and push may be sent over http and to loopback addresses (local development). */
  allowLocalOutbound: boolean;
  /** The SMTP server integration email goes through, and its From; undefined: no email. */
  smtp: Readonly<{ url: string; from: string }> | undefined;
  /** Proxies whose header names the client (none: the connection's peer is the client). */
  trustedProxies: Readonly<TrustedProxies>;
  /** /metrics: its own listener (no port: none) and the bearer token (without one, not on PORT). */
  metrics: Readonly<{ port: number | undefined; host: string; token: string | undefined }>;
  /** A shutdown's bound (the process exits by then) and how long /readyz says unready before the listeners close. */
  shutdown: Readonly<{ timeoutMs: number; delayMs: number }>;
  /** OpenTelemetry traces: where they are sent (OTLP over HTTP) and under which name; undefined: off. */
  tracing: Readonly<TracingConfig> | undefined;
  /** The VAPID `sub` claim of Web Push requests: a mailto: or https: URL push services may use to reach the operator. */
  vapidSubject: string;
  /** The assistant's OpenAI-compatible model endpoint (OCELOT_MODEL_*); undefined: none. */
  assistantModel: Readonly<AssistantModelConfig> | undefined;
}

export interface TracingConfig {
  /** The collector's traces URL, e.g. http://collector:4318/v1/traces. */
  url: string;
  /** `service.name` on every span. */
  serviceName: string;
}

/**
 * PASSWORD_HASH_CONCURRENCY: a number, or "auto": twice the CPU cores, but one fewer than libuv's
 * thread pool (UV_THREADPOOL_SIZE, 4 by default), where Argon2id runs — more would only wait
 * there, out of the cap's sight, and the last thread stays free for file and DNS work.
 */
function passwordHashConcurrency(env: Env): number {
  const concurrency = readVariable(env, "PASSWORD_HASH_CONCURRENCY");
  if (concurrency !== "auto") return concurrency;
  return Math.max(1, Math.min(2 * availableParallelism(), readVariable(env, "UV_THREADPOOL_SIZE") - 1));
}

/** SMTP_URL and SMTP_FROM: off without a URL; the From defaults to outpost@ the dashboard's host. */
function smtp(env: Env, accountBaseUrl: URL): Config["smtp"] {
  const url = readVariable(env, "SMTP_URL");
  if (!url) return undefined;
  const from = readVariable(env, "SMTP_FROM") ?? `Outpost <outpost@${accountBaseUrl.hostname}>`;
  return Object.freeze({ url, from });
}

/** METRICS_*: off unless a port or a token is set; its port must not be one the other listeners take. */
function metrics(env: Env): Config["metrics"] {
  const token = readVariable(env, "METRICS_TOKEN");
  const port = readVariable(env, "METRICS_PORT");
  if (port && (port === readVariable(env, "PORT") || port === readVariable(env, "GAME_PORT"))) {
    throw new ConfigError(`METRICS_PORT must differ from PORT and GAME_PORT (got ${port})`);
  }
  return Object.freeze({ port, host: readVariable(env, "METRICS_HOST"), token });
}

function shutdown(env: Env): Config["shutdown"] {
  const timeoutMs = readVariable(env, "SHUTDOWN_TIMEOUT_MS");
  const delayMs = readVariable(env, "SHUTDOWN_DELAY_MS");
  if (delayMs >= timeoutMs) throw new ConfigError(`SHUTDOWN_DELAY_MS must be less than SHUTDOWN_TIMEOUT_MS (${timeoutMs}; got ${delayMs})`);
  return Object.freeze({ timeoutMs, delayMs });
}

/**
 * The standard OpenTelemetry variables: off unless an endpoint is set (or OTEL_SDK_DISABLED says
 * so). OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the traces URL as it is; OTEL_EXPORTER_OTLP_ENDPOINT is
 * the collector's base, to which the signal's path `v1/traces` is added, as the specification says.
 */
function tracing(env: Env): Config["tracing"] {
  if (readVariable(env, "OTEL_SDK_DISABLED")) return undefined;
  let url = readVariable(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  if (!url) {
    const base = readVariable(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
    if (!base) return undefined;
    url = new URL(base.pathname.endsWith("/") ? "v1/traces" : `${base.pathname}/v1/traces`, base);
  }
  return Object.freeze({ url: url.href, serviceName: readVariable(env, "OTEL_SERVICE_NAME") });
}

/** VAPID_SUBJECT, or when unset: ACCOUNT_BASE_URL when it is https, otherwise a mailto: at its host. */
function vapidSubject(env: Env, accountBaseUrl: URL): string {
  const subject = readVariable(env, "VAPID_SUBJECT");
  if (subject) return subject;
  return accountBaseUrl.protocol === "https:" ? accountBaseUrl.origin : `mailto:outpost@${accountBaseUrl.hostname}`;
}

/** OCELOT_MODEL_*: the assistant's model. Off without a URL; with one, the model's name is needed. */
function assistantModel(env: Env): Config["assistantModel"] {
  const timeoutSeconds = readVariable(env, "OCELOT_MODEL_TIMEOUT_SECONDS");
  const url = readVariable(env, "OCELOT_MODEL_URL");
  if (!url) return undefined;
  const model = readVariable(env, "OCELOT_MODEL");
  const apiKey = readVariable(env, "OCELOT_MODEL_API_KEY");
  return Object.freeze({ url: url.href.replace(/\/+$/, ""), model, apiKey, timeoutSeconds });
}

/** The plans, and the default plan, which must be one of them. */
function plans(env: Env): { plans: Readonly<Record<string, PlanLimits>>; defaultPlan: string } {
  const table = readVariable(env, "PLANS");
  const defaultPlan = readVariable(env, "DEFAULT_PLAN");
  if (!Object.hasOwn(table, defaultPlan)) {
    throw new ConfigError(`DEFAULT_PLAN must name a plan in PLANS (${Object.keys(table).join(", ")}; got "${defaultPlan}")`);
  }
  return { plans: table, defaultPlan };
}

function rateLimits(env: Env): Config["rateLimits"] {
  return Object.freeze({
    requestsPerWindow: readVariable(env, "RATE_LIMIT_PER_MINUTE"),
    requestWindowSeconds: 60,
    signInAttemptsPerAccountIp: readVariable(env, "SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN"),
    signInAttemptsPerIp: readVariable(env, "SIGN_IN_ATTEMPTS_PER_IP_PER_15_MIN"),
    signInWindowSeconds: 900,
    signInAttemptsPerAccount: readVariable(env, "SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_HOUR"),
    signInAccountWindowSeconds: 3600,
    signUpsPerIp: readVariable(env, "SIGN_UPS_PER_IP_PER_HOUR"),
    signUpWindowSeconds: 3600,
  });
}

export function loadConfig(env: Env = process.env): Readonly<Config> {
  const databaseUrl = readVariable(env, "DATABASE_URL");
  const logLevel = readVariable(env, "LOG_LEVEL");
  const planTable = plans(env);
  const accountBaseUrl = readVariable(env, "ACCOUNT_BASE_URL");
  return Object.freeze({
    port: readVariable(env, "PORT"),
    gamePort: readVariable(env, "GAME_PORT"),
    host: readVariable(env, "HOST"),
    accountBaseUrl,
    gameIssuerUrl: readVariable(env, "GAME_ISSUER_URL"),
    databaseUrl,
    databasePoolSize: readVariable(env, "DATABASE_POOL_SIZE"),
    dataDir: readVariable(env, "DATA_DIR"),
    logLevel,
    ...planTable,
    sessionTtlSeconds: readVariable(env, "SESSION_TTL_DAYS") * 86_400,
    sessionIdleSeconds: readVariable(env, "SESSION_IDLE_HOURS") * 3600,
    rateLimits: rateLimits(env),
    passwordHashing: Object.freeze({ concurrency: passwordHashConcurrency(env), queue: readVariable(env, "PASSWORD_HASH_QUEUE") }),
    allowInsecureRedirectUris: readVariable(env, "ALLOW_INSECURE_REDIRECT_URIS"),
    allowInsecureGameServers: readVariable(env, "ALLOW_INSECURE_GAME_SERVERS"),
    allowLocalOutbound: readVariable(env, "ALLOW_LOCAL_OUTBOUND"),
    smtp: smtp(env, accountBaseUrl),
    trustedProxies: Object.freeze({ entries: readVariable(env, "TRUSTED_PROXIES"), header: readVariable(env, "TRUSTED_PROXY_HEADER") }),
    keyEncryptionKey: readVariable(env, "KEY_ENCRYPTION_KEY"),
    signingKeyRotationDays: readVariable(env, "SIGNING_KEY_ROTATION_DAYS"),
    fileTransferMaxBytes: readVariable(env, "FILE_TRANSFER_MAX_MB") * 1024 * 1024,
    scheduleGraceSeconds: readVariable(env, "SCHEDULE_GRACE_SECONDS"),
    idempotencyWaitMs: readVariable(env, "IDEMPOTENCY_WAIT_MS"),
    statsRetention: {
      rawHours: readVariable(env, "STATS_RAW_HOURS"),
      minuteDays: readVariable(env, "STATS_MINUTE_DAYS"),
      quarterDays: readVariable(env, "STATS_QUARTER_DAYS"),
    },
    metrics: metrics(env),
    shutdown: shutdown(env),
    tracing: tracing(env),
    vapidSubject: vapidSubject(env, accountBaseUrl),
    assistantModel: assistantModel(env),
  });
}
