/**
 * POST …/oauth2/token of either issuer: parse the form and the client's credentials → the
 * issuer's ExchangeCode (core) → the token response. A refusal is thrown (core's as its Connect
 * error) and answered by the translator (oauth-errors.ts).
 */
import type { Context } from "koa";
import type { ClientAuthMethod, TokenSet } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import { readForm } from "./body.ts";
import { clientCredentials } from "./client-auth.ts";

export interface TokenRequest {
  clientId: string;
  clientSecret: string;
  clientAuthMethod: ClientAuthMethod;
  grantType: string;
  code: string;
  redirectUri: string;
  codeVerifier: string;
  refreshToken: string;
  scope: string;
}

/** The issuer's ExchangeCode: both services answer this shape. */
export type ExchangeCode = (request: TokenRequest, ctx: Context) => Promise<{ tokens?: TokenSet }>;

export function createTokenHandler(exchange: ExchangeCode) {
  return async (ctx: Context): Promise<void> => {
    const form = await readForm(ctx);
    const credentials = clientCredentials(ctx.get("authorization") || undefined, form);
    const answer = await exchange(
      {
        clientId: credentials.clientId,
        clientSecret: credentials.clientSecret,
        clientAuthMethod: credentials.method,
        grantType: form.get("grant_type") ?? "",
        code: form.get("code") ?? "",
        redirectUri: form.get("redirect_uri") ?? "",
        codeVerifier: form.get("code_verifier") ?? "",
        refreshToken: form.get("refresh_token") ?? "",
        scope: form.get("scope") ?? "",
      },
      ctx,
    );
    const tokens = answer.tokens;
    if (!tokens) throw new Error("core answered an exchange without tokens");
    ctx.body = {
      access_token: tokens.accessToken,
      ...(tokens.idToken && { id_token: tokens.idToken }),
      token_type: tokens.tokenType,
      expires_in: tokens.expiresIn,
      scope: tokens.scope,
      ...(tokens.refreshToken !== undefined && { refresh_token: tokens.refreshToken }),
    };
  };
}
