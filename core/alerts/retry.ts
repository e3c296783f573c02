/**
 * When a failed delivery is tried again: exponential backoff with full jitter (a random delay up
 * to 30 s, 60 s, 120 s… capped at an hour; never sooner than the target's Retry-After), for up to
 * 24 hours after the event; a failure no retry can help (a 4xx, a refused address) fails at once,
 * and a send Outpost's own rules refused (the email cap, no member recipient left) is refused.
 */
import type { DeliveryOutcome } from "../integrations/deliver.ts";

export interface RetryPolicy {
  baseDelayMs: number;
  maxDelayMs: number;
  giveUpAfterMs: number;
  /** [0, 1): Math.random, or a fixed value in tests. */
  random: () => number;
}

export const defaultRetryPolicy: RetryPolicy = { baseDelayMs: 30_000, maxDelayMs: 3_600_000, giveUpAfterMs: 24 * 3_600_000, random: Math.random };

export type Verdict = { status: "delivered"; at: Date } | { status: "pending"; at: Date } | { status: "failed"; at: Date } | { status: "refused"; at: Date };

/** What becomes of a delivery after attempt number `attempt` (1 for the first) ended with `outcome`. */
export function verdict(
  policy: RetryPolicy,
  outcome: Pick<DeliveryOutcome, "ok" | "retryable" | "retryAfterSeconds" | "refused">,
  attempt: number,
  createdAt: Date,
  now: Date,
): Verdict {
  if (outcome.ok) return { status: "delivered", at: now };
  if (outcome.refused) return { status: "refused", at: now };
  if (!outcome.retryable) return { status: "failed", at: now };
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(attempt - 1, 30));
  const delay = Math.max(policy.random() * ceiling, (outcome.retryAfterSeconds ?? 0) * 1000);
  const at = new Date(now.getTime() + delay);
  if (at.getTime() > createdAt.getTime() + policy.giveUpAfterMs) return { status: "failed", at: now };
  return { status: "pending", at };
}
