/* eslint-disable max-lines -- a table of data: one entry per environment variable, with the words both docs print for it */
/**
 * Every environment variable Outpost reads: its kind of value (the parser), its default and what
 * the docs say of it. loadConfig (config.ts) reads through this table, and `npm run docs:config`
 * writes the README's configuration table and docs/deploy.md's from it (config-docs.ts), so a
 * variable, its default and its documentation change in one place; test/config/config-docs.test.ts
 * fails when a doc's table is not what the table here makes.
 */
import {
  autoOr,
  collectorUrl,
  mailbox,
  modelName,
  modelUrl,
  oneOf,
  optional,
  origin,
  otelBoolean,
  parseKeyEncryptionKey,
  path,
  postgresUrl,
  proxyEntries,
  proxyHeader,
  secretToken,
  serviceName,
  smtpUrl,
  text,
  trueOrFalse,
  vapidSubject,
  wholeNumber,
  type Parser,
} from "./config-parsers.ts";
import { ConfigError } from "./config-error.ts";
import { plans } from "./config-plans.ts";

export interface Variable<T> {
  /** Reads the variable's text: its value, or `default` when it is unset or empty ("" without one). */
  parse: Parser<T>;
  /** The text read when the variable is unset or empty. */
  default?: string;
  /** The default as the docs show it (Markdown), where the text alone would not say it (none, derived, generated). */
  shown?: string;
  /** The variable's old name, still read when this one is not set (setting both is refused). */
  oldName?: string;
  /** What it does: the README's table (Markdown, links relative to the repository's root). */
  doc: string;
  /** What a deployment of several instances sets: docs/deploy.md's table (Markdown, links relative to docs/). */
  deployment: string;
}

const logLevels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
const sameEverywhere = "same on every instance";
const keepFalse = "keep `false` in production";

/** The variables, in the order the docs list them. */
export const variables = {
  PORT: {
    parse: wholeNumber(0, 65535),
    default: "3000",
    doc: "dashboard, HTTP API, Account OAuth and `/api/rpc` (HTTP/1.1 and h2c on one port)",
    deployment: "what the proxy forwards to",
  },
  GAME_PORT: {
    parse: wholeNumber(0, 65535),
    default: "3001",
    doc: "the Game OAuth issuer (arrives with that issuer)",
    deployment: "what the proxy forwards to",
  },
  HOST: { parse: text, default: "0.0.0.0", doc: "address to listen on", deployment: "keep; the container's network is what limits who connects" },
  ACCOUNT_BASE_URL: {
    parse: origin,
    default: "http://localhost:3000",
    doc: "the public origin of `PORT`; `https` makes cookies `Secure` and gives their names the `__Host-` prefix (Path=/, no Domain: no subdomain can set them)",
    deployment: "the public `https://` origin of `PORT`",
  },
  GAME_ISSUER_URL: {
    parse: origin,
    default: "http://localhost:3001",
    doc: "the public origin of `GAME_PORT`; `https` makes the browser-binding cookie `Secure` and `__Host-` prefixed",
    deployment: "the public `https://` origin of `GAME_PORT`",
  },
  DATABASE_URL: {
    parse: optional(postgresUrl),
    shown: "*(unset: embedded PGlite in `DATA_DIR`)*",
    doc: "`postgres://…` of a PostgreSQL server",
    deployment: "required: `postgres://user:password@host:5432/db`, the same for every instance",
  },
  DATABASE_POOL_SIZE: {
    parse: wholeNumber(1, 200),
    default: "10",
    doc: "connections to that server",
    deployment:
      "per instance; each instance also opens up to 2 connections for rate limits and 1 for the bus: keep instances × (pool + 3) under the server's `max_connections`",
  },
  DATA_DIR: {
    parse: path,
    default: "./data",
    doc: "where the embedded database and a generated `key-encryption-key` live",
    deployment: "unused with `DATABASE_URL` and `KEY_ENCRYPTION_KEY` both set; the image uses `/data`",
  },
  LOG_LEVEL: {
    parse: oneOf(logLevels),
    default: "info",
    doc: "`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`; logs are JSON lines, printed readably instead when stdout is a terminal",
    deployment: "JSON lines on stdout",
  },
  PLANS: {
    parse: plans,
    default:
      '{"free":{"servers":3,"gameOAuthClients":2,"notes":50,"assistantQueriesPerDay":50,"assistantToolActionsPerDay":20},"pro":{"servers":25,"gameOAuthClients":20,"notes":1000,"assistantQueriesPerDay":1000,"assistantToolActionsPerDay":500}}',
    doc: "plans and their limits; a plan may leave out `notes` (1000 then), the assistant's two daily limits (50 and 20 then) and `emailsPerHour` (alert and test emails per organization, each recipient one: 30 then)",
    deployment: `${sameEverywhere}; each plan's optional \`emailsPerHour\` (30 when absent) caps its organizations' alert email ([docs/alerts.md](alerts.md#the-organizations-hourly-email-cap))`,
  },
  DEFAULT_PLAN: { parse: text, default: "free", doc: "the plan of a new organization", deployment: sameEverywhere },
  SESSION_TTL_DAYS: { parse: wholeNumber(1, 365), default: "30", doc: "how long a dashboard session lasts", deployment: sameEverywhere },
  SESSION_IDLE_HOURS: {
    parse: wholeNumber(1, 8760),
    default: "72",
    doc: "a dashboard session unused for longer ends (401), before its TTL; its last use is written at most once a minute",
    deployment: sameEverywhere,
  },
  RATE_LIMIT_PER_MINUTE: {
    parse: wholeNumber(1, 1_000_000),
    default: "600",
    doc: "calls to the user-facing services per minute for each credential (each client IP without one), and authorizations started at either issuer per client IP; over it: 429 / `resource_exhausted`, reason `rate_limited` (an issuer's authorize answers a 429 page with `Retry-After`)",
    deployment: "counted in PostgreSQL, so across instances",
  },
  SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN: {
    parse: wholeNumber(1, 10_000),
    default: "10",
    // Failed sign-ins were once counted per account alone; the same number now counts per account and IP.
    oldName: "SIGN_IN_ATTEMPTS_PER_15_MIN",
    doc: "failed sign-ins per 15 minutes for one account (email) from one client IP, after which sign-in to that account from that address is refused before the password is checked (policy `sign_in_account_ip`); the owner still gets in from another address",
    deployment: "counted across instances",
  },
  SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_HOUR: {
    parse: wholeNumber(1, 100_000),
    default: "100",
    doc: "failed sign-ins per hour for one account from every address together (policy `sign_in_account`), which bounds guessing spread over many addresses; attempts an address is already refused for do not count. A browser that signed in to the account before (its HttpOnly `outpost_device` cookie, 180 days) is exempt from this and from `sign_in_ip`, and has 10 failures per 15 minutes of its own (`sign_in_device`), so strangers cannot lock the owner out",
    deployment: "counted across instances",
  },
  SIGN_IN_ATTEMPTS_PER_IP_PER_15_MIN: {
    parse: wholeNumber(1, 100_000),
    default: "50",
    doc: "failed sign-ins per 15 minutes from one client IP, across accounts (policy `sign_in_ip`)",
    deployment: "counted across instances",
  },
  SIGN_UPS_PER_IP_PER_HOUR: {
    parse: wholeNumber(1, 100_000),
    default: "10",
    doc: "sign-ups per hour from one client IP, accepted or not (policy `sign_up_ip`); over it: 429 with `Retry-After`, before any password is hashed",
    deployment: "counted across instances",
  },
  PASSWORD_HASH_CONCURRENCY: {
    parse: autoOr(wholeNumber(1, 1024)),
    default: "auto",
    doc: "password hashes and checks (Argon2id, 19 MiB each) running at once in the process: sign-up, sign-in, password change, `user create`. `auto` is twice the CPU cores but at most one fewer than libuv's thread pool (`UV_THREADPOOL_SIZE`, 4 by default), where they run",
    deployment: "per instance (per process)",
  },
  PASSWORD_HASH_QUEUE: {
    parse: wholeNumber(0, 100_000),
    default: "32",
    doc: "how many more may wait for a place; past that a call is refused at once with 429 / `resource_exhausted`, reason `server_busy`, `Retry-After: 1`",
    deployment: "per instance (per process)",
  },
  UV_THREADPOOL_SIZE: {
    // Node's own variable: Outpost only reads it to size `auto` above, as Node would (4 unless a number).
    parse: (raw) => Number(raw) || 4,
    default: "4",
    shown: "`4` (Node's)",
    doc: "libuv's thread pool, read by Node itself, where password hashing runs; it bounds `PASSWORD_HASH_CONCURRENCY`'s `auto`",
    deployment: "bounds `PASSWORD_HASH_CONCURRENCY=auto`; raise both on large machines",
  },
  KEY_ENCRYPTION_KEY: {
    parse: optional(parseKeyEncryptionKey),
    shown: "*(unset: generated into `DATA_DIR/key-encryption-key`)*",
    doc: "32 random bytes in base64 (`openssl rand -base64 32`) that encrypt the issuers' private signing keys at rest (AES-256-GCM). Unset, one is generated into `DATA_DIR/key-encryption-key` (mode 0600) on first start; set it when several instances share a database. Keep it: keys encrypted under another are refused",
    deployment: "required, the same on every instance: `openssl rand -base64 32`. See [Rotating](#rotating-key_encryption_key)",
  },
  NEW_KEY_ENCRYPTION_KEY: {
    // Checked by the rotation itself (server/kek-rotation.ts), which also takes it from a file.
    parse: optional(text),
    doc: "the key `outpost keys rotate-kek` re-seals everything under, in the same form as `KEY_ENCRYPTION_KEY` (or give `--new-key-file`); no other command reads it",
    deployment: "read only by `outpost keys rotate-kek` (or use `--new-key-file`)",
  },
  SIGNING_KEY_ROTATION_DAYS: {
    parse: wholeNumber(1, 365),
    default: "30",
    doc: "days a signing key stays current; checked at start and hourly. Keys rotate next → current → previous, all three in the JWKS; the one leaving `previous` is deleted",
    deployment: `${sameEverywhere}; any one of them rotates, under a lock`,
  },
  FILE_TRANSFER_MAX_MB: {
    parse: wholeNumber(1, 1048576),
    default: "1024",
    doc: "the largest file, in MiB, that `servers/downloadFile` sends and `servers/uploadFile` takes (streamed in pieces through Outpost and the agent, so memory stays bounded whatever the size). `servers/readFile` and `writeFile` stay at 5 MiB",
    deployment: "the same on every instance",
  },
  SCHEDULE_GRACE_SECONDS: {
    parse: wholeNumber(60, 86400),
    default: "600",
    doc: "how late a server schedule's run may start when no instance was up at its time (it then runs once, late); a run missed by more is skipped. Both are recorded (`servers/listScheduleRuns`)",
    deployment: "the same on every instance",
  },
  IDEMPOTENCY_WAIT_MS: {
    parse: wholeNumber(0, 60000),
    default: "10000",
    doc: "how long, in milliseconds, a retry with an `Idempotency-Key` waits for the first request with that key to finish before it is answered 409 `idempotency_key_in_flight`",
    deployment: "the same on every instance",
  },
  STATS_RAW_HOURS: {
    parse: wholeNumber(1, 720),
    default: "48",
    doc: "hours the agents' 10-second samples (CPU, memory, players, TPS) are kept; older ones go by dropping a day's partition",
    deployment: "the same on every instance",
  },
  STATS_MINUTE_DAYS: {
    parse: wholeNumber(1, 366),
    default: "14",
    doc: "days the 1-minute rollups of those samples are kept",
    deployment: "the same on every instance",
  },
  STATS_QUARTER_DAYS: {
    parse: wholeNumber(1, 3660),
    default: "365",
    doc: "days the 15-minute rollups are kept (a month's partition goes once all of it is older)",
    deployment: "the same on every instance",
  },
  ALLOW_INSECURE_REDIRECT_URIS: {
    parse: trueOrFalse,
    default: "false",
    doc: "`true` lets OAuth redirect URIs use `http` on any host (local development); otherwise `http` only on `localhost`, `127.0.0.1` and `[::1]`",
    deployment: keepFalse,
  },
  ALLOW_INSECURE_GAME_SERVERS: {
    parse: trueOrFalse,
    default: "false",
    doc: "`true` lets game servers that cannot prove who their players are (agent `--auth offline` or `insecure`: anyone can join under any name) sign players in with Game OAuth (local development, tests). Otherwise only `online` servers and `proxy` ones (offline mode behind Velocity modern forwarding or BungeeGuard) can; the others refuse in game with the reason. Each sign-in such a server claims or completes says so in the activity log (`insecureServer`), and the log warns",
    deployment: keepFalse,
  },
  ALLOW_LOCAL_OUTBOUND: {
    parse: trueOrFalse,
    default: "false",
    doc: "`true` lets integrations (webhooks, Discord) and other outbound deliveries use `http` and loopback addresses (`localhost`, `127.0.0.0/8`, `[::1]`) for local development. Private, link-local (cloud metadata), CGNAT, unique-local and multicast addresses stay refused either way ([docs/alerts.md](docs/alerts.md#what-outpost-refuses-to-send-to-ssrf))",
    deployment: `${keepFalse} (it lets webhooks, Discord and push subscriptions use \`http\` and loopback, for local development)`,
  },
  SMTP_URL: {
    parse: optional(smtpUrl),
    shown: "*(unset: no email)*",
    doc: "the SMTP server integration email goes through: `smtps://user:password@mail.example.com:465`, or `smtp://…:587` (STARTTLS when the server offers it). Unset, email integrations cannot be added",
    deployment:
      "the SMTP server that integration email, invitations and email verification links go through ([docs/alerts.md](alerts.md)); same on every instance. Without it, the operator verifies addresses with `outpost user verify-email` ([below](#email-verification-from-migration-0029))",
  },
  SMTP_FROM: {
    parse: optional(mailbox),
    shown: "`Outpost <outpost@` + `ACCOUNT_BASE_URL`'s host `>`",
    doc: "the `From` of that email: an address or `Name <address>`",
    deployment: sameEverywhere,
  },
  TRUSTED_PROXIES: {
    parse: proxyEntries,
    default: "",
    shown: "*(empty)*",
    doc: "addresses and CIDR ranges, IPv4 and IPv6, separated by commas (`10.0.0.0/8, fd00::/8`), of the reverse proxies in front of both ports. When a request comes straight from one of them, its client is read from `TRUSTED_PROXY_HEADER`, from the right, skipping trusted hops; a malformed entry leaves the proxy as the client. Empty: the connection's peer is the client, and forwarding headers are ignored. The client address keys the per-IP rate limits and is recorded with sign-ins",
    deployment: "the proxy's address(es)",
  },
  TRUSTED_PROXY_HEADER: {
    parse: proxyHeader,
    default: "x-forwarded-for",
    doc: "the header those proxies write: `x-forwarded-for` or `forwarded` (RFC 7239 `for=`). Only that one is read, since a proxy passes the other through as the client sent it",
    deployment: "the header the proxy writes (`forwarded` for RFC 7239)",
  },
  METRICS_PORT: {
    parse: optional(wholeNumber(0, 65535)),
    shown: "*(unset: none)*",
    doc: "a listener of its own serving only the Prometheus metrics at `/metrics` ([docs/operations.md](docs/operations.md))",
    deployment: "per instance: each process keeps its own metrics, so scrape every instance and sum ([docs/operations.md](operations.md#metrics))",
  },
  METRICS_HOST: {
    parse: text,
    default: "127.0.0.1",
    doc: "the address `METRICS_PORT` listens on; loopback unless you say otherwise",
    deployment: "loopback for a scraper beside the process",
  },
  METRICS_TOKEN: {
    parse: optional(secretToken(16, 256, "16 to 256 printable characters without spaces, e.g. from `openssl rand -hex 32`")),
    shown: "*(unset)*",
    doc: "16 to 256 printable characters (`openssl rand -hex 32`). Set, `/metrics` is also served on `PORT`, only to `Authorization: Bearer <token>` (401 otherwise), and `METRICS_PORT` asks it too. Unset, `PORT` has no `/metrics` (404)",
    deployment: "for a scraper elsewhere, which reads `PORT` behind TLS",
  },
  SHUTDOWN_TIMEOUT_MS: {
    parse: wholeNumber(1000, 600_000),
    default: "10000",
    doc: "on SIGTERM or SIGINT the process exits within this long whatever hangs (1,000 to 600,000)",
    deployment: "less than the time the orchestrator waits after SIGTERM before it kills the process",
  },
  SHUTDOWN_DELAY_MS: {
    parse: wholeNumber(0, 600_000),
    default: "0",
    doc: "how long `/readyz` answers 503 while requests are still served, before the listeners close: give a proxy that polls `/readyz` time to stop sending (less than `SHUTDOWN_TIMEOUT_MS`)",
    deployment: "at least the proxy's `/readyz` interval, unless it retries refused connections on another instance",
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    parse: optional(collectorUrl),
    shown: "*(unset: no tracing)*",
    doc: "an OpenTelemetry collector's OTLP/HTTP base URL (`http://collector:4318`); traces go to its `/v1/traces` ([docs/operations.md](docs/operations.md#tracing))",
    deployment: "the collector every instance sends to ([docs/operations.md](operations.md#tracing))",
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    parse: optional(collectorUrl),
    shown: "*(unset)*",
    doc: "the traces URL itself, used as it is; wins over `OTEL_EXPORTER_OTLP_ENDPOINT`",
    deployment: "instead of the one above, when the collector's path is not `/v1/traces`",
  },
  OTEL_SERVICE_NAME: {
    parse: serviceName,
    default: "outpost",
    doc: "`service.name` of the spans; instances sharing it are told apart by `host.name` and `service.instance.id`",
    deployment: sameEverywhere,
  },
  OTEL_SDK_DISABLED: {
    parse: otelBoolean,
    default: "",
    shown: "*(unset)*",
    doc: "`true`: no tracing, whatever the endpoints say (the OpenTelemetry switch)",
    deployment: "turns tracing off without unsetting the endpoints",
  },
  VAPID_SUBJECT: {
    parse: optional(vapidSubject),
    shown: "`ACCOUNT_BASE_URL` (https) or `mailto:outpost@<host>`",
    doc: "the `sub` of every Web Push request's VAPID token (RFC 8292): how a push service (Mozilla's, Google's, Apple's) can reach whoever runs this deployment, a `mailto:` address or an `https:` URL. Unset: `ACCOUNT_BASE_URL` when it is `https`, else `mailto:outpost@<its host>` (Apple's push service refuses `localhost`). The VAPID key itself is made once per deployment and kept sealed under `KEY_ENCRYPTION_KEY` ([docs/dashboard.md](docs/dashboard.md#installable-app-and-push-notifications))",
    deployment: `a \`mailto:\` or \`https:\` contact for push services; ${sameEverywhere}`,
  },
  OCELOT_MODEL_URL: {
    parse: optional(modelUrl),
    shown: "*(unset: no assistant)*",
    doc: "the assistant's model: an OpenAI-compatible chat-completions endpoint's base URL, e.g. `http://127.0.0.1:11434/v1` for a local Ollama. http and loopback are fine (the operator chooses it). Unset, asking the assistant is refused and everything else works ([docs/chat.md](docs/chat.md#the-model-endpoint))",
    deployment: sameEverywhere,
  },
  OCELOT_MODEL: {
    parse: modelName,
    shown: "*(needed with a URL)*",
    doc: "the model's name as the endpoint knows it, e.g. `llama3.1`",
    deployment: sameEverywhere,
  },
  OCELOT_MODEL_API_KEY: {
    parse: optional(secretToken(1, 1000, "printable characters without spaces")),
    shown: "*(unset)*",
    doc: "sent as `Authorization: Bearer …` to the model's endpoint; a secret",
    deployment: sameEverywhere,
  },
  OCELOT_MODEL_TIMEOUT_SECONDS: {
    parse: wholeNumber(1, 600),
    default: "60",
    doc: "1–600: how long the model may stay silent (before its first byte, between two chunks) before the answer fails with 503; the whole answer may take five times this",
    deployment: sameEverywhere,
  },
} satisfies Record<string, Variable<unknown>>;

export type VariableName = keyof typeof variables;

/** What `name` holds once read. */
export type ValueOf<N extends VariableName> = ReturnType<(typeof variables)[N]["parse"]>;

export type Env = Record<string, string | undefined>;

const isSet = (value: string | undefined): value is string => value !== undefined && value !== "";

/** The variable's text (its old name's, or its default), and the name it was read under, for messages. */
function source(env: Env, name: VariableName): { raw: string; from: string } {
  const variable: Variable<unknown> = variables[name];
  const old = variable.oldName;
  if (old && isSet(env[old])) {
    if (isSet(env[name])) throw new ConfigError(`set ${name} only: ${old} is its old name (both are set)`);
    return { raw: env[old], from: old };
  }
  const value = env[name];
  return { raw: isSet(value) ? value : (variable.default ?? ""), from: name };
}

/** Reads one variable as its kind of value; throws a ConfigError naming it when the text is not one. */
export function readVariable<N extends VariableName>(env: Env, name: N): ValueOf<N> {
  const { raw, from } = source(env, name);
  return variables[name].parse(raw, from) as ValueOf<N>;
}
