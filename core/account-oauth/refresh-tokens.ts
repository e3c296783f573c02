/**
 * Account OAuth refresh tokens (grant_type=refresh_token), for clients allowed offline_access and
 * users who consented to it. Every use rotates: the token is marked used and a new one issued in
 * the same statement (refresh-queries.ts), only where every check of refresh-checks.ts holds, 30
 * days from its issue by the database's clock. A used
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
import {
  accessTokenTtlSeconds,
  badClient,
  clientAuthenticated,
  credentialsPresent,
  presentedClient,
  signIdToken,
  type Exchanged,
  type ExchangeInput,
} from "../oauth/token-engine.ts";
import { oauthFail } from "../oauth/oauth-failure.ts";
import { accountScopes, accountTokenProfile, claimsOf } from "./tokens.ts";
import { revokeFamily, rotateRefreshToken, type RefreshTokenRow, type RotateRow } from "./refresh-queries.ts";
import { firstFailedRefreshCheck, notUsedBefore } from "./refresh-checks.ts";
import { refreshTokenTtlMs } from "./first-refresh-token.ts";

type Deps = Pick<CoreDeps, "clock" | "signingKeys" | "statements" | "config">;

export interface RefreshInput extends ExchangeInput {
  refreshToken: string;
  scope: string;
}

/** The scopes asked for, in the issuer's order; null when the request named none (all of the token's). */
function requestedScopes(scope: string): string[] | null | { unknown: string[] } {
  const asked = scope.split(" ").filter(Boolean);
  if (!asked.length) return null;
  const unknown = asked.filter((s) => !(accountScopes as readonly string[]).includes(s));
  if (unknown.length) return { unknown };
  return accountScopes.filter((s) => asked.includes(s));
}

/** A token's family and client, as the activity event of its revocation tells them. */
type FamilyFacts = Pick<RefreshTokenRow, "authorization_code_id" | "public_client_id" | "client_name" | "user_id">;

/** Revokes the family of a token that has leaked (used again, or by another client), recording it once. */
export async function revokeFamilyOf(
  deps: Pick<CoreDeps, "statements">,
  em: EntityManager,
  row: FamilyFacts,
  now: Date,
  facts: { action: ActivityAction; presentedBy: string },
) {
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

/**
 * Why a token presented by an authenticated client was not rotated, thrown: the first check it
 * failed, or, when it passed them all, a use running at the same time rotated it first (so it was
 * used twice). A failure that means the token has leaked revokes its family.
 */
async function refuse(deps: Deps, em: EntityManager, token: NonNullable<RotateRow["token"]>, presentedBy: string, now: Date): Promise<never> {
  const failed = firstFailedRefreshCheck(token.checks) ?? notUsedBefore;
  if (failed.revokesFamily && token.family_alive) await revokeFamilyOf(deps, em, token, now, { action: failed.revokesFamily, presentedBy });
  throw oauthFail(failed.failure.error, failed.failure.description);
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
  const token = result.token;
  if (!token) throw oauthFail("invalid_grant", "the refresh token is invalid, expired or revoked");
  // Not rotated: say why (a leaked token's family is revoked there).
  if (!token.rotated) return refuse(deps, em, token, input.clientId, now);

  const granted = scopes ?? token.scopes;
  const profile = accountTokenProfile(deps.config);
  const claims = claimsOf({ user_id: token.user_id, scopes: granted, name: token.name, email: token.email, email_verified: token.email_verified });
  const idToken = granted.includes("openid")
    ? await signIdToken(profile, deps, {
        clientId: input.clientId,
        alg: result.client_id_token_alg,
        now,
        authTime: token.auth_time,
        nonce: null,
        accessToken: accessToken.value,
        claims,
      })
    : "";
  return { accessToken: accessToken.value, idToken, scope: granted.join(" "), refreshToken: next.value };
}
