/**
 * The Account OAuth issuer's configuration of the token engine (core/oauth/token-engine.ts): its
 * statements (account-oauth-queries.ts), its keys and its claims — the dashboard user, told by scope.
 */
import type { CoreConfig } from "../deps.ts";
import type { TokenProfile } from "../oauth/token-engine.ts";
import { accountTokenQueries, type AccountCodeRow, type AccountReusedRow, type AccountUserInfoRow } from "./account-oauth-queries.ts";
import { firstRefreshToken } from "./first-refresh-token.ts";

/** What Account OAuth grants, in this order. */
export const accountScopes = ["openid", "profile", "email", "offline_access"] as const;

export interface AccountClaims {
  sub: string;
  name?: string;
  email?: string;
  /** Whether the person confirmed the address by the link Outpost mailed (or the operator marked it), when told. */
  emailVerified?: boolean;
}

type ClaimColumns = Pick<AccountCodeRow, "user_id" | "scopes" | "name" | "email" | "email_verified">;

export function claimsOf(row: ClaimColumns): AccountClaims {
  const scopes = row.scopes;
  return {
    sub: row.user_id,
    ...(scopes.includes("profile") && { name: row.name }),
    ...(scopes.includes("email") && { email: row.email, emailVerified: row.email_verified }),
  };
}

export function accountTokenProfile(config: Pick<CoreConfig, "accountIssuerUrl">): TokenProfile<AccountCodeRow, AccountReusedRow, AccountUserInfoRow, AccountClaims> {
  return {
    keys: "account",
    issuerUrl: config.accountIssuerUrl,
    accessToken: "accountAccessToken",
    queries: accountTokenQueries,
    claims: claimsOf,
    jwtClaims: (claims) => ({
      sub: claims.sub,
      ...(claims.name !== undefined && { name: claims.name }),
      ...(claims.email !== undefined && { email: claims.email, email_verified: claims.emailVerified }),
    }),
    scope: (row) => row.scopes.join(" "),
    codeReused: (row, presentedBy) => ({
      action: "account_oauth.code_reused",
      targetType: "oauth_provider_client",
      targetId: row.public_client_id,
      details: { clientId: row.public_client_id, clientName: row.client_name, presentedBy, userId: row.user_id },
    }),
    userInfoClaims: claimsOf,
    // With offline_access granted (and still allowed the client): the grant's first refresh token.
    refreshTokenFor: async (query, row, now) => (row.scopes.includes("offline_access") ? firstRefreshToken(query, row.id, now) : undefined),
  };
}
