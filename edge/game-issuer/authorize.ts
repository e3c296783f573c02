/**
 * GET /oauth2/authorize, and the hosted page's two calls back: POST
 * /oauth2/authorize/verify-challenge (the bot check, which reveals the login code) and GET
 * /oauth2/authorize/events (the live status, as server-sent events).
 */
import type { Context } from "koa";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  AuthorizationStatus,
  type AuthorizationSession,
  type GameOAuthService,
} from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { bindingCookieHeader, bindingHash, newBinding, readBinding } from "./binding.ts";
import type { BotCheck } from "./bot-check.ts";
import { readText } from "../oauth/body.ts";
import { InvalidRequest } from "../oauth/oauth-errors.ts";
import { mediaType } from "../body.ts";
import { errorPage, errorRedirectPage, hostedPage } from "./pages.ts";
import { sendPage, sendStartRefusalPage } from "../pages.ts";
import { isCrossSite } from "../csrf.ts";
import { rateLimitHeaders } from "../errors.ts";
import { answeredShutdown, endOnShutdown, shutdownEvent } from "../event-streams.ts";

export interface AuthorizeDeps {
  client: Client<typeof GameOAuthService>;
  botCheck: BotCheck;
  /** The issuer identifier, sent as `iss` on every redirect (RFC 9207). */
  issuer: string;
  secureCookies: boolean;
  headers: (ctx: Context) => Record<string, string>;
  /** Aborted when the instance shuts down: live status streams end with a reconnect hint. */
  shutdown?: AbortSignal;
}

const authorizeParams = [
  "response_type", "client_id", "redirect_uri", "state", "scope", "nonce", "code_challenge", "code_challenge_method",
] as const;
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

function sessionJson(session: AuthorizationSession) {
  const { claim } = session;
  return {
    status: AuthorizationStatus[session.status].toLowerCase(),
    expires_at: session.expiresAt ? timestampDate(session.expiresAt).toISOString() : undefined,
    ...(session.status === AuthorizationStatus.COMPLETED && { redirect_url: session.redirectUrl }),
    // A player ran the command and is being asked in game to confirm: who, where, until when.
    ...(claim && {
      claim: {
        player_name: claim.playerName,
        server_name: claim.serverName,
        expires_at: claim.expiresAt ? timestampDate(claim.expiresAt).toISOString() : undefined,
      },
    }),
  };
}

/** The binding secret of this browser, set on the response when it had none. */
function ensureBinding(ctx: Context, secure: boolean): string {
  const existing = readBinding(ctx.req.headers, secure);
  if (existing) return existing;
  const secret = newBinding();
  ctx.set("Set-Cookie", bindingCookieHeader(secret, secure));
  return secret;
}

/**
 * Runs core's start of an authorization; a refusal a page must answer (too many sign-ins from this
 * address, a parameter core finds invalid) is sent as the error page, and gives undefined.
 */
async function startOrPage<T>(ctx: Context, call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (error) {
    if (!sendStartRefusalPage(ctx, error, (refusal) => errorPage(refusal.error, refusal.message))) throw error;
    return undefined;
  }
}

export function createAuthorizeHandlers(deps: AuthorizeDeps) {
  const { client, botCheck, issuer } = deps;

  async function authorize(ctx: Context): Promise<void> {
    const query = new URLSearchParams(ctx.querystring);
    const values: Record<string, string> = {};
    let repeated: string | undefined;
    for (const name of authorizeParams) {
      const all = query.getAll(name);
      values[name] = all[0] ?? "";
      if (all.length > 1) {
        if (trustParams.has(name)) {
          sendPage(ctx, 400, errorPage("invalid_request", `the parameter ${name} is repeated`));
          return;
        }
        repeated ??= name;
      }
    }
    const secret = ensureBinding(ctx, deps.secureCookies);
    const answer = await startOrPage(ctx, () => client.startAuthorization(
      {
        // A repeated parameter: core still checks the client and redirect URI (an error page when
        // they are not trusted), but starts no session; the redirect says what was repeated.
        responseType: repeated ? "" : values.response_type,
        clientId: values.client_id,
        redirectUri: values.redirect_uri,
        state: values.state,
        scope: values.scope,
        nonce: values.nonce,
        codeChallenge: values.code_challenge,
        codeChallengeMethod: values.code_challenge_method,
        browserBindingHash: bindingHash(secret),
      },
      { headers: deps.headers(ctx) },
    ));
    if (!answer) return;
    const outcome = answer.outcome;
    if (outcome.case === "pageError" || outcome.case === undefined) {
      sendPage(ctx, 400, errorPage(outcome.value?.error ?? "invalid_request", outcome.value?.description ?? "the request was refused"));
      return;
    }
    if (outcome.case === "redirectError" || outcome.case === "confirmRedirectError") {
      const error = repeated ? { error: "invalid_request", description: `the parameter ${repeated} is repeated` } : outcome.value;
      const href = appendQuery(values.redirect_uri, { error: error.error, error_description: error.description, state: values.state, iss: issuer });
      if (outcome.case === "confirmRedirectError") {
        sendPage(ctx, 400, errorRedirectPage({ ...error, redirectUri: values.redirect_uri, href }));
        return;
      }
      ctx.set("Cache-Control", "no-store");
      ctx.redirect(href);
      return;
    }
    const session = outcome.value;
    const challenge = await botCheck.create(session.sessionId);
    const expiresAt = session.expiresAt ? timestampDate(session.expiresAt).toISOString() : "";
    sendPage(ctx, 200, hostedPage({ session, challenge, expiresAt }));
  }

  /** The bound browser's session, or an error answered as JSON (403/404). */
  async function boundSession(ctx: Context, sessionId: string): Promise<AuthorizationSession | undefined> {
    const secret = readBinding(ctx.req.headers, deps.secureCookies);
    if (!secret) {
      ctx.status = 403;
      ctx.body = { error: "not_bound", error_description: "this browser did not start the sign-in (cookie missing)" };
      return undefined;
    }
    try {
      const answer = await client.getAuthorization({ sessionId, browserBindingHash: bindingHash(secret) }, { headers: deps.headers(ctx) });
      if (!answer.session) throw new ConnectError("no session", Code.NotFound);
      return answer.session;
    } catch (error) {
      const code = ConnectError.from(error).code;
      if (code !== Code.NotFound && code !== Code.PermissionDenied && code !== Code.InvalidArgument) throw error;
      ctx.status = 404;
      ctx.body = { error: "not_found", error_description: "no such sign-in for this browser" };
      return undefined;
    }
  }

  async function verifyChallenge(ctx: Context): Promise<void> {
    ctx.set("Cache-Control", "no-store");
    if (isCrossSite(ctx.method, ctx.req.headers, new URL(issuer).origin)) {
      ctx.status = 403;
      ctx.body = { error: "cross_site", error_description: "cross-site request refused" };
      return;
    }
    if (mediaType(ctx) !== "application/json") {
      ctx.status = 415;
      ctx.body = { error: "invalid_request", error_description: "send application/json" };
      return;
    }
    let body: { session?: unknown; payload?: unknown };
    try {
      body = JSON.parse(await readText(ctx, 4096));
    } catch (error) {
      if (error instanceof InvalidRequest) {
        ctx.status = error.status;
        ctx.body = { error: error.error, error_description: error.message };
        return;
      }
      if (!(error instanceof SyntaxError)) throw error;
      body = {};
    }
    const sessionId = typeof body?.session === "string" ? body.session : "";
    if (!sessionId || !(await botCheck.verify(body.payload, sessionId))) {
      ctx.status = 400;
      ctx.body = { error: "challenge_failed", error_description: "the browser check was not solved" };
      return;
    }
    const session = await boundSession(ctx, sessionId);
    if (!session) return;
    ctx.body = { login_code: session.loginCode, command: session.command, ...sessionJson(session) };
  }

  /**
   * Server-sent events: one `status` event now and at each change, until completed or expired;
   * `replaced` when a newer stream of the same session took over. Core bounds the streams (one
   * per session, a few per client address: 429 past that).
   */
  async function events(ctx: Context): Promise<void> {
    const sessionId = typeof ctx.query.session === "string" ? ctx.query.session : "";
    const secret = readBinding(ctx.req.headers, deps.secureCookies);
    ctx.set("Cache-Control", "no-store");
    if (!secret) {
      ctx.status = 403;
      ctx.body = { error: "not_bound", error_description: "this browser did not start the sign-in (cookie missing)" };
      return;
    }
    const abort = new AbortController();
    // Listening before the first await: a page that leaves while core answers still ends the
    // watch at once, rather than holding its place until the sign-in ends.
    const closed = () => abort.abort();
    ctx.req.once("close", closed);
    const unhook = endOnShutdown(deps.shutdown, abort);
    try {
      const stream = client
        .watchAuthorization({ sessionId, browserBindingHash: bindingHash(secret) }, { headers: deps.headers(ctx), signal: abort.signal })
        [Symbol.asyncIterator]();
      let first: IteratorResult<{ session?: AuthorizationSession; replaced: boolean }>;
      try {
        first = await stream.next();
      } catch (error) {
        if (answeredShutdown(ctx, deps.shutdown)) return;
        const limited = rateLimitHeaders(error);
        if (limited) {
          // Too many live pages from this address on this instance (EventSource does not retry a 429).
          ctx.set(limited);
          ctx.status = 429;
          ctx.body = { error: "too_many_streams", error_description: ConnectError.from(error).rawMessage };
          return;
        }
        const code = ConnectError.from(error).code;
        if (code !== Code.NotFound && code !== Code.PermissionDenied && code !== Code.InvalidArgument) throw error;
        ctx.status = 404;
        ctx.body = { error: "not_found", error_description: "no such sign-in for this browser" };
        return;
      }
      await sendEvents(ctx, first, stream, abort.signal, deps.shutdown);
    } finally {
      unhook();
      ctx.req.off("close", closed);
      abort.abort();
    }
  }

  return { authorize, verifyChallenge, events };
}

/** Writes the stream's messages as server-sent events, and ends the response when it ends. */
async function sendEvents(
  ctx: Context,
  first: IteratorResult<{ session?: AuthorizationSession; replaced: boolean }>,
  stream: AsyncIterator<{ session?: AuthorizationSession; replaced: boolean }>,
  aborted: AbortSignal,
  shutdown: AbortSignal | undefined,
): Promise<void> {
  const res = ctx.res;
  ctx.respond = false;
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" });
  const heartbeat = setInterval(() => res.write(": keep-alive\n\n"), 15_000);
  const send = (session: AuthorizationSession) => res.write(`event: status\ndata: ${JSON.stringify(sessionJson(session))}\n\n`);
  try {
    for (let item = first; !item.done; item = await stream.next()) {
      if (item.value.replaced) {
        // This session is now followed by a newer stream (the page reconnected, or another tab):
        // the page that reads this stops instead of reconnecting and taking it back.
        res.write(`event: replaced\ndata: {}\n\n`);
        break;
      }
      if (item.value.session) send(item.value.session);
      const status = item.value.session?.status;
      if (status === AuthorizationStatus.COMPLETED || status === AuthorizationStatus.EXPIRED) break;
    }
  } catch (error) {
    if (!aborted.aborted) {
      ctx.state.log.warn({ err: error }, "authorization watch ended with an error");
      res.write(`event: unavailable\ndata: {}\n\n`);
    }
  } finally {
    clearInterval(heartbeat);
    // Ended by the shutdown, not by the sign-in: the page reconnects (to another instance).
    if (shutdown?.aborted && !res.writableEnded) res.write(shutdownEvent);
    res.end();
  }
}
