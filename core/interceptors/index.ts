import type { Interceptor } from "@connectrpc/connect";
import type { CoreDeps } from "../deps.ts";
import { createErrorInterceptor } from "./error-interceptor.ts";
import { createContextInterceptor } from "./context-interceptor.ts";
import { createAuthInterceptor } from "./auth-interceptor.ts";
import { createValidateInterceptor } from "./validate-interceptor.ts";
import { createTracingInterceptor } from "./tracing-interceptor.ts";
import { createIdempotencyInterceptor } from "../idempotency/idempotency-interceptor.ts";
import { createRateLimitInterceptor } from "../ratelimit/rate-limit-interceptor.ts";
import { CredentialGuard } from "../ratelimit/credential-guard.ts";
import { recordLockout, type Lockout } from "../activity/lockouts.ts";

/**
 * Core's interceptors, outermost first: the call's span sees the code callers get, errors are
 * translated last, a call over its rate limit is
 * refused before its credential is looked up (so floods of bad credentials are limited too: one
 * credential by its own count, many different ones by their address's), the
 * request gets its EntityManager, the caller is authenticated before input is validated (an
 * anonymous caller learns nothing about the input rules), only valid input reaches a handler, and a mutation
 * with an idempotency key claims it last, once it is known to be the caller's and valid.
 */
export function createCoreInterceptors(deps: CoreDeps): Interceptor[] {
  const lockedOut = (lockout: Lockout) => recordLockout(deps, lockout);
  const guard = new CredentialGuard(deps.rateLimits.badCredentialPerIp, lockedOut);
  return [
    createTracingInterceptor(),
    createErrorInterceptor(deps.logger, deps.metrics),
    createRateLimitInterceptor(deps.rateLimits.requests, guard, lockedOut),
    createContextInterceptor(deps.orm),
    createAuthInterceptor(deps.credentials, guard),
    createValidateInterceptor(),
    createIdempotencyInterceptor(deps, deps.config.idempotency),
  ];
}
