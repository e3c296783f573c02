/**
 * The rules of a token exchange, each written once, for both issuers: client authentication and
 * the checks of a consumed code, each a named predicate (a `sql` fragment and the OAuth error it
 * fails with). The exchange statement (each issuer's, in its query module) computes every check as
 * a boolean of the code it consumed and inserts the access token only where all of them hold, so
 * the database decides atomically in one round trip; the engine (token-engine.ts) reads the same
 * booleans and names the first check that failed. No rule is judged twice, so the two cannot
 * drift apart. Account OAuth's refresh tokens are checked the same way (refresh-checks.ts there).
 *
 * The fragments name the statement's aliases: `cl`, the client's row (`disabled`, `secret_hash`,
 * `auth_method`, `require_pkce`), and `c`, the consumed code (`expires_at`, `client_uuid`,
 * `redirect_uri`, `code_challenge`, `code_challenge_method`).
 */
import { join, sql, type Sql } from "../db/sql.ts";
import type { OAuthFailure } from "./oauth-failure.ts";

/** The client's credentials as presented at an endpoint. */
export interface PresentedClient {
  /** The presented secret's hash (of "" when none was presented). */
  secretHash: string;
  /** How the client authenticated: "client_secret_basic", "client_secret_post", "none" or "unspecified". */
  method: string;
}

/**
 * SQL: the client `cl` authenticated as it is registered to. It is not disabled; a public client
 * ("none") presents no secret; a confidential one presents its secret by its registered method
 * ("client_secret_basic_or_post": either; Game OAuth's clients are all so). The engine compares
 * the secret's hash once more, in constant time (`clientAuthenticated` in token-engine.ts).
 */
export function clientAuthentication(p: PresentedClient): Sql {
  return sql`(not cl.disabled and case when cl.auth_method = 'none' then ${p.method}::text = 'none'
               else ${p.method}::text <> 'none' and cl.secret_hash = ${p.secretHash}
                    and cl.auth_method in (${p.method}::text, 'client_secret_basic_or_post') end)`;
}

/** What the checks of a consumed code compare it with. */
export interface CodeCheckParams {
  now: Date;
  redirectUri: string;
  /** A code_verifier was sent. */
  verifierSent: boolean;
  /** What the code_challenge must be for the verifier sent, by method; null for a malformed verifier (RFC 7636 4.1). */
  s256: string | null;
  plain: string | null;
}

/** One check: what must hold (over the statement's aliases and `P`), and what the call fails with when it does not. */
export interface Check<P> {
  name: string;
  holds(p: P): Sql;
  failure: OAuthFailure;
}

/**
 * SQL: the results of `checks`, as one boolean array in their order (each `… is true`, so a check
 * that yields null has failed). A statement acts only where `true = all(…)`.
 */
export function checkResults<P>(checks: readonly Check<P>[], p: P): Sql {
  return sql`array[${join(
    checks.map((check) => sql`(${check.holds(p)}) is true`),
    ", ",
  )}]`;
}

/** The first of `checks` that failed, from a statement's results; undefined when all held. */
export function firstFailed<C extends Check<never>>(checks: readonly C[], results: readonly boolean[]): C | undefined {
  if (results.length !== checks.length) throw new Error(`a statement returned ${results.length} checks, not ${checks.length}`);
  const failed = results.indexOf(false);
  return failed === -1 ? undefined : checks[failed];
}

/** One check of a consumed code. */
export type CodeCheck = Check<CodeCheckParams>;

const invalidGrant = (description: string): OAuthFailure => ({ error: "invalid_grant", description });

/** Every check of a consumed code, in the order a failure is named. */
export const codeChecks: readonly CodeCheck[] = [
  {
    name: "unexpired",
    holds: (p) => sql`c.expires_at > ${p.now}`,
    failure: invalidGrant("the code has expired"),
  },
  {
    name: "this client's",
    holds: () => sql`c.client_uuid = cl.id`,
    failure: invalidGrant("the code was issued to another client"),
  },
  {
    name: "the authorization request's redirect_uri",
    holds: (p) => sql`c.redirect_uri = ${p.redirectUri}`,
    failure: invalidGrant("redirect_uri is not the one of the authorization request"),
  },
  {
    name: "a verifier for a challenge",
    holds: (p) => sql`c.code_challenge is null or ${p.verifierSent}::boolean`,
    failure: invalidGrant("code_verifier is required"),
  },
  {
    name: "the verifier matches",
    holds: (p) => sql`c.code_challenge is null or c.code_challenge = case when c.code_challenge_method = 'S256' then ${p.s256}::text else ${p.plain}::text end`,
    failure: invalidGrant("code_verifier does not match"),
  },
  {
    name: "no verifier without a challenge",
    holds: (p) => sql`c.code_challenge is not null or not ${p.verifierSent}::boolean`,
    failure: invalidGrant("code_verifier was sent but the authorization request had no code_challenge"),
  },
  {
    name: "PKCE where the client must use it",
    holds: () => sql`c.code_challenge is not null or not (cl.auth_method = 'none' or cl.require_pkce)`,
    failure: invalidGrant("this client must use PKCE, and the authorization request had no code_challenge"),
  },
];

/** SQL: the checks' results for the consumed code `c` of client `cl`; the token is inserted only where `true = all(checks)`. */
export const codeCheckResults = (p: CodeCheckParams): Sql => checkResults(codeChecks, p);

/** The failure of the first check the consumed code failed, from the statement's `checks`; undefined when all held. */
export const firstFailedCheck = (results: readonly boolean[]): OAuthFailure | undefined => firstFailed(codeChecks, results)?.failure;
