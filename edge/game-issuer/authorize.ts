/**
 * GET /oauth2/authorize of the Game OAuth issuer: read the query → core's StartAuthorization (as
 * this browser, bound by its cookie) → the hosted page, an error page, or a redirect back to the
 * app with the error. The hosted page's calls back are in hosted-page-calls.ts.
 */
import type { Context } from "koa";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { GameOAuthService, type StartAuthorizationResponse } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { bindingCookieHeader, bindingHash, newBinding, readBinding } from "./binding.ts";
import type { BotCheck } from "./bot-check.ts";
import { errorPage, errorRedirectPage, hostedPage } from "./pages.ts";
import { sendPage, sendStartRefusalPage } from "../pages.ts";
import type { CoreCalls } from "../core-calls.ts";
import { readAuthorizeQuery, startFields } from "../oauth/authorize-query.ts";

export interface AuthorizeDeps {
  calls: CoreCalls;
  botCheck: BotCheck;
  /** The issuer identifier, sent as `iss` on every redirect (RFC 9207). */
  issuer: string;
  secureCookies: boolean;
  /** Aborted when the instance shuts down: live status streams end with a reconnect hint. */
  shutdown?: AbortSignal;
}

/** A repeated one of these leaves the client or its redirect unknown: an error page, never a redirect. */
const trustParams = new Set(["client_id", "redirect_uri"]);

/**
 * `redirectUri` with the parameters added to its query, keeping the existing query as it is
 * (registered redirect URIs carry no fragment; one would be dropped).
 */
export function appendQuery(redirectUri: string, params: Record<string, string>): string {
  const hash = redirectUri.indexOf("#");
  const base = hash >= 0 ? redirectUri.slice(0, hash) : redirectUri;
  const added = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "")).toString();
  if (!added) return base;
  const separator = !base.includes("?") ? "?" : base.endsWith("?") || base.endsWith("&") ? "" : "&";
  return base + separator + added;
}

/** The binding secret of this browser, set on the response when it had none. */
export function ensureBinding(ctx: Context, secure: boolean): string {
  const existing = readBinding(ctx.req.headers, secure);
  if (existing) return existing;
  const secret = newBinding();
  ctx.set("Set-Cookie", bindingCookieHeader(secret, secure));
  return secret;
}

interface AuthorizeQuery {
  values: Record<string, string>;
  /** The first parameter sent more than once (not client_id or redirect_uri), if any. */
  repeated: string | undefined;
}

/** Parse: the query, or undefined after the error page for a repeated client_id or redirect_uri. */
function readQuery(ctx: Context): AuthorizeQuery | undefined {
  const { values, repeated } = readAuthorizeQuery(ctx.querystring);
  const untrusted = repeated.find((name) => trustParams.has(name));
  if (!untrusted) return { values, repeated: repeated[0] };
  sendPage(ctx, 400, errorPage("invalid_request", `the parameter ${untrusted} is repeated`));
  return undefined;
}

/**
 * Call: core's start; a refusal a page must answer (too many sign-ins from this address, a
 * parameter core finds invalid) is sent as the error page, and gives undefined.
 */
async function start(ctx: Context, deps: AuthorizeDeps, query: AuthorizeQuery): Promise<StartAuthorizationResponse | undefined> {
  const browserBindingHash = bindingHash(ensureBinding(ctx, deps.secureCookies));
  const fields = startFields(query.values);
  try {
    // A repeated parameter: core still checks the client and redirect URI (an error page when
    // they are not trusted), but starts no session; the redirect says what was repeated.
    return await deps.calls.client(ctx, GameOAuthService).startAuthorization({
      ...fields,
      responseType: query.repeated ? "" : fields.responseType,
      browserBindingHash,
    });
  } catch (error) {
    if (!sendStartRefusalPage(ctx, error, (refusal) => errorPage(refusal.error, refusal.message))) throw error;
    return undefined;
  }
}

/** Shape: the hosted page, an error page, or the app's redirect URI with the error. */
async function answer(ctx: Context, deps: AuthorizeDeps, query: AuthorizeQuery, { outcome }: StartAuthorizationResponse): Promise<void> {
  if (outcome.case === "pageError" || outcome.case === undefined) {
    return sendPage(ctx, 400, errorPage(outcome.value?.error ?? "invalid_request", outcome.value?.description ?? "the request was refused"));
  }
  if (outcome.case === "redirectError" || outcome.case === "confirmRedirectError") {
    const { values } = query;
    const error = query.repeated ? { error: "invalid_request", description: `the parameter ${query.repeated} is repeated` } : outcome.value;
    const href = appendQuery(values.redirect_uri, { error: error.error, error_description: error.description, state: values.state, iss: deps.issuer });
    if (outcome.case === "confirmRedirectError") return sendPage(ctx, 400, errorRedirectPage({ ...error, redirectUri: values.redirect_uri, href }));
    ctx.set("Cache-Control", "no-store");
    return ctx.redirect(href);
  }
  const session = outcome.value;
  const challenge = await deps.botCheck.create(session.sessionId);
  const expiresAt = session.expiresAt ? timestampDate(session.expiresAt).toISOString() : "";
  sendPage(ctx, 200, hostedPage({ session, challenge, expiresAt }));
}

export function createAuthorizeHandler(deps: AuthorizeDeps) {
  return async function authorize(ctx: Context): Promise<void> {
    const query = readQuery(ctx);
    const started = query && (await start(ctx, deps, query));
    if (started) await answer(ctx, deps, query, started);
  };
}
