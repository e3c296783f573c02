import { hashSecret } from "../../contract/secrets.ts";
import type { DomainError } from "../errors.ts";
import { clientIpKey } from "./client-ip.ts";
import type { RateLimits } from "./limits.ts";
import type { Limiter, RateLimitDecision } from "./limiter.ts";
import { inMinutes, rateLimited } from "./rate-limited.ts";

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
  /**
   * After a successful sign-in: the account's count from this address (and the device's) starts
   * again, and the account's count from everywhere and the address's count forget this try (a
   * success must not wipe what guesses from other addresses have used of the account's limit).
   */
  succeeded(): Promise<void>;
  /** The password was never checked (the server was too busy): every count forgets this try. */
  notChecked(): Promise<void>;
}

/** Emails are counted by hash: the rate-limit store holds no address in clear. */
const digest = hashSecret;

/**
 * Counts a sign-in attempt (or any check of an account's password) against the account from this
 * client IP, the account from every address, and the client IP. Refusing only the pair after a
 * handful of failures means guessing from one address cannot lock the account's owner out from
 * theirs; the account's own, slower limit still bounds guesses spread over many addresses. Callers
 * whose address core was not told (the CLI, tests) share one "unknown" address for the pair and
 * are not counted per IP.
 *
 * An attempt from a known device (`knownDevice`, its verified id: core/auth/known-devices.ts) is
 * counted per device and per pair instead: the account's count over all addresses and the
 * address's count are what strangers can spend, so they do not keep the owner's browser out.
 *
 * Every attempt counts up front, atomically in the store, so parallel guesses cannot slip past the
 * limits; a success is taken back, so the limits are on failed attempts.
 */
export async function countSignInAttempt(limits: RateLimits, normalizedEmail: string, ip: string | undefined, knownDevice?: string): Promise<SignInAttempt> {
  const account = digest(normalizedEmail);
  const address = clientIpKey(ip);
  const pair = digest(`${normalizedEmail}\n${address ?? "unknown"}`);
  const local: Array<[Limiter, string]> = [
    [limits.signInPerAccountIp, pair],
    ...(knownDevice !== undefined
      ? [[limits.signInPerDevice, digest(knownDevice)] as [Limiter, string]]
      : address
        ? [[limits.signInPerIp, address] as [Limiter, string]]
        : []),
  ];
  const consume = (keys: Array<[Limiter, string]>) => Promise.all(keys.map(async ([limiter, key]) => [limiter, await limiter.consume(key)] as const));
  const counts = [...local];
  const counted: Array<readonly [Limiter, RateLimitDecision]> = await consume(local);
  // The account's count from everywhere is spent only by attempts this address may still make:
  // otherwise one address, refused long since, could go on to lock the account out everywhere.
  if (knownDevice === undefined && counted.every(([, d]) => d.allowed)) {
    counts.push([limits.signInPerAccount, account]);
    counted.push(...(await consume([[limits.signInPerAccount, account]])));
  }
  const refused = counted.filter(([, d]) => !d.allowed).sort(([, a], [, b]) => b.retryAfterSeconds - a.retryAfterSeconds);
  const [limiter, decision] = refused[0] ?? [];
  let refusal: DomainError | undefined;
  if (limiter && decision) {
    refusal = rateLimited(limiter.policy, decision.retryAfterSeconds, `too many sign-in attempts; try again in ${inMinutes(decision.retryAfterSeconds)}`);
  }
  return {
    refusal,
    tripped: refused.some(([l, d]) => d.consumed === l.policy.limit + 1),
    policy: limiter?.policy.name,
    async succeeded() {
      await Promise.all(counts.map(([l, key]) => (l === limits.signInPerAccountIp || l === limits.signInPerDevice ? l.reset(key) : l.refund(key))));
    },
    async notChecked() {
      await Promise.all(counts.map(([l, key]) => l.refund(key)));
    },
  };
}
