/**
 * What core tells the operator's metrics. Core only reports facts through this interface; the
 * composition root decides how they are kept (Prometheus, server/metrics.ts), so core depends on no
 * metrics library and a test core can count nothing.
 */
import type { Issuer } from "./keys/signing-keys.ts";
import { oauthFailureOf } from "./oauth/oauth-failure.ts";

/** A token exchange's outcome: `issued`, the OAuth error it answered, or `error` (it failed). */
export type TokenExchangeOutcome =
  "issued" | "invalid_client" | "invalid_grant" | "invalid_request" | "unsupported_grant_type" | "invalid_token" | "invalid_scope" | "unauthorized_client" | "error";

export interface Metrics {
  /** A token endpoint call of either issuer ended so. */
  tokenExchanged(issuer: Issuer, outcome: TokenExchangeOutcome): void;
  /** A hosted Game OAuth sign-in session was opened (its page shows a login code). */
  signInStarted(): void;
  /** A hosted Game OAuth sign-in was confirmed in game and its code issued. */
  signInCompleted(): void;
  /** A rate limit refused something; `limit` is its policy's name (a fixed set). */
  rateLimitRefused(limit: string): void;
}

/** A connection pool's use at one moment, as `pg.Pool` counts it. */
export interface PoolUse {
  total: number;
  idle: number;
  waiting: number;
}

/** Metrics that keep nothing: one-off commands and tests that do not look at them. */
export function createNoMetrics(): Metrics {
  return {
    tokenExchanged() {},
    signInStarted() {},
    signInCompleted() {},
    rateLimitRefused() {},
  };
}

/** Counts a token exchange's outcome as it settles (an OAuth refusal by its error), and hands on its result or its failure. */
export async function countedExchange<T>(metrics: Metrics, issuer: Issuer, exchange: Promise<T>): Promise<T> {
  try {
    const result = await exchange;
    metrics.tokenExchanged(issuer, "issued");
    return result;
  } catch (error) {
    metrics.tokenExchanged(issuer, oauthFailureOf(error)?.error ?? "error");
    throw error;
  }
}
