import type { Interceptor } from "@connectrpc/connect";
import { apiKeyHeader, clientIpHeader, sessionHeader } from "../../contract/credentials.ts";
import { hashSecret } from "../../contract/secrets.ts";
import { Audience, rateLimitedByClientIp, serviceAudience } from "../../contract/services.ts";
import { clientIpKey } from "./client-ip.ts";
import type { KnownCredentials } from "./known-credentials.ts";
import type { RateLimits } from "./limits.ts";
import { badCredentialRefusal, rateLimited } from "./rate-limited.ts";

/**
 * Limits every call to a user-facing service: per credential presented (the SHA-256 of the session
 * token or API key, valid or not), and per client IP for calls without one (the edge's
 * `x-outpost-client-ip`, which it overwrites on every request it forwards). It runs before the
 * credential is looked up, so a flood with one bad credential is refused without touching the
 * accounts; and an address this process refused for credentials that match nothing
 * (`bad_credential_ip`, counted by the auth interceptor) is refused here, before any lookup or
 * count, unless its credential is one this process knows to be good. Methods of the edge's own
 * services marked `rate_limit_by_client_ip` (the issuers' authorization starts, which store a
 * request for anyone who asks) count per client IP too. A call over a limit is `rate_limited`
 * with a RetryInfo detail.
 */
export function createRateLimitInterceptor(limits: Pick<RateLimits, "requests" | "badCredentialPerIp">, known: KnownCredentials): Interceptor {
  return (next) => async (req) => {
    if (serviceAudience(req.service) !== Audience.USER && !rateLimitedByClientIp(req.method)) return next(req);
    const credential = req.header.get(sessionHeader) || req.header.get(apiKeyHeader);
    const ip = clientIpKey(req.header.get(clientIpHeader));
    const credentialHash = credential ? hashSecret(credential) : undefined;
    if (credentialHash && ip && !known.has(credentialHash)) {
      const refused = limits.badCredentialPerIp.refusing(`ip:${ip}`);
      if (refused) throw badCredentialRefusal(limits.badCredentialPerIp, refused.retryAfterSeconds);
    }
    // Without a credential the call will be refused anyway, so one shared key for callers whose
    // address core was not told (in-process callers) keeps no one legitimate out.
    const key = credentialHash ? `credential:${credentialHash}` : `ip:${ip ?? "unknown"}`;
    const decision = await limits.requests.consume(key);
    if (!decision.allowed) {
      const s = decision.retryAfterSeconds;
      throw rateLimited(limits.requests.policy, s, `too many requests; try again in ${s} second${s === 1 ? "" : "s"}`);
    }
    return next(req);
  };
}
