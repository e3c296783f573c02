import type { Interceptor } from "@connectrpc/connect";
import { apiKeyHeader, clientIpHeader, sessionHeader } from "../../contract/credentials.ts";
import { hashSecret } from "../../contract/secrets.ts";
import { Audience, rateLimitedByClientIp, serviceAudience } from "../../contract/services.ts";
import { clientIpKey } from "./client-ip.ts";
import type { Limiter } from "./limits.ts";
import { rateLimited } from "./rate-limited.ts";

/**
 * Limits every call to a user-facing service: per credential presented (the SHA-256 of the session
 * token or API key, valid or not), and per client IP for calls without one (the edge's
 * `x-outpost-client-ip`, which it overwrites on every request it forwards). It runs before the
 * credential is looked up, so a flood with one bad credential is refused without touching the
 * accounts. Methods of the edge's own services marked `rate_limit_by_client_ip` (the issuers'
 * authorization starts, which store a request for anyone who asks) count per client IP too. A call
 * over the limit is `rate_limited` with a RetryInfo detail.
 */
export function createRateLimitInterceptor(limiter: Limiter): Interceptor {
  return (next) => async (req) => {
    if (serviceAudience(req.service) !== Audience.USER && !rateLimitedByClientIp(req.method)) return next(req);
    const credential = req.header.get(sessionHeader) || req.header.get(apiKeyHeader);
    // Without a credential the call will be refused anyway, so one shared key for callers whose
    // address core was not told (in-process callers) keeps no one legitimate out.
    const key = credential ? `credential:${hashSecret(credential)}` : `ip:${clientIpKey(req.header.get(clientIpHeader)) ?? "unknown"}`;
    const decision = await limiter.consume(key);
    if (!decision.allowed) {
      const s = decision.retryAfterSeconds;
      throw rateLimited(limiter.policy, s, `too many requests; try again in ${s} second${s === 1 ? "" : "s"}`);
    }
    return next(req);
  };
}
