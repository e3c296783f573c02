/**
 * Credentials that match nothing, limited per client IP (`bad_credential_ip`): the per-credential
 * limit cannot see a flood that sends a new random credential each time. The auth interceptor
 * reports each lookup's outcome here; the rate-limit interceptor asks {@link CredentialGuard.screen}
 * before any lookup or count, so an address this process has refused costs nothing more.
 *
 * The exception is a credential this process has lately seen resolve: a user sharing the address
 * with the flood (one office, one NAT) keeps working, and their credential is still looked up and
 * checked as always.
 */
import { BoundedMap } from "../bounded-map.ts";
import type { Limiter } from "./limiter.ts";
import { badCredentialRefusal } from "./rate-limited.ts";
import type { Lockout } from "../activity/lockouts.ts";

export class CredentialGuard {
  readonly #limiter: Limiter;
  /** Hashes of credentials that resolved here lately. */
  readonly #known: BoundedMap<string, true>;
  /** Told of each lockout of an address (the activity log), once per window. */
  readonly #lockedOut: (lockout: Lockout) => Promise<void>;

  constructor(limiter: Limiter, lockedOut: (lockout: Lockout) => Promise<void> = async () => {}, knownKept = 10_000) {
    this.#limiter = limiter;
    this.#lockedOut = lockedOut;
    this.#known = new BoundedMap(knownKept);
  }

  /** Refuses (rate_limited) a credential this process does not know from an address it has refused. */
  screen(ip: string | undefined, credentialHash: string): void {
    if (!ip || this.#known.has(credentialHash)) return;
    const refused = this.#limiter.refusing(`ip:${ip}`);
    if (refused) throw badCredentialRefusal(this.#limiter, refused.retryAfterSeconds);
  }

  /**
   * A credential matched nothing: counts it against its address; over the limit, the call is
   * rate_limited rather than unauthenticated. In-process callers (the CLI, tests) have no address.
   */
  async failed(ip: string | undefined): Promise<void> {
    if (!ip) return;
    const decision = await this.#limiter.consume(`ip:${ip}`);
    if (decision.allowed) return;
    const { policy } = this.#limiter;
    if (decision.consumed === policy.limit + 1) await this.#lockedOut({ policy, retryAfterSeconds: decision.retryAfterSeconds, details: { ip } });
    throw badCredentialRefusal(this.#limiter, decision.retryAfterSeconds);
  }

  /** A credential resolved to a caller. */
  resolved(credentialHash: string): void {
    this.#known.set(credentialHash, true);
  }
}
