/**
 * GET (and POST) …/oauth2/end-session: OpenID Connect RP-Initiated Logout 1.0. Parse the
 * parameters → core's EndSession (as the browser's session) → clear the session cookie when core
 * ended the session, and go where core says: back to the app, to the sign-out page (which says the
 * browser is signed out, or asks whether to sign out), or an error page.
 */
import type { Context } from "koa";
import { AccountOAuthService } from "../../gen/outpost/accountoauth/v1/account_oauth_service_pb.js";
import type { CoreCalls } from "../core-calls.ts";
import { clearSessionCookieHeader } from "../cookies.ts";
import { mediaType } from "../body.ts";
import { sendPage } from "../pages.ts";
import { accountErrorPage } from "../account-pages/pages.ts";
import { readAuthorizeQuery } from "../oauth/authorize-query.ts";
import { readText } from "../oauth/body.ts";

const endSessionParams = ["id_token_hint", "client_id", "post_logout_redirect_uri", "state"];

/** The parameters from the query (GET) or the form (POST); undefined after answering a bad request. */
async function readParams(ctx: Context): Promise<Record<string, string> | undefined> {
  let source = ctx.querystring;
  if (ctx.method === "POST") {
    if (mediaType(ctx) !== "application/x-www-form-urlencoded") {
      sendPage(ctx, 415, accountErrorPage("This sign-out cannot go on", "invalid_request", "send the parameters as a form"));
      return undefined;
    }
    source = await readText(ctx);
  }
  const { values, repeated } = readAuthorizeQuery(source, endSessionParams);
  if (repeated.length) {
    sendPage(ctx, 400, accountErrorPage("This sign-out cannot go on", "invalid_request", `the parameter ${repeated[0]} is repeated`));
    return undefined;
  }
  return values;
}

export function createEndSessionPage(calls: CoreCalls, secureCookies: boolean) {
  return async (ctx: Context): Promise<void> => {
    const params = await readParams(ctx);
    if (!params) return;
    const answer = await calls.client(ctx, AccountOAuthService).endSession({
      idTokenHint: params.id_token_hint,
      clientId: params.client_id,
      postLogoutRedirectUri: params.post_logout_redirect_uri,
      state: params.state,
    });
    ctx.set("Cache-Control", "no-store");
    if (answer.sessionEnded) ctx.append("Set-Cookie", clearSessionCookieHeader(secureCookies));
    const outcome = answer.outcome;
    switch (outcome.case) {
      case "pageError":
        return sendPage(ctx, 400, accountErrorPage("This sign-out cannot go on", outcome.value.error, outcome.value.description));
      case "redirectUrl":
        ctx.status = 303;
        return ctx.redirect(outcome.value);
      case "signedOut":
      case "confirm":
        // The sign-out page says "You are not signed in", or offers the Sign out button.
        ctx.status = 303;
        return ctx.redirect("/sign-out");
      default:
        throw new Error("core answered no end-session outcome");
    }
  };
}
