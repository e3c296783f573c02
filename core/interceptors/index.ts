import type { Interceptor } from "@connectrpc/connect";
import type { CoreDeps } from "../deps.ts";
import { createErrorInterceptor } from "./error-interceptor.ts";
import { createContextInterceptor } from "./context-interceptor.ts";
import { createAuthInterceptor } from "./auth-interceptor.ts";
import { createValidateInterceptor } from "./validate-interceptor.ts";
import { createRateLimitInterceptor } from "../ratelimit/rate-limit-interceptor.ts";
import { KnownCredentials } from "../ratelimit/known-credentials.ts";

/**
 * Core's interceptors, outermost first: errors are translated last, a call over its rate limit is
 * refused before its credential is looked up (so floods of bad credentials are limited too: one
 * credential by its own count, many different ones by their address's), the
 * request gets its EntityManager, the caller is authenticated before input is validated (an
 * anonymous caller learns nothing about the input rules), and only valid input reaches a handler.
 */
export function createCoreInterceptors(deps: CoreDeps): Interceptor[] {
  const known = new KnownCredentials();
  return [
    createErrorInterceptor(deps.logger),
    createRateLimitInterceptor(deps.rateLimits, known),
    createContextInterceptor(deps.orm),
    createAuthInterceptor(deps.clock, { limiter: deps.rateLimits.badCredentialPerIp, known }),
    createValidateInterceptor(),
  ];
}
