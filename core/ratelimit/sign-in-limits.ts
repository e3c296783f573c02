import { createHash } from "node:crypto";
import type { DomainError } from "../errors.ts";
import { clientIpKey } from "./client-ip.ts";
import type { RateLimitDecision, Limiter, RateLimits } from "./limits.ts";
import { rateLimited } from "./rate-limited.ts";

export interface SignInAttempt {
  /**
   * Set when the attempt is over a limit: throw it before the password is checked. Its message
   * depends only on the counts, which are kept per email whether or not an account has it, so it
   * says nothing about whether the email exists.
   */
  refusal: DomainError | undefined;
  /** This attempt is the one that crossed a limit (refusals after it in the window are not). */
  tripped: boolean;
  /** The policy that refused, for the activity log. */
  policy: string | undefined;
  /** After a successful sign-in: the account's count starts again and the IP's forgets this try. */
  succeeded(): Promise<void>;
}

/** Emails are counted by hash: the rate-limit store holds no address in clear. */
function accountKey(normalizedEmail: string): string {
  return createHash("sha256").update(normalizedEmail, "utf8").digest("hex");
}

/**
 * Counts a sign-in attempt against the account (its normalized email) and the client IP (when the
 * edge said it). Every attempt counts up front, atomically in the store, so parallel guesses
 * cannot slip past the limit; a success is taken back, so the limits are on failed attempts.
 */
export async function countSignInAttempt(limits: RateLimits, normalizedEmail: string, ip: string | undefined): Promise<SignInAttempt> {
  const account = accountKey(normalizedEmail);
  const address = clientIpKey(ip);
  const counted: Array<[Limiter, RateLimitDecision]> = await Promise.all([
    limits.signInPerAccount.consume(account).then((d): [Limiter, RateLimitDecision] => [limits.signInPerAccount, d]),
    ...(address ? [limits.signInPerIp.consume(address).then((d): [Limiter, RateLimitDecision] => [limits.signInPerIp, d])] : []),
  ]);
  const refused = counted.filter(([, d]) => !d.allowed).sort(([, a], [, b]) => b.retryAfterSeconds - a.retryAfterSeconds);
  const [limiter, decision] = refused[0] ?? [];
  let refusal: DomainError | undefined;
  if (limiter && decision) {
    const minutes = Math.max(1, Math.ceil(decision.retryAfterSeconds / 60));
    refusal = rateLimited(
      limiter.policy,
      decision.retryAfterSeconds,
      `too many sign-in attempts; try again in ${minutes} minute${minutes === 1 ? "" : "s"}`,
    );
  }
  return {
    refusal,
    tripped: refused.some(([l, d]) => d.consumed === l.policy.limit + 1),
    policy: limiter?.policy.name,
    async succeeded() {
      await Promise.all([limits.signInPerAccount.reset(account), address && limits.signInPerIp.refund(address)]);
    },
  };
}
