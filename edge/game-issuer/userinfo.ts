/**
 * GET and POST /oauth2/userinfo: the Bearer token (RFC 6750: the Authorization header, or on POST
 * a form `access_token`; one method only) → GameOAuthService.GetUserInfo → the claims.
 */
import type { Context } from "koa";
import type { Client } from "@connectrpc/connect";
import type { GameOAuthService } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { readForm } from "./body.ts";
import { mediaType } from "../body.ts";
import { InvalidRequest, InvalidToken, oauthErrorFromCore } from "./oauth-errors.ts";

const maxTokenLength = 4096;

async function bearerToken(ctx: Context): Promise<string> {
  const header = ctx.get("authorization");
  let fromHeader: string | undefined;
  if (header) {
    const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)[ ]*$/i.exec(header);
    if (!match) throw new InvalidToken("the Authorization header is not a Bearer token", !/^Bearer\b/i.test(header));
    fromHeader = match[1];
  }
  let fromBody: string | undefined;
  if (ctx.method === "POST" && mediaType(ctx) === "application/x-www-form-urlencoded") {
    fromBody = (await readForm(ctx)).get("access_token");
  }
  if (fromHeader !== undefined && fromBody !== undefined) throw new InvalidRequest("send the access token once: in the Authorization header or in the body");
  const token = fromHeader ?? fromBody;
  if (!token) throw new InvalidToken("an access token is required", true);
  if (token.length > maxTokenLength) throw new InvalidToken("the access token is not valid");
  return token;
}

export function createUserInfoHandler(client: Client<typeof GameOAuthService>, headers: (ctx: Context) => Record<string, string>) {
  return async (ctx: Context): Promise<void> => {
    const accessToken = await bearerToken(ctx);
    const answer = await client.getUserInfo({ accessToken }, { headers: headers(ctx) });
    if (answer.outcome.case !== "claims") throw oauthErrorFromCore(answer.outcome.value);
    const c = answer.outcome.value;
    ctx.body = {
      sub: c.sub,
      preferred_username: c.preferredUsername,
      game: c.game,
      game_account_name: c.gameAccountName,
      game_account_id: c.gameAccountId,
      organization_id: c.organizationId,
      verified_by_server_id: c.verifiedByServerId,
    };
  };
}
