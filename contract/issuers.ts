/**
 * Where the two OpenID Connect issuers live. Game OAuth's issuer identifier is GAME_ISSUER_URL's
 * origin; Account OAuth's is ACCOUNT_BASE_URL's origin with the path /api/auth, which is part of
 * the identifier (client libraries must keep it: discovery is at <issuer>/.well-known/…).
 */
export const accountIssuerPath = "/api/auth";

/** Account OAuth's issuer identifier for this ACCOUNT_BASE_URL (no trailing slash). */
export function accountIssuerUrl(accountBaseUrl: URL): string {
  return accountBaseUrl.origin + accountIssuerPath;
}
