import type { Interceptor } from "@connectrpc/connect";
import { agentKeyHeader, apiKeyHeader, clientIpHeader, sessionHeader } from "../../contract/credentials.ts";
import { hashSecret } from "../../contract/secrets.ts";
import { Audience, rateLimitedByClientIp, serviceAudience } from "../../contract/services.ts";
import { clientIpKey } from "./client-ip.ts";
import type { CredentialGuard } from "./credential-guard.ts";
import type { Limiter } from "./limiter.ts";
import { rateLimited } from "./rate-limited.ts";
import type { Lockout } from "../activity/lockouts.ts";

/**
 * Limits every call to a user-facing service: per credential presented (the SHA-256 of the session
 * token or API key, valid or not), and per client IP for calls without one (the edge's
 * `x-outpost-client-ip`, which it overwrites on every request it forwards). It runs before the
 * credential is looked up, so a flood with one bad credential is refused without touching the
 * accounts, and an address refused for credentials that match nothing ({@link CredentialGuard})
 * is turned away here, for user and agent services alike, before any lookup or count. Methods of
 * the edge's own services marked `rate_limit_by_client_ip` (the issuers' authorization starts,
 * which store a request for anyone who asks) count per client IP too. A call over a limit is
 * `rate_limited` with a RetryInfo detail; the call that first crosses it in its window is told to
 * `lockedOut` (the activity log), the ones after it are not.
 */
export function createRateLimitInterceptor(requests: Limiter, guard: CredentialGuard, lockedOut: (lockout: Lockout) => Promise<void>): Interceptor {
  return (next) => async (req) => {
    const audience = serviceAudience(req.service);
    const ip = clientIpKey(req.header.get(clientIpHeader));
    if (audience === Audience.AGENT) {
      const agentKey = req.header.get(agentKeyHeader);
      if (agentKey) guard.screen(ip, hashSecret(agentKey));
      return next(req);
    }
    if (audience !== Audience.USER && !rateLimitedByClientIp(req.method)) return next(req);
    // The edge's own services count per address even when a session travels with the call (the
    // Account OAuth steps carry the browser's): a credential of the caller's choosing must not
    // buy a fresh count.
    const credential = audience === Audience.USER ? req.header.get(sessionHeader) || req.header.get(apiKeyHeader) : null;
    const credentialHash = credential ? hashSecret(credential) : undefined;
    if (credentialHash) guard.screen(ip, credentialHash);
    // Without a credential the call will be refused anyway, so one shared key for callers whose
    // address core was not told (in-process callers) keeps no one legitimate out.
    const key = credentialHash ? `credential:${credentialHash}` : `ip:${ip ?? "unknown"}`;
    const decision = await requests.consume(key);
    if (!decision.allowed) {
      const s = decision.retryAfterSeconds;
      if (decision.consumed === requests.policy.limit + 1) {
        const by = credential ? (req.header.get(sessionHeader) ? "session" : "api_key") : "none";
        await lockedOut({ policy: requests.policy, retryAfterSeconds: s, details: { credential: by, ...(ip && { ip }) } });
      }
      throw rateLimited(requests.policy, s, `too many requests; try again in ${s} second${s === 1 ? "" : "s"}`);
    }
    return next(req);
  };
}
