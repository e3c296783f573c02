/**
 * One policy's counter over rate-limiter-flexible's store (memory or PostgreSQL), with one key's
 * calls in this process sharing writes, and refusals remembered so a flood costs no writes.
 */
import { RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import { BoundedMap } from "../bounded-map.ts";
import type { RateLimitPolicy } from "./policies.ts";

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

/** How many refused keys a process remembers for {@link Limiter.refusing} (the oldest go first). */
const rememberedRefusals = 10_000;

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
export function createLimiter(policy: RateLimitPolicy, limiter: RateLimiterAbstract): Limiter {
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
