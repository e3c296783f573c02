/**
 * The configuration, read once from the environment, validated and frozen. A bad value stops
 * start-up with one line naming the variable, what it must be and what it was.
 *
 * Past 300 lines on purpose: it is the one place every variable is read and checked, each group
 * in a small function of its own, and splitting it would scatter what the README's table mirrors.
 */
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import type { PasswordHashingLimits } from "../core/auth/passwords.ts";
import type { AssistantModelConfig, PlanLimits } from "../core/deps.ts";
import type { RateLimitConfig } from "../core/ratelimit/policies.ts";
import { proxyEntryProblem, proxyHeaders, type ProxyHeader, type TrustedProxies } from "../edge/client-address.ts";

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

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** Every variable with its default, as the README documents them. */
export const defaults = {
  PORT: "3000",
  GAME_PORT: "3001",
  HOST: "0.0.0.0",
  ACCOUNT_BASE_URL: "http://localhost:3000",
  GAME_ISSUER_URL: "http://localhost:3001",
  DATABASE_POOL_SIZE: "10",
  DATA_DIR: "./data",
  LOG_LEVEL: "info",
  PLANS: '{"free":{"servers":3,"gameOAuthClients":2,"notes":50,"assistantQueriesPerDay":50,"assistantToolActionsPerDay":20},"pro":{"servers":25,"gameOAuthClients":20,"notes":1000,"assistantQueriesPerDay":1000,"assistantToolActionsPerDay":500}}',
  DEFAULT_PLAN: "free",
  SESSION_TTL_DAYS: "30",
  SESSION_IDLE_HOURS: "72",
  RATE_LIMIT_PER_MINUTE: "600",
  SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN: "10",
  SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_HOUR: "100",
  SIGN_IN_ATTEMPTS_PER_IP_PER_15_MIN: "50",
  SIGN_UPS_PER_IP_PER_HOUR: "10",
  PASSWORD_HASH_CONCURRENCY: "auto",
  PASSWORD_HASH_QUEUE: "32",
  SIGNING_KEY_ROTATION_DAYS: "30",
  ALLOW_INSECURE_REDIRECT_URIS: "false",
  ALLOW_INSECURE_GAME_SERVERS: "false",
  ALLOW_LOCAL_OUTBOUND: "false",
  SMTP_URL: "",
  SMTP_FROM: "",
  TRUSTED_PROXIES: "",
  TRUSTED_PROXY_HEADER: "x-forwarded-for",
  METRICS_PORT: "",
  METRICS_HOST: "127.0.0.1",
  METRICS_TOKEN: "",
  SHUTDOWN_TIMEOUT_MS: "10000",
  SHUTDOWN_DELAY_MS: "0",
  OTEL_EXPORTER_OTLP_ENDPOINT: "",
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "",
  OTEL_SERVICE_NAME: "outpost",
  /** Empty: ACCOUNT_BASE_URL when it is https, else mailto:outpost@<its host>. */
  VAPID_SUBJECT: "",
  OCELOT_MODEL_URL: "",
  OCELOT_MODEL: "",
  OCELOT_MODEL_API_KEY: "",
  OCELOT_MODEL_TIMEOUT_SECONDS: "60",
} as const;

/** Variables renamed, by their new name: the old name is still read when the new one is not set. */
export const oldNames: Partial<Record<keyof typeof defaults, string>> = {
  // Failed sign-ins were once counted per account alone; the same number now counts per account and IP.
  SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN: "SIGN_IN_ATTEMPTS_PER_15_MIN",
};

type Env = Record<string, string | undefined>;

const isSet = (value: string | undefined): value is string => value !== undefined && value !== "";

/** The variable's value (or its old name's), and the name it was read under, for messages. */
function source(env: Env, name: keyof typeof defaults): { raw: string; from: string } {
  const old = oldNames[name];
  if (old && isSet(env[old])) {
    if (isSet(env[name])) throw new ConfigError(`set ${name} only: ${old} is its old name (both are set)`);
    return { raw: env[old], from: old };
  }
  const value = env[name];
  return { raw: isSet(value) ? value : defaults[name], from: name };
}

function read(env: Env, name: keyof typeof defaults): string {
  return source(env, name).raw;
}

function integer(env: Env, name: keyof typeof defaults, min: number, max: number): number {
  const { raw, from } = source(env, name);
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new ConfigError(`${from} must be a whole number from ${min} to ${max} (got "${raw}")`);
  }
  return value;
}

function flag(env: Env, name: keyof typeof defaults): boolean {
  const raw = read(env, name);
  if (raw !== "true" && raw !== "false") throw new ConfigError(`${name} must be true or false (got "${raw}")`);
  return raw === "true";
}

/** `name`'s value as an absolute http(s) URL; `example` shows what one looks like. */
function httpUrl(env: Env, name: keyof typeof defaults, example = ""): URL {
  const raw = read(env, name);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL${example && `, like ${example}`} (got "${raw}")`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`${name} must use http or https (got "${raw}")`);
  }
  return url;
}

function baseUrl(env: Env, name: keyof typeof defaults): URL {
  const url = httpUrl(env, name);
  const raw = read(env, name);
  if (url.pathname !== "/" || url.search || url.hash || url.username || url.password) {
    throw new ConfigError(`${name} must be an origin only, like https://outpost.example.com (got "${raw}")`);
  }
  return url;
}

/** The hourly email cap of a plan whose PLANS entry does not name one. */
export const defaultEmailsPerHour = 30;

/** The note limit of a plan whose PLANS entry does not name one (entries written before notes existed). */
export const defaultNoteLimit = 1000;

function plans(env: Env): Record<string, PlanLimits> {
  const raw = read(env, "PLANS");
  const shape = 'PLANS must be JSON like {"free":{"servers":3,"gameOAuthClients":2,"notes":50}} (notes, the assistant\'s limits and emailsPerHour optional)';
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${shape} (it is not JSON)`);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed) || Object.keys(parsed).length === 0) {
    throw new ConfigError(`${shape} (got ${raw})`);
  }
  // No prototype: a plan named like one of Object's properties is just a name.
  const result: Record<string, PlanLimits> = Object.create(null);
  for (const [name, given] of Object.entries(parsed)) {
    const limits = given && typeof given === "object" && !Array.isArray(given) ? { ...optionalPlanLimits, ...given } : undefined;
    const ok =
      /^[a-z0-9_-]{1,40}$/.test(name) &&
      limits &&
      Object.keys(limits).sort().join() === planLimitNames.join() &&
      planLimitNames.every((key) => Number.isInteger(limits[key]) && limits[key] >= 0 && limits[key] <= 100000);
    if (!ok) throw new ConfigError(`${shape}; plan "${name}" is not (limits are whole numbers from 0 to 100000)`);
    result[name] = Object.freeze(Object.fromEntries(planLimitNames.map((key) => [key, limits[key]])) as unknown as PlanLimits);
  }
  return result;
}

/** The limits a plan must name in PLANS, and those it may leave out (then the value here applies). */
const requiredPlanLimits = ["servers", "gameOAuthClients"] as const;
const optionalPlanLimits = {
  notes: defaultNoteLimit,
  assistantQueriesPerDay: 50,
  assistantToolActionsPerDay: 20,
  /** Low: alert email is for an organization's own people, a few alerts an hour (core/integrations/email-cap.ts). */
  emailsPerHour: defaultEmailsPerHour,
};
const planLimitNames = [...requiredPlanLimits, ...Object.keys(optionalPlanLimits)].sort() as Array<keyof PlanLimits>;

/**
 * PASSWORD_HASH_CONCURRENCY: a number, or "auto": twice the CPU cores, but one fewer than libuv's
 * thread pool (UV_THREADPOOL_SIZE, 4 by default), where Argon2id runs — more would only wait
 * there, out of the cap's sight, and the last thread stays free for file and DNS work.
 */
function passwordHashConcurrency(env: Env): number {
  if (read(env, "PASSWORD_HASH_CONCURRENCY") !== "auto") return integer(env, "PASSWORD_HASH_CONCURRENCY", 1, 1024);
  const pool = Number(env.UV_THREADPOOL_SIZE) || 4;
  return Math.max(1, Math.min(2 * availableParallelism(), pool - 1));
}

/** TRUSTED_PROXIES (addresses and CIDR ranges, comma-separated) and the header they write. */
function trustedProxies(env: Env): TrustedProxies {
  const entries = (env.TRUSTED_PROXIES ?? defaults.TRUSTED_PROXIES).split(",").map((e) => e.trim()).filter(Boolean);
  for (const entry of entries) {
    const problem = proxyEntryProblem(entry);
    if (problem) throw new ConfigError(`TRUSTED_PROXIES must be IP addresses and CIDR ranges separated by commas ("${entry}": ${problem})`);
  }
  const header = read(env, "TRUSTED_PROXY_HEADER").toLowerCase();
  if (!(proxyHeaders as readonly string[]).includes(header)) {
    throw new ConfigError(`TRUSTED_PROXY_HEADER must be x-forwarded-for or forwarded (got "${header}")`);
  }
  return Object.freeze({ entries: Object.freeze(entries), header: header as ProxyHeader });
}

/**
 * A key-encryption key as text: 32 bytes in base64 (or base64url), from `name` (a variable or a
 * file). A secret, so no message repeats it.
 */
export function parseKeyEncryptionKey(raw: string, name: string): Buffer {
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(raw)) {
    throw new ConfigError(`${name} must be 32 random bytes in base64 (44 characters), e.g. from \`openssl rand -base64 32\` (got ${raw.length} characters; a secret, so not shown)`);
  }
  return Buffer.from(raw, "base64");
}

/** KEY_ENCRYPTION_KEY, when set. */
function keyEncryptionKey(env: Env): Buffer | undefined {
  const raw = env.KEY_ENCRYPTION_KEY;
  return raw === undefined || raw === "" ? undefined : parseKeyEncryptionKey(raw, "KEY_ENCRYPTION_KEY");
}

/** SMTP_URL and SMTP_FROM: off without a URL; the From defaults to outpost@ the dashboard's host. */
function smtp(env: Env, accountBaseUrl: URL): Config["smtp"] {
  const url = env.SMTP_URL || undefined;
  if (!url) return undefined;
  if (!/^smtps?:\/\/[^/?#]+/.test(url)) {
    throw new ConfigError("SMTP_URL must be an smtp:// or smtps:// URL, like smtps://user:password@mail.example.com:465 (a secret, so not shown)");
  }
  const from = env.SMTP_FROM || `Outpost <outpost@${accountBaseUrl.hostname}>`;
  if (!/^([^<>\r\n]*<)?[^\s<>@]+@[^\s<>@]+>?$/.test(from) || from.length > 320) {
    throw new ConfigError(`SMTP_FROM must be an address or "Name <address>" (got "${from}")`);
  }
  return Object.freeze({ url, from });
}

/** METRICS_*: off unless a port or a token is set; a token is a secret, so no message repeats it. */
function metrics(env: Env): Config["metrics"] {
  const token = env.METRICS_TOKEN || undefined;
  if (token !== undefined && !/^[\x21-\x7e]{16,256}$/.test(token)) {
    throw new ConfigError(`METRICS_TOKEN must be 16 to 256 printable characters without spaces, e.g. from \`openssl rand -hex 32\` (got ${token.length} characters; a secret, so not shown)`);
  }
  const port = env.METRICS_PORT ? integer(env, "METRICS_PORT", 0, 65535) : undefined;
  if (port && (port === integer(env, "PORT", 0, 65535) || port === integer(env, "GAME_PORT", 0, 65535))) {
    throw new ConfigError(`METRICS_PORT must differ from PORT and GAME_PORT (got ${port})`);
  }
  return Object.freeze({ port, host: read(env, "METRICS_HOST"), token });
}

function shutdown(env: Env): Config["shutdown"] {
  const timeoutMs = integer(env, "SHUTDOWN_TIMEOUT_MS", 1000, 600_000);
  const delayMs = integer(env, "SHUTDOWN_DELAY_MS", 0, 600_000);
  if (delayMs >= timeoutMs) throw new ConfigError(`SHUTDOWN_DELAY_MS must be less than SHUTDOWN_TIMEOUT_MS (${timeoutMs}; got ${delayMs})`);
  return Object.freeze({ timeoutMs, delayMs });
}

/** A collector's URL from `name`: absolute http(s), no credentials in it (headers carry those). */
function collectorUrl(env: Env, name: keyof typeof defaults): URL {
  const url = httpUrl(env, name, "http://collector:4318");
  if (url.username || url.password) {
    throw new ConfigError(`${name} must not carry credentials; put them in OTEL_EXPORTER_OTLP_HEADERS (got a URL with a user or password; not shown)`);
  }
  return url;
}

/**
 * The standard OpenTelemetry variables: off unless an endpoint is set (or OTEL_SDK_DISABLED says
 * so). OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the traces URL as it is; OTEL_EXPORTER_OTLP_ENDPOINT is
 * the collector's base, to which the signal's path `v1/traces` is added, as the specification says.
 */
function tracing(env: Env): Config["tracing"] {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  let url: URL;
  if (isSet(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) url = collectorUrl(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  else if (isSet(env.OTEL_EXPORTER_OTLP_ENDPOINT)) {
    const base = collectorUrl(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
    url = new URL(base.pathname.endsWith("/") ? "v1/traces" : `${base.pathname}/v1/traces`, base);
  } else return undefined;
  const serviceName = read(env, "OTEL_SERVICE_NAME");
  if (!/^[\x21-\x7e][\x20-\x7e]{0,254}$/.test(serviceName)) {
    throw new ConfigError(`OTEL_SERVICE_NAME must be 1 to 255 printable characters (got "${serviceName}")`);
  }
  return Object.freeze({ url: url.href, serviceName });
}

/**
 * VAPID_SUBJECT: how a push service can reach whoever runs this deployment (RFC 8292 `sub`), a
 * mailto: or https: URL. Unset: ACCOUNT_BASE_URL when it is https, otherwise a mailto: at its host.
 */
function vapidSubject(env: Env, accountBaseUrl: URL): string {
  const raw = read(env, "VAPID_SUBJECT");
  if (raw === "") return accountBaseUrl.protocol === "https:" ? accountBaseUrl.origin : `mailto:outpost@${accountBaseUrl.hostname}`;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  const ok = url && ((url.protocol === "mailto:" && /^[^@\s]+@[^@\s]+$/.test(url.pathname)) || (url.protocol === "https:" && !url.username && !url.password));
  if (!ok) throw new ConfigError(`VAPID_SUBJECT must be a mailto: address or an https: URL, like mailto:ops@example.com (got "${raw}")`);
  return raw;
}

/**
 * OCELOT_MODEL_*: the assistant's model, an OpenAI-compatible endpoint the operator runs or buys
 * (so http and loopback are fine: no user chooses it). Off without a URL; with one, the model's
 * name is needed. The key is a secret, so no message repeats it.
 */
function assistantModel(env: Env): Config["assistantModel"] {
  const timeoutSeconds = integer(env, "OCELOT_MODEL_TIMEOUT_SECONDS", 1, 600);
  if (!env.OCELOT_MODEL_URL) return undefined;
  const url = httpUrl(env, "OCELOT_MODEL_URL", "http://127.0.0.1:11434/v1");
  if (url.search || url.hash) throw new ConfigError(`OCELOT_MODEL_URL must be a base URL without a query or fragment, like http://127.0.0.1:11434/v1 (got "${url.href}")`);
  const model = env.OCELOT_MODEL ?? "";
  if (!/^[\x21-\x7e]{1,200}$/.test(model)) throw new ConfigError(`OCELOT_MODEL must name the model (1 to 200 printable characters without spaces, like llama3.1) when OCELOT_MODEL_URL is set (got "${model}")`);
  const apiKey = env.OCELOT_MODEL_API_KEY || undefined;
  if (apiKey !== undefined && !/^[\x21-\x7e]{1,1000}$/.test(apiKey)) {
    throw new ConfigError(`OCELOT_MODEL_API_KEY must be printable characters without spaces (got ${apiKey.length} characters; a secret, so not shown)`);
  }
  return Object.freeze({ url: url.href.replace(/\/+$/, ""), model, apiKey, timeoutSeconds });
}

export function loadConfig(env: Env = process.env): Readonly<Config> {
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL must be a postgres:// URL");
  }
  const logLevel = read(env, "LOG_LEVEL");
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "${logLevel}")`);
  }
  const planTable = plans(env);
  const defaultPlan = read(env, "DEFAULT_PLAN");
  if (!Object.hasOwn(planTable, defaultPlan)) {
    throw new ConfigError(`DEFAULT_PLAN must name a plan in PLANS (${Object.keys(planTable).join(", ")}; got "${defaultPlan}")`);
  }
  const accountBaseUrl = baseUrl(env, "ACCOUNT_BASE_URL");
  return Object.freeze({
    port: integer(env, "PORT", 0, 65535),
    gamePort: integer(env, "GAME_PORT", 0, 65535),
    host: read(env, "HOST"),
    accountBaseUrl,
    gameIssuerUrl: baseUrl(env, "GAME_ISSUER_URL"),
    databaseUrl,
    databasePoolSize: integer(env, "DATABASE_POOL_SIZE", 1, 200),
    dataDir: resolve(read(env, "DATA_DIR")),
    logLevel: logLevel as Config["logLevel"],
    plans: Object.freeze(planTable),
    defaultPlan,
    sessionTtlSeconds: integer(env, "SESSION_TTL_DAYS", 1, 365) * 86_400,
    sessionIdleSeconds: integer(env, "SESSION_IDLE_HOURS", 1, 8760) * 3600,
    rateLimits: Object.freeze({
      requestsPerWindow: integer(env, "RATE_LIMIT_PER_MINUTE", 1, 1_000_000),
      requestWindowSeconds: 60,
      signInAttemptsPerAccountIp: integer(env, "SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN", 1, 10_000),
      signInAttemptsPerIp: integer(env, "SIGN_IN_ATTEMPTS_PER_IP_PER_15_MIN", 1, 100_000),
      signInWindowSeconds: 900,
      signInAttemptsPerAccount: integer(env, "SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_HOUR", 1, 100_000),
      signInAccountWindowSeconds: 3600,
      signUpsPerIp: integer(env, "SIGN_UPS_PER_IP_PER_HOUR", 1, 100_000),
      signUpWindowSeconds: 3600,
    }),
    passwordHashing: Object.freeze({
      concurrency: passwordHashConcurrency(env),
      queue: integer(env, "PASSWORD_HASH_QUEUE", 0, 100_000),
    }),
    allowInsecureRedirectUris: flag(env, "ALLOW_INSECURE_REDIRECT_URIS"),
    allowInsecureGameServers: flag(env, "ALLOW_INSECURE_GAME_SERVERS"),
    allowLocalOutbound: flag(env, "ALLOW_LOCAL_OUTBOUND"),
    smtp: smtp(env, accountBaseUrl),
    trustedProxies: trustedProxies(env),
    keyEncryptionKey: keyEncryptionKey(env),
    signingKeyRotationDays: integer(env, "SIGNING_KEY_ROTATION_DAYS", 1, 365),
    metrics: metrics(env),
    shutdown: shutdown(env),
    tracing: tracing(env),
    vapidSubject: vapidSubject(env, accountBaseUrl),
    assistantModel: assistantModel(env),
  });
}
