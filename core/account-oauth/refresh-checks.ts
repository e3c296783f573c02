/**
 * The checks of a presented refresh token, each written once (as the exchange's are in
 * core/oauth/exchange-checks.ts): a `sql` fragment over the token (`r`, with its family's
 * `family_alive`) and the authenticated client (`cl`), the OAuth error it fails with, and, for the
 * two that mean the token has leaked, the activity action under which its family is revoked. The
 * rotation statement (refresh-queries.ts) computes them all and rotates only where all hold;
 * refresh-tokens.ts names the first that failed from the same results.
 */
import { sql } from "../db/sql.ts";
import { checkResults, firstFailed, type Check } from "../oauth/exchange-checks.ts";
import type { ActivityAction } from "../activity/kinds.ts";

export interface RefreshCheckParams {
  now: Date;
  /** The scopes asked for, JSON; "[]" for all of the token's. */
  requested: string;
}

export interface RefreshCheck extends Check<RefreshCheckParams> {
  /** Failing it means two parties hold the family: it is revoked, and recorded under this action. */
  revokesFamily?: ActivityAction;
}

const invalidGrant = (description: string) => ({ error: "invalid_grant" as const, description });

/**
 * A token used before, while its family lives: two parties hold the family (RFC 9700 §4.14.2). Also
 * what a token is that passed every check but was rotated first by a use running at the same time.
 */
export const notUsedBefore: RefreshCheck = {
  name: "not used before",
  holds: () => sql`r.used_at is null or not r.family_alive`,
  failure: invalidGrant("the refresh token was already used; every token of its grant is revoked"),
  revokesFamily: "account_oauth.refresh_token_reused",
};

/** Every check of a presented refresh token, in the order a failure is named. */
export const refreshChecks: readonly RefreshCheck[] = [
  {
    name: "this client's",
    holds: () => sql`r.oauth_provider_client_id = cl.id`,
    failure: invalidGrant("the refresh token was issued to another client"),
    // Another registered client holds this client's token: it has leaked, so the grant ends.
    revokesFamily: "account_oauth.refresh_token_misused",
  },
  notUsedBefore,
  {
    name: "unused, its family alive",
    holds: () => sql`r.used_at is null and r.family_alive`,
    failure: invalidGrant("the refresh token is invalid, expired or revoked"),
  },
  {
    name: "unexpired",
    holds: (p) => sql`r.expires_at > ${p.now}`,
    failure: invalidGrant("the refresh token has expired"),
  },
  {
    name: "within the grant's scopes",
    holds: (p) => sql`r.scopes @> ${p.requested}::jsonb`,
    failure: { error: "invalid_scope", description: "a refresh may only narrow the scope of the grant" },
  },
  {
    name: "the client may still use refresh tokens",
    holds: () => sql`cl.allowed_scopes @> '["offline_access"]'::jsonb`,
    failure: invalidGrant("this client may no longer use refresh tokens"),
  },
];

/** SQL: the checks' results for the token `r` presented by client `cl`; it is rotated only where `true = all(checks)`. */
export const refreshCheckResults = (p: RefreshCheckParams) => checkResults(refreshChecks, p);

/** The first check the token failed, from the statement's `checks`; undefined when all held. */
export const firstFailedRefreshCheck = (results: readonly boolean[]): RefreshCheck | undefined => firstFailed(refreshChecks, results);
