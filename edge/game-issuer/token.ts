/**
 * POST /oauth2/token: parse the form and the client's credentials → GameOAuthService.ExchangeCode
 * → the token response. Errors are thrown as OAuth error classes for the translator.
 */
import type { Context } from "koa";
import type { Client } from "@connectrpc/connect";
import type { GameOAuthService } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { readForm } from "./body.ts";
import { clientCredentials } from "./client-auth.ts";
import { oauthErrorFromCore } from "./oauth-errors.ts";

export function createTokenHandler(client: Client<typeof GameOAuthService>, headers: (ctx: Context) => Record<string, string>) {
  return async (ctx: Context): Promise<void> => {
    const form = await readForm(ctx);
    const credentials = clientCredentials(ctx.get("authorization") || undefined, form);
    const answer = await client.exchangeCode(
      {
        clientId: credentials.clientId,
        clientSecret: credentials.clientSecret,
        clientAuthMethod: credentials.method,
        grantType: form.get("grant_type") ?? "",
        code: form.get("code") ?? "",
        redirectUri: form.get("redirect_uri") ?? "",
        codeVerifier: form.get("code_verifier") ?? "",
      },
      { headers: headers(ctx) },
    );
    if (answer.outcome.case !== "tokens") throw oauthErrorFromCore(answer.outcome.value);
    const tokens = answer.outcome.value;
    ctx.body = {
      access_token: tokens.accessToken,
      id_token: tokens.idToken,
      token_type: tokens.tokenType,
      expires_in: tokens.expiresIn,
      scope: tokens.scope,
    };
  };
}
