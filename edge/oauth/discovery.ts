/**
 * Discovery documents and JWKS of either issuer. A document is fixed at start-up; the JWKS comes
 * from KeysService on each request (the edge caches nothing core must decide), so a rotation
 * shows at once.
 */
import type { Context } from "koa";
import type { Client } from "@connectrpc/connect";
import type { Issuer, Jwk, KeysService } from "../../gen/outpost/keys/v1/keys_service_pb.js";
import { signingAlgs } from "../../contract/issuers.ts";

export interface IssuerMetadata {
  /** The issuer identifier, exactly as tokens carry it in `iss`. */
  issuer: string;
  /** Absolute URLs. */
  endpoints: { authorization: string; token: string; userinfo: string; jwks: string; revocation: string; introspection: string; endSession?: string };
  scopes: readonly string[];
  grantTypes: readonly string[];
  /** Token endpoint client authentication methods; revocation takes the same, introspection the confidential ones. */
  authMethods: readonly string[];
  /** The claims beyond the standard ID token ones. */
  claims: readonly string[];
}

export function discoveryDocument(metadata: IssuerMetadata) {
  return {
    issuer: metadata.issuer,
    authorization_endpoint: metadata.endpoints.authorization,
    token_endpoint: metadata.endpoints.token,
    userinfo_endpoint: metadata.endpoints.userinfo,
    jwks_uri: metadata.endpoints.jwks,
    revocation_endpoint: metadata.endpoints.revocation,
    introspection_endpoint: metadata.endpoints.introspection,
    ...(metadata.endpoints.endSession && { end_session_endpoint: metadata.endpoints.endSession }),
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: [...metadata.grantTypes],
    scopes_supported: [...metadata.scopes],
    code_challenge_methods_supported: ["S256", "plain"],
    token_endpoint_auth_methods_supported: [...metadata.authMethods],
    revocation_endpoint_auth_methods_supported: [...metadata.authMethods],
    introspection_endpoint_auth_methods_supported: metadata.authMethods.filter((m) => m !== "none"),
    id_token_signing_alg_values_supported: [...signingAlgs],
    subject_types_supported: ["public"],
    claims_supported: ["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", ...metadata.claims],
    authorization_response_iss_parameter_supported: true,
  };
}

/** Relying parties in a browser may read both documents. */
function publicJson(ctx: Context, body: unknown, maxAge: number): void {
  ctx.set("Access-Control-Allow-Origin", "*");
  ctx.set("Cache-Control", `public, max-age=${maxAge}`);
  ctx.body = body;
}

export function createDiscoveryHandler(document: ReturnType<typeof discoveryDocument>) {
  return (ctx: Context): void => publicJson(ctx, document, 3600);
}

/** A key as RFC 7517 writes it: the members its kind has (an RSA key has no crv, an EC key no n). */
function jwkMembers(key: Jwk): Record<string, string> {
  const { kty, kid, use, alg, n, e, crv, x, y } = key;
  const members: Record<string, string> = kty === "RSA" ? { n, e } : kty === "EC" ? { crv, x, y } : { crv, x };
  return { kty, ...members, kid, use, alg };
}

/** Short-lived, so a verifier picks up the next key well before it signs anything. */
export function createJwksHandler(keys: (ctx: Context) => Client<typeof KeysService>, issuer: Issuer) {
  return async (ctx: Context): Promise<void> => {
    const jwks = await keys(ctx).getJwks({ issuer });
    publicJson(ctx, { keys: jwks.keys.map(jwkMembers) }, 300);
  };
}
