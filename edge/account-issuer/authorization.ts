/**
 * The Account OAuth issuer's pages between authorize and the code: GET …/oauth2/authorize, the
 * return from the sign-in page (…/oauth2/continue) and the consent form (POST …/oauth2/consent).
 * Each is parse → call core (AccountOAuthService, as the browser's session) → follow the step core
 * answers: to the app, to the sign-in page, to the consent page, or an error page.
 */
import type { Context } from "koa";
import type { Client } from "@connectrpc/connect";
import { AccountOAuthService, type AuthorizationStep } from "../../gen/outpost/accountoauth/v1/account_oauth_service_pb.js";
import type { CoreCalls } from "../core-calls.ts";
import { readFields } from "../body.ts";
import { formToken, formTokenMatches } from "../form-token.ts";
import { redirectingFormPolicy, sendPage, sendStartRefusalPage } from "../pages.ts";
import { accountErrorPage, consentPage } from "../account-pages/pages.ts";
import { authorizeParams, readAuthorizeQuery, startFields } from "../oauth/authorize-query.ts";
import type { Handler } from "../oauth/routes.ts";
import { createEndSessionPage } from "./end-session.ts";

export interface AuthorizationPagesDeps {
  calls: CoreCalls;
  secureCookies: boolean;
  /** Where the sign-in page sends the browser back to, with `?request=`. */
  continuePath: string;
}

/** Account OAuth also reads OpenID Connect's prompt and max_age. */
const accountAuthorizeParams = [...authorizeParams, "prompt", "max_age"];

export function createAuthorizationPages(deps: AuthorizationPagesDeps): Record<"authorize" | "continueAuthorization" | "consent" | "endSession", Handler> {
  const core = (ctx: Context): Client<typeof AccountOAuthService> => deps.calls.client(ctx, AccountOAuthService);

  /** The sign-in page, returning to the stored request afterwards. */
  const signInHref = (requestId: string) => `/sign-in?return_to=${encodeURIComponent(`${deps.continuePath}?request=${encodeURIComponent(requestId)}`)}`;

  /** Sends the browser where core says: the app, the sign-in page, the consent page or an error page. */
  function follow(ctx: Context, next: AuthorizationStep | undefined): void {
    const step = next?.step;
    ctx.set("Cache-Control", "no-store");
    switch (step?.case) {
      case "redirectUrl":
        ctx.status = 303;
        return ctx.redirect(step.value);
      case "signIn": {
        const reason = step.value.reason ? `&reason=${encodeURIComponent(step.value.reason)}` : "";
        ctx.status = 303;
        return ctx.redirect(signInHref(step.value.requestId) + reason);
      }
      case "consent": {
        const page = consentPage({ formToken: formToken(ctx, deps.secureCookies), switchAccountHref: signInHref(step.value.requestId), ...step.value });
        return sendPage(ctx, 200, page, redirectingFormPolicy);
      }
      case "pageError":
        return sendPage(ctx, 400, accountErrorPage("This sign-in cannot go on", step.value.error, step.value.description));
      default:
        throw new Error("core answered no authorization step");
    }
  }

  /** Calls core and follows its step; input core refuses as invalid, or a rate limit, is an error page. */
  async function callAndFollow(ctx: Context, call: () => Promise<{ next?: AuthorizationStep }>): Promise<void> {
    try {
      follow(ctx, (await call()).next);
    } catch (error) {
      const sent = sendStartRefusalPage(ctx, error, (refusal) =>
        accountErrorPage(refusal.limited ? "Too many sign-ins" : "This sign-in cannot go on", refusal.error, refusal.message),
      );
      if (!sent) throw error;
    }
  }

  async function authorize(ctx: Context): Promise<void> {
    const { values, repeated } = readAuthorizeQuery(ctx.querystring, accountAuthorizeParams);
    // The client and its redirect URI are not checked yet: never redirect on this.
    if (repeated.length) return sendPage(ctx, 400, accountErrorPage("This sign-in cannot start", "invalid_request", `the parameter ${repeated[0]} is repeated`));
    const request = { ...startFields(values), prompt: values.prompt, maxAge: values.max_age };
    await callAndFollow(ctx, () => core(ctx).startAuthorization(request));
  }

  async function continueAuthorization(ctx: Context): Promise<void> {
    const requestId = typeof ctx.query.request === "string" ? ctx.query.request : "";
    await callAndFollow(ctx, () => core(ctx).continueAuthorization({ requestId }));
  }

  /** The consent form's answer, or undefined after answering a form that is not this browser's or says neither. */
  async function readDecision(ctx: Context): Promise<{ requestId: string; allow: boolean } | undefined> {
    const fields = await readFields(ctx);
    if (!formTokenMatches(ctx, fields, deps.secureCookies)) {
      sendPage(ctx, 403, accountErrorPage("This form has expired", "forbidden", "the form was not sent from this site's page; go back to the app and start again"));
      return undefined;
    }
    if (fields.decision !== "allow" && fields.decision !== "deny") {
      sendPage(ctx, 400, accountErrorPage("This sign-in cannot go on", "invalid_request", "choose Allow or Deny"));
      return undefined;
    }
    return { requestId: typeof fields.request === "string" ? fields.request : "", allow: fields.decision === "allow" };
  }

  async function consent(ctx: Context): Promise<void> {
    const decision = await readDecision(ctx);
    if (decision) await callAndFollow(ctx, () => core(ctx).decideConsent(decision));
  }

  const endSession = createEndSessionPage(deps.calls, deps.secureCookies);
  return { authorize, continueAuthorization, consent, endSession };
}
