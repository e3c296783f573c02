/**
 * The Account OAuth issuer on ACCOUNT_BASE_URL, issuer identifier ACCOUNT_BASE_URL/api/auth: the
 * three discovery documents, the JWKS, authorize with its sign-in and consent steps, token and
 * userinfo. Mounted in the account edge (edge/app.ts); AccountOAuthService (core) decides
 * everything. Token, userinfo, discovery and JWKS are the same modules as Game OAuth's
 * (edge/oauth/), with this issuer's paths, scopes and claims.
 */
import type { Context, Middleware } from "koa";
import { createClient, type Transport } from "@connectrpc/connect";
import { AccountOAuthService, type AuthorizationStep } from "../../gen/outpost/accountoauth/v1/account_oauth_service_pb.js";
import { Issuer, KeysService } from "../../gen/outpost/keys/v1/keys_service_pb.js";
import { clientIpHeader } from "../../contract/credentials.ts";
import { accountIssuerPath, accountIssuerUrl } from "../../contract/issuers.ts";
import { readSessionCookie } from "../cookies.ts";
import { readFields } from "../body.ts";
import { formToken, formTokenMatches } from "../form-token.ts";
import { redirectingFormPolicy, sendPage, sendStartRefusalPage } from "../pages.ts";
import { accountErrorPage, consentPage } from "../account-pages/pages.ts";
import { createDiscoveryHandler, createJwksHandler, discoveryDocument } from "../oauth/discovery.ts";
import { oauthErrorFromCore, oauthErrorHandler } from "../oauth/oauth-errors.ts";
import { routes } from "../oauth/routes.ts";
import { createTokenHandler } from "../oauth/token.ts";
import { createUserInfoHandler } from "../oauth/userinfo.ts";

export interface AccountIssuerOptions {
  accountBaseUrl: URL;
  /** Reaches core's AccountOAuthService and KeysService. */
  transport: Transport;
  secureCookies: boolean;
}

export const accountIssuerPaths = {
  discovery: `${accountIssuerPath}/.well-known/openid-configuration`,
  /** Where OpenID Connect Discovery looks when the issuer is taken for the origin. */
  rootDiscovery: "/.well-known/openid-configuration",
  /** RFC 8414 §3: the well-known segment goes before the issuer's path. */
  authorizationServer: `/.well-known/oauth-authorization-server${accountIssuerPath}`,
  jwks: `${accountIssuerPath}/jwks`,
  authorize: `${accountIssuerPath}/oauth2/authorize`,
  /** Back from the sign-in page (or to show the consent page again). */
  continue: `${accountIssuerPath}/oauth2/continue`,
  consent: `${accountIssuerPath}/oauth2/consent`,
  token: `${accountIssuerPath}/oauth2/token`,
  userinfo: `${accountIssuerPath}/oauth2/userinfo`,
} as const;

const authorizeParams = [
  "response_type", "client_id", "redirect_uri", "state", "scope", "nonce", "code_challenge", "code_challenge_method", "prompt", "max_age",
] as const;

export function createAccountIssuer(options: AccountIssuerOptions): Middleware {
  const issuer = accountIssuerUrl(options.accountBaseUrl);
  const origin = options.accountBaseUrl.origin;
  const core = createClient(AccountOAuthService, options.transport);
  const keys = createClient(KeysService, options.transport);
  const headers = (ctx: Context) => ({ [clientIpHeader]: ctx.ip });
  const session = (ctx: Context) => readSessionCookie(ctx.req.headers, options.secureCookies) ?? "";
  const document = discoveryDocument({
    issuer,
    endpoints: {
      authorization: origin + accountIssuerPaths.authorize,
      token: origin + accountIssuerPaths.token,
      userinfo: origin + accountIssuerPaths.userinfo,
      jwks: origin + accountIssuerPaths.jwks,
    },
    scopes: ["openid", "profile", "email"],
    claims: ["name", "email", "email_verified"],
  });

  /** The sign-in page, returning to the stored request afterwards. */
  const signInHref = (requestId: string) =>
    `/sign-in?return_to=${encodeURIComponent(`${accountIssuerPaths.continue}?request=${encodeURIComponent(requestId)}`)}`;

  /** Sends the browser where core says: the app, the sign-in page, the consent page or an error page. */
  function follow(ctx: Context, next: AuthorizationStep | undefined): void {
    const step = next?.step;
    ctx.set("Cache-Control", "no-store");
    switch (step?.case) {
      case "redirectUrl":
        ctx.status = 303;
        ctx.redirect(step.value);
        return;
      case "signIn": {
        const reason = step.value.reason ? `&reason=${encodeURIComponent(step.value.reason)}` : "";
        ctx.status = 303;
        ctx.redirect(signInHref(step.value.requestId) + reason);
        return;
      }
      case "consent": {
        const page = consentPage({ formToken: formToken(ctx, options.secureCookies), switchAccountHref: signInHref(step.value.requestId), ...step.value });
        sendPage(ctx, 200, page, redirectingFormPolicy);
        return;
      }
      case "pageError":
        sendPage(ctx, 400, accountErrorPage("This sign-in cannot go on", step.value.error, step.value.description));
        return;
      default:
        throw new Error("core answered no authorization step");
    }
  }

  /** Input core refuses as invalid (too long a parameter), or a rate limit, is an error page, not JSON. */
  async function withErrorPage(ctx: Context, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (error) {
      const sent = sendStartRefusalPage(ctx, error, (refusal) =>
        accountErrorPage(refusal.limited ? "Too many sign-ins" : "This sign-in cannot go on", refusal.error, refusal.message),
      );
      if (!sent) throw error;
    }
  }

  async function authorize(ctx: Context): Promise<void> {
    const query = new URLSearchParams(ctx.querystring);
    const values: Record<string, string> = {};
    for (const name of authorizeParams) {
      const all = query.getAll(name);
      if (all.length > 1) {
        // The client and its redirect URI are not checked yet: never redirect on this.
        sendPage(ctx, 400, accountErrorPage("This sign-in cannot start", "invalid_request", `the parameter ${name} is repeated`));
        return;
      }
      values[name] = all[0] ?? "";
    }
    await withErrorPage(ctx, async () => {
      const answer = await core.startAuthorization(
        {
          responseType: values.response_type,
          clientId: values.client_id,
          redirectUri: values.redirect_uri,
          state: values.state,
          scope: values.scope,
          nonce: values.nonce,
          codeChallenge: values.code_challenge,
          codeChallengeMethod: values.code_challenge_method,
          prompt: values.prompt,
          maxAge: values.max_age,
          sessionToken: session(ctx),
        },
        { headers: headers(ctx) },
      );
      follow(ctx, answer.next);
    });
  }

  async function continueAuthorization(ctx: Context): Promise<void> {
    const requestId = typeof ctx.query.request === "string" ? ctx.query.request : "";
    await withErrorPage(ctx, async () => {
      const answer = await core.continueAuthorization({ requestId, sessionToken: session(ctx) }, { headers: headers(ctx) });
      follow(ctx, answer.next);
    });
  }

  async function consent(ctx: Context): Promise<void> {
    const fields = await readFields(ctx);
    if (!formTokenMatches(ctx, fields, options.secureCookies)) {
      sendPage(ctx, 403, accountErrorPage("This form has expired", "forbidden", "the form was not sent from this site's page; go back to the app and start again"));
      return;
    }
    const decision = fields.decision;
    if (decision !== "allow" && decision !== "deny") {
      sendPage(ctx, 400, accountErrorPage("This sign-in cannot go on", "invalid_request", "choose Allow or Deny"));
      return;
    }
    const requestId = typeof fields.request === "string" ? fields.request : "";
    await withErrorPage(ctx, async () => {
      const answer = await core.decideConsent({ requestId, sessionToken: session(ctx), allow: decision === "allow" }, { headers: headers(ctx) });
      follow(ctx, answer.next);
    });
  }

  const userinfo = createUserInfoHandler(async (accessToken, ctx) => {
    const answer = await core.getUserInfo({ accessToken }, { headers: headers(ctx) });
    if (answer.outcome.case !== "claims") throw oauthErrorFromCore(answer.outcome.value);
    const c = answer.outcome.value;
    return {
      sub: c.sub,
      ...(c.name !== undefined && { name: c.name }),
      ...(c.email !== undefined && { email: c.email }),
      ...(c.emailVerified !== undefined && { email_verified: c.emailVerified }),
    };
  });
  const discovery = createDiscoveryHandler(document);

  const oauthErrors = oauthErrorHandler(issuer);
  const oauthErrorPaths = new Set<string>([accountIssuerPaths.token, accountIssuerPaths.userinfo]);
  const table = routes({
    [accountIssuerPaths.discovery]: { GET: discovery },
    [accountIssuerPaths.rootDiscovery]: { GET: discovery },
    [accountIssuerPaths.authorizationServer]: { GET: discovery },
    [accountIssuerPaths.jwks]: { GET: createJwksHandler(keys, Issuer.ACCOUNT) },
    [accountIssuerPaths.authorize]: { GET: authorize },
    [accountIssuerPaths.continue]: { GET: continueAuthorization },
    [accountIssuerPaths.consent]: { POST: consent },
    [accountIssuerPaths.token]: { POST: createTokenHandler((request, ctx) => core.exchangeCode(request, { headers: headers(ctx) })) },
    [accountIssuerPaths.userinfo]: { GET: userinfo, POST: userinfo },
  });
  // Token and userinfo answer RFC 6749 / 6750 errors; the pages answer pages.
  return (ctx, next) => (oauthErrorPaths.has(ctx.path) ? oauthErrors(ctx, () => table(ctx, next)) : table(ctx, next));
}
