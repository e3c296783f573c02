/**
 * Account OAuth refresh tokens (grant_type=refresh_token), for clients allowed offline_access and
 * users who consented to it. Every use rotates: the token is marked used and a new one issued in
 * the same statement (refresh-queries.ts), 30 days from its issue by the database's clock. A used
 * token presented again means two parties hold the family (RFC 9700 §4.14.2): the whole family is
 * revoked, the latest token included, and the event recorded. A refreshed ID token keeps the
 * sign-in's auth_time; the scopes can only narrow.
 */
import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { CoreDeps } from "../deps.ts";
import { hashSecret, issueSecret } from "../../contract/secrets.ts";
import { recordActivity } from "../activity/record.ts";
import type { ActivityAction } from "../activity/kinds.ts";
import { accessTokenTtlSeconds, badClient, clientAuthenticated, credentialsPresent, presentedClient, signIdToken, type Exchanged, type ExchangeInput } from "../oauth/token-engine.ts";
import { oauthFail } from "../oauth/oauth-failure.ts";
import { accountScopes, accountTokenProfile, claimsOf } from "./tokens.ts";
import { findRefreshToken, insertFirstRefreshToken, revokeFamily, rotateRefreshToken, type RefreshTokenRow } from "./refresh-queries.ts";
import type { SqlRunner } from "../db/sql.ts";

export const refreshTokenTtlMs = 30 * 24 * 60 * 60_000;

type Deps = Pick<CoreDeps, "clock" | "signingKeys" | "statements" | "config">;

export interface RefreshInput extends ExchangeInput {
  refreshToken: string;
  scope: string;
}

/** The first refresh token of a code's grant (after a good exchange), or undefined when the grant has none. */
export async function firstRefreshToken(query: SqlRunner, codeId: string, now: Date): Promise<string | undefined> {
  const token = issueSecret("accountRefreshToken");
  const expiresAt = new Date(now.getTime() + refreshTokenTtlMs);
  return (await insertFirstRefreshToken(query, { id: randomUUID(), tokenHash: token.hash, codeId, expiresAt, now })) ? token.value : undefined;
}

/** The scopes asked for, in the issuer's order; null when the request named none (all of the token's). */
function requestedScopes(scope: string): string[] | null | { unknown: string[] } {
  const asked = scope.split(" ").filter(Boolean);
  if (!asked.length) return null;
  const unknown = asked.filter((s) => !(accountScopes as readonly string[]).includes(s));
  if (unknown.length) return { unknown };
  return accountScopes.filter((s) => asked.includes(s));
}

/** Revokes the family of a used token presented again, recording it once. */
export async function revokeFamilyOf(deps: Pick<CoreDeps, "statements">, em: EntityManager, row: RefreshTokenRow, now: Date, facts: { action: ActivityAction; presentedBy: string }) {
  await em.transactional(async (tx) => {
    if (!(await revokeFamily(deps.statements.on(tx), row.authorization_code_id, now))) return;
    recordActivity(tx, "system", {
      action: facts.action,
      targetType: "oauth_provider_client",
      targetId: row.public_client_id,
      details: { clientId: row.public_client_id, clientName: row.client_name, presentedBy: facts.presentedBy, userId: row.user_id },
    });
  });
}

/** Why a token presented by an authenticated client was not rotated, thrown; a reused one revokes its family. */
async function diagnose(deps: Deps, em: EntityManager, input: RefreshInput, clientRowId: string, asked: string[] | null, now: Date): Promise<never> {
  const row = await findRefreshToken(deps.statements.on(em), hashSecret(input.refreshToken));
  const invalid = () => oauthFail("invalid_grant", "the refresh token is invalid, expired or revoked");
  if (!row) throw invalid();
  if (row.client_uuid !== clientRowId) {
    // Another registered client holds this client's token: it has leaked, so the grant ends.
    if (!row.family_revoked) await revokeFamilyOf(deps, em, row, now, { action: "account_oauth.refresh_token_misused", presentedBy: input.clientId });
    throw oauthFail("invalid_grant", "the refresh token was issued to another client");
  }
  if (row.used_at !== null && !row.family_revoked) {
    await revokeFamilyOf(deps, em, row, now, { action: "account_oauth.refresh_token_reused", presentedBy: input.clientId });
    throw oauthFail("invalid_grant", "the refresh token was already used; every token of its grant is revoked");
  }
  if (row.family_revoked || row.used_at !== null) throw invalid();
  if (row.expires_at.getTime() <= now.getTime()) throw oauthFail("invalid_grant", "the refresh token has expired");
  if (asked && !asked.every((s) => row.scopes.includes(s))) throw oauthFail("invalid_scope", "a refresh may only narrow the scope of the grant");
  throw oauthFail("invalid_grant", "this client may no longer use refresh tokens");
}

/** grant_type=refresh_token: authenticates the client, rotates the token, issues the new tokens. */
export async function refreshGrant(deps: Deps, em: EntityManager, input: RefreshInput): Promise<Exchanged> {
  const now = deps.clock.now();
  const presented = presentedClient(input.clientSecret, input.clientAuthMethod);
  if (!credentialsPresent(input.clientId, input.clientSecret, presented)) throw badClient();
  const asked = requestedScopes(input.scope);
  const accessToken = issueSecret("accountAccessToken");
  const next = issueSecret("accountRefreshToken");
  const unknownScope = !!asked && "unknown" in asked;
  const scopes = asked && !("unknown" in asked) ? asked : null;
  const result = await rotateRefreshToken(deps.statements.on(em), {
    ...presented,
    clientId: input.clientId,
    now,
    // Nothing matches an empty hash: a request without a token, or one that will be refused for
    // its scope, rotates nothing (the client is still authenticated first).
    tokenHash: input.refreshToken && !unknownScope ? hashSecret(input.refreshToken) : "",
    requested: JSON.stringify(scopes ?? []),
    narrowed: scopes ? JSON.stringify(scopes) : null,
    accessId: randomUUID(),
    accessHash: accessToken.hash,
    accessExpiresAt: new Date(now.getTime() + accessTokenTtlSeconds * 1000),
    refreshId: randomUUID(),
    refreshHash: next.hash,
    refreshExpiresAt: new Date(now.getTime() + refreshTokenTtlMs),
  });
  // Compared first, so an unknown client costs the same constant-time comparison.
  if (!clientAuthenticated(result, presented) || !result) throw badClient();
  if (!input.refreshToken) throw oauthFail("invalid_request", "refresh_token is required");
  if (asked && "unknown" in asked) throw oauthFail("invalid_scope", `unknown scope ${asked.unknown.join(" ")}`);
  // Not rotated: say why (a reuse revokes the family there).
  if (result.user_id === null) return diagnose(deps, em, input, result.client_row_id, scopes, now);

  const granted = scopes ?? result.scopes!;
  const profile = accountTokenProfile(deps.config);
  const claims = claimsOf({ user_id: result.user_id, scopes: granted, name: result.name!, email: result.email! });
  const idToken = granted.includes("openid")
    ? await signIdToken(profile, deps, { clientId: input.clientId, now, authTime: result.auth_time!, nonce: null, accessToken: accessToken.value, claims })
    : "";
  return { accessToken: accessToken.value, idToken, scope: granted.join(" "), refreshToken: next.value };
}
