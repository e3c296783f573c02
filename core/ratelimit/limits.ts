/**
 * Rate limits as fixed windows (rate-limiter-flexible). On a PostgreSQL server the counts live in
 * the `rate_limits` table, so every instance shares them; on the embedded database, which one
 * process serves, they live in memory. Nothing outside this folder sees the library. The named
 * limits are in policies.ts, one policy's counter in limiter.ts; this file builds the set on a store.
 */
import pg from "pg";
import type { Logger } from "pino";
import { RateLimiterMemory, RateLimiterPostgres } from "rate-limiter-flexible";
import { createLimiter, type Limiter } from "./limiter.ts";
import { policiesFor, type RateLimitConfig, type RateLimitPolicy } from "./policies.ts";
import { commitWithoutWaitingForDisk, deleteExpiredCounts } from "./ratelimit-queries.ts";
import { onConnection } from "../db/sql.ts";
import { jobFailureLog } from "../log-throttle.ts";
import { connectionTimeoutMillis } from "../db/orm.ts";
import type { PoolUse } from "../metrics.ts";

export interface RateLimits {
  /** Where the counts live: "postgres" (shared by every instance) or "memory" (this process). */
  readonly store: "postgres" | "memory";
  /** Every call to a user-facing service ("default"). */
  readonly requests: Limiter;
  /** Failed sign-ins per account from one client IP ("sign_in_account_ip"). */
  readonly signInPerAccountIp: Limiter;
  /** Failed sign-ins per account from every address, a longer window ("sign_in_account"). */
  readonly signInPerAccount: Limiter;
  /** Failed sign-ins per client IP ("sign_in_ip"). */
  readonly signInPerIp: Limiter;
  /** Failed sign-ins per known device, instead of the two above ("sign_in_device"). */
  readonly signInPerDevice: Limiter;
  /** Sign-ups per client IP ("sign_up_ip"). */
  readonly signUpPerIp: Limiter;
  /** Wrong in-game login codes per player and organization, on any of its servers ("login_code_player"). */
  readonly loginCodePerPlayer: Limiter;
  /** Wrong in-game login codes per game server ("login_code_server"). */
  readonly loginCodePerServer: Limiter;
  /** Wrong in-game login codes per organization, on all its servers ("login_code_organization"). */
  readonly loginCodePerOrganization: Limiter;
  /** Wrong in-game login codes on every server of every organization ("login_code_global"). */
  readonly loginCodeGlobal: Limiter;
  /** Credentials that match nothing, per client IP ("bad_credential_ip"). */
  readonly badCredentialPerIp: Limiter;
  /** Activity events strangers can cause, per subject ("activity_event"). */
  readonly activityEvents: Limiter;
  /** Test email, webhooks and pushes a person asks for, per user ("test_send"). */
  readonly testSends: Limiter;
  /** Invitations a person sends, per user ("invitation"). */
  readonly invitations: Limiter;
  /** Verification links a person asks to be mailed again, per user ("email_verification"). */
  readonly emailVerifications: Limiter;
  /** Its own connections (PostgreSQL's store only): open, idle, and callers waiting for one. */
  poolUse?(): PoolUse;
  close(): Promise<void>;
}

/** The table migration 0002 creates, with the columns rate-limiter-flexible's PostgreSQL store uses. */
const rateLimitTable = "rate_limits";

/** Rows whose window ended this long ago are deleted, every {@link cleanupEveryMs}. */
const expiredRowAgeMs = 3_600_000;
const cleanupEveryMs = 300_000;

/** Counts in this process's memory: for the embedded database, and for tests. */
export function createMemoryRateLimits(config: RateLimitConfig): RateLimits {
  const policies = policiesFor(config);
  const build = (policy: RateLimitPolicy) =>
    createLimiter(policy, new RateLimiterMemory({ keyPrefix: policy.name, points: policy.limit, duration: policy.windowSeconds }));
  return {
    store: "memory",
    requests: build(policies.requests),
    signInPerAccountIp: build(policies.signInPerAccountIp),
    signInPerAccount: build(policies.signInPerAccount),
    signInPerIp: build(policies.signInPerIp),
    signInPerDevice: build(policies.signInPerDevice),
    signUpPerIp: build(policies.signUpPerIp),
    loginCodePerPlayer: build(policies.loginCodePerPlayer),
    loginCodePerServer: build(policies.loginCodePerServer),
    loginCodePerOrganization: build(policies.loginCodePerOrganization),
    loginCodeGlobal: build(policies.loginCodeGlobal),
    badCredentialPerIp: build(policies.badCredentialPerIp),
    activityEvents: build(policies.activityEvents),
    testSends: build(policies.testSends),
    invitations: build(policies.invitations),
    emailVerifications: build(policies.emailVerifications),
    async close() {},
  };
}

/**
 * Counts in PostgreSQL through `pool`, shared by every instance on the database. The table comes
 * from migration 0002 (the library is told not to create it) and expired rows are swept here.
 * `close` stops the sweep; the pool belongs to the caller.
 */
export function createPostgresRateLimits(config: RateLimitConfig, pool: pg.Pool): RateLimits {
  const policies = policiesFor(config);
  const build = (policy: RateLimitPolicy, blockInMemory: boolean) =>
    createLimiter(
      policy,
      new RateLimiterPostgres({
        storeClient: pool,
        storeType: "pool",
        tableName: rateLimitTable,
        tableCreated: true,
        clearExpiredByTimeout: false,
        keyPrefix: policy.name,
        points: policy.limit,
        duration: policy.windowSeconds,
        // A key over the limit is refused from memory until its window ends, so a flood costs no
        // queries. Not for sign-in counts: another instance may reset those.
        ...(blockInMemory && { inMemoryBlockOnConsumed: policy.limit + 1 }),
      }),
    );
  const counts = onConnection(pool);
  const sweep = setInterval(() => {
    deleteExpiredCounts(counts, Date.now() - expiredRowAgeMs).catch(() => {});
  }, cleanupEveryMs);
  sweep.unref();
  return {
    store: "postgres",
    requests: build(policies.requests, true),
    signInPerAccountIp: build(policies.signInPerAccountIp, false),
    signInPerAccount: build(policies.signInPerAccount, false),
    signInPerIp: build(policies.signInPerIp, false),
    signInPerDevice: build(policies.signInPerDevice, false),
    // Never refunded nor reset: a refused address may be refused from memory.
    signUpPerIp: build(policies.signUpPerIp, true),
    // Not blocked in memory either: a success refunds, possibly on another instance.
    loginCodePerPlayer: build(policies.loginCodePerPlayer, false),
    loginCodePerServer: build(policies.loginCodePerServer, false),
    loginCodePerOrganization: build(policies.loginCodePerOrganization, false),
    loginCodeGlobal: build(policies.loginCodeGlobal, false),
    badCredentialPerIp: build(policies.badCredentialPerIp, true),
    activityEvents: build(policies.activityEvents, true),
    testSends: build(policies.testSends, true),
    invitations: build(policies.invitations, true),
    emailVerifications: build(policies.emailVerifications, true),
    async close() {
      clearInterval(sweep);
    },
  };
}

/** The counts' own small pool on a PostgreSQL server. */
export function openCountPool(url: string, logger?: Logger): pg.Pool {
  // A database that does not answer fails the count in seconds (the call is then 503), as core's pool does.
  const pool = new pg.Pool({
    connectionString: url,
    max: 2,
    connectionTimeoutMillis,
    keepAlive: true,
    // A count is acknowledged without waiting for its WAL to reach the disk: a crash of PostgreSQL
    // itself loses at most the last fraction of a second of counts (three wal_writer_delays), never a
    // committed row's consistency. Every call counts before it runs, so a flush per count was a
    // disk wait on every call's path, and the wait bench:console's database spent most time in.
    // Set on each new connection before the pool hands it out (not a startup option, which a
    // pooler in session mode may refuse; one in transaction mode is not supported at all, see
    // docs/operations.md).
    onConnect: async (client) => {
      await commitWithoutWaitingForDisk(onConnection(client));
    },
  });
  // An idle connection that drops must not crash the process; the next query reports the failure.
  // An outage drops every idle connection at once: one warning a minute, not one per connection.
  const failed = logger && jobFailureLog(logger, "rate-limit database connection failed", "warn");
  pool.on("error", (error) => failed?.(error));
  return pool;
}

/**
 * The rate limits for a database: PostgreSQL's store on a PostgreSQL server (its own small pool,
 * closed by `close`), memory on the embedded database. Called by the composition root.
 */
export function openRateLimits(config: RateLimitConfig, database: { kind: string; url: string }, logger?: Logger): RateLimits {
  if (database.kind !== "postgres") return createMemoryRateLimits(config);
  const pool = openCountPool(database.url, logger);
  const limits = createPostgresRateLimits(config, pool);
  return {
    ...limits,
    poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async close() {
      await limits.close();
      await pool.end();
    },
  };
}
