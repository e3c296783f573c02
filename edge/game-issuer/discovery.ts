/**
 * GET /.well-known/openid-configuration and GET /oauth2/jwks. The discovery document is fixed at
 * start-up; the JWKS comes from KeysService on each request (core caches nothing the edge must),
 * so a rotation shows at once.
 */
import type { Context } from "koa";
import type { Client } from "@connectrpc/connect";
import { Issuer, type KeysService } from "../../gen/outpost/keys/v1/keys_service_pb.js";

export const issuerPaths = {
  discovery: "/.well-known/openid-configuration",
  authorize: "/oauth2/authorize",
  token: "/oauth2/token",
  userinfo: "/oauth2/userinfo",
  jwks: "/oauth2/jwks",
} as const;

/** The issuer identifier: the origin, never with a trailing slash (OIDC Discovery §4.3 compares it exactly). */
export function issuerIdentifier(issuerUrl: URL): string {
  return issuerUrl.origin;
}

export function discoveryDocument(issuer: string) {
  return {
    issuer,
    authorization_endpoint: issuer + issuerPaths.authorize,
    token_endpoint: issuer + issuerPaths.token,
    userinfo_endpoint: issuer + issuerPaths.userinfo,
    jwks_uri: issuer + issuerPaths.jwks,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code"],
    scopes_supported: ["openid", "profile"],
    code_challenge_methods_supported: ["S256", "plain"],
    token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
    id_token_signing_alg_values_supported: ["RS256"],
    subject_types_supported: ["public"],
    claims_supported: [
      "sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash",
      "preferred_username", "game", "game_account_name", "game_account_id", "organization_id", "verified_by_server_id",
    ],
    authorization_response_iss_parameter_supported: true,
  };
}

/** Relying parties in a browser may read both documents. */
function publicJson(ctx: Context, body: unknown, maxAge: number): void {
  ctx.set("Access-Control-Allow-Origin", "*");
  ctx.set("Cache-Control", `public, max-age=${maxAge}`);
  ctx.body = body;
}

export function createDiscoveryHandler(issuer: string) {
  const document = discoveryDocument(issuer);
  return (ctx: Context): void => publicJson(ctx, document, 3600);
}

/** Short-lived, so a verifier picks up the next key well before it signs anything. */
export function createJwksHandler(keys: Client<typeof KeysService>) {
  return async (ctx: Context): Promise<void> => {
    const jwks = await keys.getJwks({ issuer: Issuer.GAME });
    publicJson(ctx, { keys: jwks.keys.map(({ kty, n, e, kid, use, alg }) => ({ kty, n, e, kid, use, alg })) }, 300);
  };
}
