/**
 * GET (and POST) …/oauth2/end-session: OpenID Connect RP-Initiated Logout 1.0. Parse the
 * parameters → core's EndSession (as the browser's session) → clear the session cookie when core
 * ended the session, and go where core says: back to the app, to the signed-out page, a page that
 * asks whether to sign out (its form comes back here with the same parameters), or an error page.
 *
 * An app's POST comes from its own site, and a cross-site POST carries no SameSite=Lax cookie, so
 * the session would look absent: a POST is answered with a 303 to the same endpoint as a GET with
 * the parameters in the query, a top-level navigation that the cookie travels with. Only the
 * confirmation form's own POST (checked by its form token) is acted on directly.
 */
import type { Context } from "koa";
import { AccountOAuthService } from "../../gen/outpost/accountoauth/v1/account_oauth_service_pb.js";
import type { CoreCalls } from "../core-calls.ts";
import { clearSessionCookieHeader } from "../cookies.ts";
import { mediaType } from "../body.ts";
import { formToken, formTokenMatches } from "../form-token.ts";
import { redirectingFormPolicy, sendPage, sendStartRefusalPage } from "../pages.ts";
import { accountErrorPage, endSessionConfirmPage } from "../account-pages/pages.ts";
import { readAuthorizeQuery } from "../oauth/authorize-query.ts";
import { readText } from "../oauth/body.ts";

const endSessionParams = ["id_token_hint", "client_id", "post_logout_redirect_uri", "state"];
const formFields = [...endSessionParams, "confirm", "form_token"];
const title = "This sign-out cannot go on";

type Params = Record<string, string>;

/** The parameters from the query (GET) or the form (POST); undefined after answering a bad request. */
async function readParams(ctx: Context): Promise<Params | undefined> {
  let source = ctx.querystring;
  if (ctx.method === "POST") {
    if (mediaType(ctx) !== "application/x-www-form-urlencoded") {
      sendPage(ctx, 415, accountErrorPage(title, "invalid_request", "send the parameters as a form"));
      return undefined;
    }
    source = await readText(ctx);
  }
  const { values, repeated } = readAuthorizeQuery(source, ctx.method === "POST" ? formFields : endSessionParams);
  if (repeated.length) {
    sendPage(ctx, 400, accountErrorPage(title, "invalid_request", `the parameter ${repeated[0]} is repeated`));
    return undefined;
  }
  return values;
}

/** The same request as a GET, so the browser's session cookie comes with it. */
function asGet(ctx: Context, params: Params): void {
  const query = new URLSearchParams(endSessionParams.filter((name) => params[name]).map((name): [string, string] => [name, params[name]]));
  ctx.set("Cache-Control", "no-store");
  ctx.status = 303;
  ctx.redirect(`${ctx.path}${query.size ? `?${query}` : ""}`);
}

export function createEndSessionPage(calls: CoreCalls, secureCookies: boolean) {
  async function end(ctx: Context, params: Params, confirmed: boolean): Promise<void> {
    const answer = await calls.client(ctx, AccountOAuthService).endSession({
      idTokenHint: params.id_token_hint,
      clientId: params.client_id,
      postLogoutRedirectUri: params.post_logout_redirect_uri,
      state: params.state,
      confirmed,
    });
    ctx.set("Cache-Control", "no-store");
    if (answer.sessionEnded) ctx.append("Set-Cookie", clearSessionCookieHeader(secureCookies));
    const outcome = answer.outcome;
    switch (outcome.case) {
      case "pageError":
        return sendPage(ctx, 400, accountErrorPage(title, outcome.value.error, outcome.value.description));
      case "redirectUrl":
        ctx.status = 303;
        return ctx.redirect(outcome.value);
      case "signedOut":
        // The sign-out page says "You are not signed in".
        ctx.status = 303;
        return ctx.redirect("/sign-out");
      case "confirm":
        return sendPage(ctx, 200, endSessionConfirmPage(formToken(ctx, secureCookies), ctx.path, params), redirectingFormPolicy);
      default:
        throw new Error("core answered no end-session outcome");
    }
  }

  return async (ctx: Context): Promise<void> => {
    const params = await readParams(ctx);
    if (!params) return;
    const confirmed = ctx.method === "POST" && params.confirm !== "";
    if (ctx.method === "POST" && !confirmed) return asGet(ctx, params);
    if (confirmed && !formTokenMatches(ctx, params, secureCookies)) {
      return sendPage(
        ctx,
        403,
        accountErrorPage("This form has expired", "forbidden", "the form was not sent from this site's page; go back to the app and sign out again"),
      );
    }
    try {
      await end(ctx, params, confirmed);
    } catch (error) {
      // An over-long or malformed parameter, or too many requests from this address: a page, as for any browser endpoint.
      const sent = sendStartRefusalPage(ctx, error, (refusal) => accountErrorPage(refusal.limited ? "Too many requests" : title, refusal.error, refusal.message));
      if (!sent) throw error;
    }
  };
}
