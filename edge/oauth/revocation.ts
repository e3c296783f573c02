/**
 * POST …/oauth2/revoke (RFC 7009) and POST …/oauth2/introspect (RFC 7662) of either issuer:
 * parse the form and the client's credentials → the issuer's RevokeToken / IntrospectToken (core)
 * → the answer. A refusal is thrown (core's as its Connect error) and answered by the translator
 * (oauth-errors.ts).
 */
import type { Context } from "koa";
import { create } from "@bufbuild/protobuf";
import { ClientCredentialsSchema, type ClientCredentials, type TokenIntrospection } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import { readForm } from "./body.ts";
import { clientCredentials } from "./client-auth.ts";

export interface TokenEndpointRequest {
  client: ClientCredentials;
  token: string;
  tokenTypeHint: string;
}

/** The issuer's RevokeToken: both services answer this shape. */
export type RevokeToken = (request: TokenEndpointRequest, ctx: Context) => Promise<unknown>;

/** The issuer's IntrospectToken: both services answer this shape. */
export type IntrospectToken = (request: TokenEndpointRequest, ctx: Context) => Promise<{ introspection?: TokenIntrospection }>;

async function readRequest(ctx: Context): Promise<TokenEndpointRequest> {
  const form = await readForm(ctx);
  const credentials = clientCredentials(ctx.get("authorization") || undefined, form);
  return {
    client: create(ClientCredentialsSchema, { clientId: credentials.clientId, clientSecret: credentials.clientSecret, method: credentials.method }),
    token: form.get("token") ?? "",
    tokenTypeHint: form.get("token_type_hint") ?? "",
  };
}

export function createRevocationHandler(revoke: RevokeToken) {
  return async (ctx: Context): Promise<void> => {
    await revoke(await readRequest(ctx), ctx);
    // RFC 7009 §2.2: 200 whether or not the token was known; the body is ignored.
    ctx.status = 200;
    ctx.body = {};
  };
}

export function createIntrospectionHandler(introspect: IntrospectToken) {
  return async (ctx: Context): Promise<void> => {
    const t = (await introspect(await readRequest(ctx), ctx)).introspection;
    if (!t) throw new Error("core answered an introspection without its result");
    ctx.body = !t.active
      ? { active: false }
      : {
          active: true,
          scope: t.scope,
          client_id: t.clientId,
          sub: t.sub,
          exp: Number(t.exp),
          iat: Number(t.iat),
          ...(t.tokenType && { token_type: t.tokenType }),
          iss: t.iss,
        };
  };
}
