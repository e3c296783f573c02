/**
 * GET and POST …/oauth2/userinfo of either issuer: the Bearer token (RFC 6750: the Authorization
 * header, or on POST a form `access_token`; one method only) → the issuer's GetUserInfo → the claims.
 */
import type { Context } from "koa";
import { readForm } from "./body.ts";
import { mediaType } from "../body.ts";
import { InvalidRequest, InvalidToken } from "./oauth-errors.ts";

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

/**
 * The issuer's GetUserInfo: the claims as the userinfo response names them. Core's refusal
 * (invalid_token) is thrown as its Connect error, for the translator.
 */
export type UserInfoClaims = (accessToken: string, ctx: Context) => Promise<Record<string, unknown>>;

export function createUserInfoHandler(claims: UserInfoClaims) {
  return async (ctx: Context): Promise<void> => {
    ctx.body = await claims(await bearerToken(ctx), ctx);
  };
}
