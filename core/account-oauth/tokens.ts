/**
 * The Account OAuth issuer's configuration of the token engine (core/oauth/token-engine.ts): its
 * tables (oauth_provider_clients, account_authorization_codes, account_access_tokens), its keys
 * and its claims — the dashboard user, told by scope.
 */
import type { CoreConfig } from "../deps.ts";
import type { ConsumedCode, TokenProfile } from "../oauth/token-engine.ts";

/** What Account OAuth grants, in this order. */
export const accountScopes = ["openid", "profile", "email"] as const;

export interface AccountClaims {
  sub: string;
  name?: string;
  email?: string;
  /** Outpost does not verify addresses, so always false when told. */
  emailVerified?: boolean;
}

interface AccountCodeRow extends ConsumedCode {
  user_id: string;
  scopes: string[];
  name: string;
  email: string;
}

type ClaimColumns = Pick<AccountCodeRow, "user_id" | "scopes" | "name" | "email">;

function claimsOf(row: ClaimColumns): AccountClaims {
  const scopes = row.scopes;
  return {
    sub: row.user_id,
    ...(scopes.includes("profile") && { name: row.name }),
    ...(scopes.includes("email") && { email: row.email, emailVerified: false }),
  };
}

export function accountTokenProfile(config: Pick<CoreConfig, "accountIssuerUrl">): TokenProfile<AccountCodeRow, AccountClaims> {
  return {
    keys: "account",
    issuerUrl: config.accountIssuerUrl,
    accessToken: "accountAccessToken",
    tables: {
      clients: "oauth_provider_clients",
      codes: "account_authorization_codes",
      codeClientColumn: "oauth_provider_client_id",
      codeColumns: "user_id, scopes",
      claimsJoin: "join users u on u.id = c.user_id",
      tokens: "account_access_tokens",
      tokenColumns: "user_id, scopes",
      claimsColumns: "u.name, u.email",
    },
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
    userInfoSql: `select t.user_id, t.scopes, u.name, u.email
       from account_access_tokens t
       join users u on u.id = t.user_id
       join account_authorization_codes c on c.id = t.authorization_code_id
      where t.token_hash = ? and t.revoked_at is null and c.reused_at is null and t.expires_at > ?`,
    userInfoClaims: (row) => claimsOf(row as unknown as ClaimColumns),
  };
}
