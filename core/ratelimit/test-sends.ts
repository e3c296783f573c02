import type { RateLimits } from "./limits.ts";
import { inMinutes, rateLimited } from "./rate-limited.ts";

/**
 * Counts a test send (an integration's test message, a test push) against the user who asked
 * (`test_send`) and refuses it (rate_limited) over the limit, before anything is sent.
 */
export async function countTestSend(limits: RateLimits, userId: string): Promise<void> {
  const decision = await limits.testSends.consume(`user:${userId}`);
  if (decision.allowed) return;
  throw rateLimited(limits.testSends.policy, decision.retryAfterSeconds, `too many test sends; try again in ${inMinutes(decision.retryAfterSeconds)}`);
}
