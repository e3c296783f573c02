import { clientIpKey } from "./client-ip.ts";
import type { RateLimits } from "./limits.ts";
import { inMinutes, rateLimited } from "./rate-limited.ts";
import type { Lockout } from "../activity/lockouts.ts";

/**
 * Counts a sign-up against its client IP (`sign_up_ip`) and refuses it (rate_limited) over the
 * limit, before the email is looked at or a password hashed: each sign-up costs an Argon2id hash
 * and a row. Every attempt counts, accepted or not. Callers whose address core was not told (the
 * CLI, tests) are not counted.
 */
export async function countSignUp(limits: RateLimits, ip: string | undefined, lockedOut?: (lockout: Lockout) => Promise<void>): Promise<void> {
  const address = clientIpKey(ip);
  if (!address) return;
  const decision = await limits.signUpPerIp.consume(address);
  if (decision.allowed) return;
  const { policy } = limits.signUpPerIp;
  if (lockedOut && decision.consumed === policy.limit + 1) await lockedOut({ policy, retryAfterSeconds: decision.retryAfterSeconds, details: { ip: address } });
  throw rateLimited(limits.signUpPerIp.policy, decision.retryAfterSeconds, `too many sign-ups from your address; try again in ${inMinutes(decision.retryAfterSeconds)}`);
}
