/**
 * When the client tries a call again by itself, and how long it waits first. Only failures that
 * say "not now" are retried: a rate limit (429 with a RetryInfo detail) or server_busy, Outpost
 * unavailable (503), and, for a call with an idempotency key, the key's first call still running (409
 * idempotency_key_in_flight). A query may always be retried; a mutation only with an idempotency
 * key, which makes Outpost answer a repeat with the first call's result instead of running it twice.
 */
import type { OutpostError } from "./errors.ts";

export interface RetryOptions {
  /** Attempts in all, the first included; 1 turns retrying off. Default 3. */
  maxAttempts?: number;
  /** The longest wait before a retry, whatever Outpost asked for. Default 30 000 ms (a rate limit's window is a minute). */
  maxDelayMs?: number;
}

export interface RetryPolicy {
  maxAttempts: number;
  maxDelayMs: number;
}

/** The retry options with their defaults, checked once: a bad value throws here rather than misbehaving later. */
export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  const { maxAttempts = 3, maxDelayMs = 30_000 } = options;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new RangeError(`retry.maxAttempts must be a whole number of at least 1 (got ${maxAttempts})`);
  if (!Number.isFinite(maxDelayMs) || maxDelayMs < 0) throw new RangeError(`retry.maxDelayMs must be a number of milliseconds, at least 0 (got ${maxDelayMs})`);
  return { maxAttempts, maxDelayMs };
}

export interface CallKind {
  /** The method has no side effects (idempotency_level NO_SIDE_EFFECTS): running it twice is harmless. */
  query: boolean;
  /** The call carries an Idempotency-Key, so Outpost runs it at most once whatever the client repeats. */
  keyed: boolean;
}

/** Whether a failed attempt may be made again. */
export function isRetryable(error: OutpostError, call: CallKind): boolean {
  if (!call.query && !call.keyed) return false;
  switch (error.code) {
    case "unavailable":
      return true;
    case "resource_exhausted":
      // A rate limit says when to come back, and server_busy (too much of one kind of work under
      // way) asks for a retry shortly; a message too large says neither, and never will pass.
      return error.retryAfterMs !== undefined || error.reason === "server_busy";
    case "aborted":
      return call.keyed && error.reason === "idempotency_key_in_flight";
    default:
      return false;
  }
}

/** Backoff without a hint from Outpost: 250 ms, 500 ms, 1 s, … */
const firstBackoffMs = 250;

/**
 * How long to wait before attempt `attempt + 1`: what Outpost asked for (RetryInfo, Retry-After)
 * where it did, else an exponential backoff with ±25 % jitter so that many clients refused at once
 * do not come back at once; never more than `maxDelayMs`.
 */
export function retryDelayMs(error: OutpostError, attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  if (error.retryAfterMs !== undefined) return Math.min(error.retryAfterMs, policy.maxDelayMs);
  const backoff = firstBackoffMs * 2 ** (attempt - 1) * (0.75 + 0.5 * random());
  return Math.min(Math.round(backoff), policy.maxDelayMs);
}
