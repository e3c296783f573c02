/**
 * Rate limits as fixed windows (rate-limiter-flexible). On a PostgreSQL server the counts live in
 * the `rate_limits` table, so every instance shares them; on the embedded database, which one
 * process serves, they live in memory. Nothing outside this folder sees the library.
 */
import pg from "pg";
import type { Logger } from "pino";
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import { BoundedMap } from "../bounded-map.ts";
import { connectionTimeoutMillis } from "../db/orm.ts";
import type { PoolUse } from "../metrics.ts";

/** The limits, as the composition root configures them. */
export interface RateLimitConfig {
  /** Calls to user-facing services per window, for each credential (each client IP without one). */
  requestsPerWindow: number;
  requestWindowSeconds: number;
  /** Failed sign-ins per window for one account (by email, whether or not it exists) from one client IP. */
  signInAttemptsPerAccountIp: number;
  /** Failed sign-ins per window from one client IP, across accounts. */
  signInAttemptsPerIp: number;
  signInWindowSeconds: number;
  /** Failed sign-ins per (longer) window for one account from every address together. */
  signInAttemptsPerAccount: number;
  signInAccountWindowSeconds: number;
  /** Sign-ups per window from one client IP. */
  signUpsPerIp: number;
  signUpWindowSeconds: number;
}

/** A named limit: `limit` per `windowSeconds`. The name travels in RetryInfo and RateLimit headers. */
export interface RateLimitPolicy {
  name: string;
  limit: number;
  windowSeconds: number;
}

export interface RateLimitDecision {
  allowed: boolean;
  /** What the key has used in the current window, this call included (0 when refused from memory). */
  consumed: number;
  /** Whole seconds until the window ends, at least 1. */
  retryAfterSeconds: number;
}

/** One policy's counter. Keys are opaque; callers hash anything personal before counting it. */
export interface Limiter {
  readonly policy: RateLimitPolicy;
  /** Counts one call and says whether the key is still within the limit. */
  consume(key: string): Promise<RateLimitDecision>;
  /** Takes one counted call back (a sign-in that turned out to succeed). */
  refund(key: string): Promise<void>;
  /** Starts the key's count again. */
  reset(key: string): Promise<void>;
  /**
   * The refusal this process last gave the key, while its window lasts: a decision without asking
   * the store (other instances learn of the refusal at their own next count). Undefined otherwise.
   */
  refusing(key: string): RateLimitDecision | undefined;
}

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
  /** Its own connections (PostgreSQL's store only): open, idle, and callers waiting for one. */
  poolUse?(): PoolUse;
  close(): Promise<void>;
}

/** The table migration 0002 creates, with the columns rate-limiter-flexible's PostgreSQL store uses. */
export const rateLimitTable = "rate_limits";

/** Rows whose window ended this long ago are deleted, every {@link cleanupEveryMs}. */
const expiredRowAgeMs = 3_600_000;
const cleanupEveryMs = 300_000;

/**
 * Wrong in-game login codes, each per 10 minutes. Fixed rather than configured: a code has about
 * 40 bits, so these only stop guessing from hammering the issuer; an honest player mistypes a few
 * times at most. The player's UUID and the server are what an agent reports, and whoever runs an
 * agent can invent players and make servers, so guesses are also counted per organization (its
 * plan caps its servers) and across all organizations (which caps many organizations' guesses
 * together, at the price that a flood of wrong codes pauses in-game sign-in for everyone).
 */
export const loginCodePolicies = {
  loginCodePerPlayer: { name: "login_code_player", limit: 5, windowSeconds: 600 },
  loginCodePerServer: { name: "login_code_server", limit: 30, windowSeconds: 600 },
  loginCodePerOrganization: { name: "login_code_organization", limit: 100, windowSeconds: 600 },
  loginCodeGlobal: { name: "login_code_global", limit: 1000, windowSeconds: 600 },
} satisfies Record<string, RateLimitPolicy>;

/**
 * Credentials that match nothing (unknown, expired or revoked sessions, API keys and agent keys),
 * per client IP, per 10 minutes. Fixed: the per-credential limit cannot see a flood that sends a
 * new random credential each time, and an honest client meets an unknown credential a few times
 * at most (an expired session cookie, a revoked key in a script).
 */
export const badCredentialPolicy: RateLimitPolicy = { name: "bad_credential_ip", limit: 60, windowSeconds: 600 };

/**
 * Failed sign-ins from a known device (core/auth/known-devices.ts), per device, per 15 minutes:
 * what such a sign-in is counted under instead of the account's limit over all addresses and the
 * address's limit. Fixed: an owner mistypes a few times, and a stolen device cookie buys this many
 * guesses at most.
 */
export const knownDevicePolicy: RateLimitPolicy = { name: "sign_in_device", limit: 10, windowSeconds: 900 };

/** How many refused keys a process remembers for {@link Limiter.refusing} (the oldest go first). */
const rememberedRefusals = 10_000;

export function policiesFor(config: RateLimitConfig) {
  return {
    ...loginCodePolicies,
    badCredentialPerIp: badCredentialPolicy,
    requests: { name: "default", limit: config.requestsPerWindow, windowSeconds: config.requestWindowSeconds },
    signInPerAccountIp: { name: "sign_in_account_ip", limit: config.signInAttemptsPerAccountIp, windowSeconds: config.signInWindowSeconds },
    signInPerAccount: { name: "sign_in_account", limit: config.signInAttemptsPerAccount, windowSeconds: config.signInAccountWindowSeconds },
    signInPerIp: { name: "sign_in_ip", limit: config.signInAttemptsPerIp, windowSeconds: config.signInWindowSeconds },
    signInPerDevice: knownDevicePolicy,
    signUpPerIp: { name: "sign_up_ip", limit: config.signUpsPerIp, windowSeconds: config.signUpWindowSeconds },
  } satisfies Record<string, RateLimitPolicy>;
}

/** What one write to the store said: the key's count after it, and the time left in its window. */
interface Count {
  total: number;
  msBeforeNext: number;
  /** Refused from memory without a write (a key already over its limit): `total` is then 0. */
  blockedInMemory: boolean;
}

/** A call waiting for the write its point goes into. */
interface Waiter {
  resolve(decision: RateLimitDecision): void;
  reject(error: unknown): void;
}

/**
 * The library behind one policy, with one key's calls in this process sharing writes to the store:
 * while a key's count is being written, the calls that arrive wait and are then counted together,
 * n points in one write. Each still gets its own decision, the i-th of n having used (the count
 * after the write − n + i), so the limit, Retry-After and a window's first refusal (consumed =
 * limit + 1, exactly once) come out as if every call had written alone. On PostgreSQL a burst of
 * calls with one credential would otherwise queue one update each on that key's row lock, which
 * capped a script's throughput at the row's commit rate.
 */
function wrap(policy: RateLimitPolicy, limiter: RateLimiterAbstract): Limiter {
  const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
  /** Keys with a write under way → the calls that arrived since, for the next write. */
  const waiting = new Map<string, Waiter[]>();
  /** Keys refused here → until when (ms), and how the refusal read. */
  const refused = new BoundedMap<string, { until: number; decision: RateLimitDecision }>(rememberedRefusals);

  async function count(key: string, points: number): Promise<Count> {
    try {
      const res = await limiter.consume(key, points);
      return { total: res.consumedPoints, msBeforeNext: res.msBeforeNext, blockedInMemory: false };
    } catch (error) {
      // The library rejects with a RateLimiterRes when the limit is exceeded, with an Error when the store fails.
      if (!(error instanceof RateLimiterRes)) throw error;
      return { total: error.consumedPoints, msBeforeNext: error.msBeforeNext, blockedInMemory: error.consumedPoints === 0 };
    }
  }

  function decide(counted: Count, points: number, nth: number): RateLimitDecision {
    const retryAfterSeconds = seconds(counted.msBeforeNext);
    if (counted.blockedInMemory) return { allowed: false, consumed: 0, retryAfterSeconds };
    const consumed = counted.total - points + nth;
    return { allowed: consumed <= policy.limit, consumed, retryAfterSeconds };
  }

  function write(key: string, batch: Waiter[]): void {
    count(key, batch.length)
      .then(
        (counted) =>
          batch.forEach((waiter, i) => {
            const decision = decide(counted, batch.length, i + 1);
            if (!decision.allowed) refused.set(key, { until: Date.now() + decision.retryAfterSeconds * 1000, decision });
            waiter.resolve(decision);
          }),
        (error: unknown) => batch.forEach((waiter) => waiter.reject(error)),
      )
      .finally(() => {
        const next = waiting.get(key)!;
        if (next.length === 0) waiting.delete(key);
        else {
          waiting.set(key, []);
          write(key, next);
        }
      });
  }

  return {
    policy,
    consume(key) {
      return new Promise((resolve, reject) => {
        const queued = waiting.get(key);
        if (queued) return void queued.push({ resolve, reject });
        waiting.set(key, []);
        write(key, [{ resolve, reject }]);
      });
    },
    async refund(key) {
      refused.delete(key);
      await limiter.reward(key, 1);
    },
    async reset(key) {
      refused.delete(key);
      await limiter.delete(key);
    },
    refusing(key) {
      const entry = refused.get(key);
      if (!entry) return undefined;
      const left = entry.until - Date.now();
      if (left <= 0) return void refused.delete(key);
      return { ...entry.decision, retryAfterSeconds: seconds(left) };
    },
  };
}

/** Counts in this process's memory: for the embedded database, and for tests. */
export function createMemoryRateLimits(config: RateLimitConfig): RateLimits {
  const policies = policiesFor(config);
  const build = (policy: RateLimitPolicy) =>
    wrap(policy, new RateLimiterMemory({ keyPrefix: policy.name, points: policy.limit, duration: policy.windowSeconds }));
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
    wrap(
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
  const sweep = setInterval(() => {
    pool.query(`delete from "${rateLimitTable}" where expire < $1`, [Date.now() - expiredRowAgeMs]).catch(() => {});
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
    async close() {
      clearInterval(sweep);
    },
  };
}

/**
 * The rate limits for a database: PostgreSQL's store on a PostgreSQL server (its own small pool,
 * closed by `close`), memory on the embedded database. Called by the composition root.
 */
export function openRateLimits(
  config: RateLimitConfig,
  database: { kind: string; url: string },
  logger?: Logger,
): RateLimits {
  if (database.kind !== "postgres") return createMemoryRateLimits(config);
  // A database that does not answer fails the count in seconds (the call is then 503), as core's pool does.
  const pool = new pg.Pool({ connectionString: database.url, max: 2, connectionTimeoutMillis, keepAlive: true });
  // An idle connection that drops must not crash the process; the next query reports the failure.
  pool.on("error", (error) => logger?.warn({ err: error }, "rate-limit database connection failed"));
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
