/**
 * What the two OpenID Connect issuers share between core and the edge: where they live, and the
 * algorithms their ID tokens are signed with.
 *
 * Where they live. Game OAuth's issuer identifier is GAME_ISSUER_URL's
 * origin; Account OAuth's is ACCOUNT_BASE_URL's origin with the path /api/auth, which is part of
 * the identifier (client libraries must keep it: discovery is at <issuer>/.well-known/…).
 */
export const accountIssuerPath = "/api/auth";

/** Account OAuth's issuer identifier for this ACCOUNT_BASE_URL (no trailing slash). */
export function accountIssuerUrl(accountBaseUrl: URL): string {
  return accountBaseUrl.origin + accountIssuerPath;
}

/**
 * The JWS algorithms an issuer signs ID tokens with, each with its own keys: RSASSA-PKCS1-v1_5
 * with SHA-256 over RSA 2048, ECDSA P-256 with SHA-256, and Ed25519. A client registers one
 * (`id_token_signed_response_alg`); discovery lists them all.
 */
export const signingAlgs = ["RS256", "ES256", "EdDSA"] as const;
export type SigningAlg = (typeof signingAlgs)[number];

/** Every client's algorithm unless it registers another. */
export const defaultSigningAlg: SigningAlg = "RS256";

export const isSigningAlg = (value: string): value is SigningAlg => (signingAlgs as readonly string[]).includes(value);
