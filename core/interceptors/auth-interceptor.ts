import type { Interceptor } from "@connectrpc/connect";
import { apiKeyHeader, sessionHeader } from "../../contract/credentials.ts";
import { Audience, serviceAudience } from "../../contract/services.ts";
import { callerKey, entityManagerKey } from "../context.ts";
import { resolveApiKey, resolveSession } from "../auth/credentials.ts";
import { fail } from "../errors.ts";
import type { Clock } from "../deps.ts";

/**
 * Resolves the caller of every user-facing procedure from exactly one credential — a session
 * token or a user API key, each in its own header — and refuses the call without one. Services
 * for the edge alone take no credential here; agent services authenticate agent keys themselves.
 */
export function createAuthInterceptor(clock: Clock): Interceptor {
  return (next) => async (req) => {
    if (serviceAudience(req.service) !== Audience.USER) return next(req);
    const session = req.header.get(sessionHeader);
    const apiKey = req.header.get(apiKeyHeader);
    if (session && apiKey) throw fail("ambiguous_credential", "send one credential: a session or an API key, not both");
    if (!session && !apiKey) throw fail("unauthenticated", "sign in or send an API key in the X-API-Key header");
    const em = req.contextValues.get(entityManagerKey);
    if (!em) throw new Error("the context interceptor must run before the auth interceptor");
    const now = clock.now();
    const caller = session ? await resolveSession(em, session, now) : await resolveApiKey(em, apiKey!, now);
    if (!caller) {
      throw fail("unauthenticated", session ? "the session has ended; sign in again" : "the API key is invalid, expired or revoked");
    }
    req.contextValues.set(callerKey, caller);
    return next(req);
  };
}
