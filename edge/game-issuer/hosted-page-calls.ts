/**
 * The hosted page's two calls back, both for the browser that started the sign-in (its binding
 * cookie): POST /oauth2/authorize/verify-challenge (the bot check, which reveals the login code)
 * and GET /oauth2/authorize/events (the live status, as server-sent events).
 */
import type { Context } from "koa";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { AuthorizationStatus, GameOAuthService, type AuthorizationSession } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { bindingHash, readBinding } from "./binding.ts";
import type { AuthorizeDeps } from "./authorize.ts";
import { readText } from "../oauth/body.ts";
import { InvalidRequest } from "../oauth/oauth-errors.ts";
import { mediaType } from "../body.ts";
import { isCrossSite } from "../csrf.ts";
import { rateLimitHeaders, unavailableHeaders } from "../errors.ts";
import { answerDatabaseUnavailable, relayStream } from "../event-streams.ts";

type HostedPageDeps = Pick<AuthorizeDeps, "calls" | "botCheck" | "issuer" | "secureCookies" | "shutdown">;
type WatchItem = { session?: AuthorizationSession; replaced: boolean };

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

function answerJson(ctx: Context, status: number, error: string, description: string): undefined {
  ctx.status = status;
  ctx.body = { error, error_description: description };
  return undefined;
}

const notBound = (ctx: Context) => answerJson(ctx, 403, "not_bound", "this browser did not start the sign-in (cookie missing)");

/** A session another browser started, or none: the same 404, so neither is told apart. */
function notFoundOr(ctx: Context, error: unknown): undefined {
  const code = ConnectError.from(error).code;
  if (code !== Code.NotFound && code !== Code.PermissionDenied && code !== Code.InvalidArgument) throw error;
  return answerJson(ctx, 404, "not_found", "no such sign-in for this browser");
}

/** Parse the bot check's JSON body: the session id and the solved payload, or undefined after an error answer. */
async function readChallenge(ctx: Context, issuer: string): Promise<{ sessionId: string; payload: unknown } | undefined> {
  if (isCrossSite(ctx.method, ctx.req.headers, new URL(issuer).origin)) return answerJson(ctx, 403, "cross_site", "cross-site request refused");
  if (mediaType(ctx) !== "application/json") return answerJson(ctx, 415, "invalid_request", "send application/json");
  let body: { session?: unknown; payload?: unknown };
  try {
    body = JSON.parse(await readText(ctx, 4096));
  } catch (error) {
    if (error instanceof InvalidRequest) return answerJson(ctx, error.status, error.error, error.message);
    if (!(error instanceof SyntaxError)) throw error;
    body = {};
  }
  return { sessionId: typeof body?.session === "string" ? body.session : "", payload: body?.payload };
}

/** The bound browser's session, or an error answered as JSON (403/404). */
async function boundSession(ctx: Context, deps: HostedPageDeps, sessionId: string): Promise<AuthorizationSession | undefined> {
  const secret = readBinding(ctx.req.headers, deps.secureCookies);
  if (!secret) return notBound(ctx);
  try {
    const answer = await deps.calls.client(ctx, GameOAuthService).getAuthorization({ sessionId, browserBindingHash: bindingHash(secret) });
    if (!answer.session) throw new ConnectError("no session", Code.NotFound);
    return answer.session;
  } catch (error) {
    return notFoundOr(ctx, error);
  }
}

export function createVerifyChallengeHandler(deps: HostedPageDeps) {
  return async function verifyChallenge(ctx: Context): Promise<void> {
    ctx.set("Cache-Control", "no-store");
    const challenge = await readChallenge(ctx, deps.issuer);
    if (!challenge) return;
    if (!challenge.sessionId || !(await deps.botCheck.verify(challenge.payload, challenge.sessionId))) {
      return void answerJson(ctx, 400, "challenge_failed", "the browser check was not solved");
    }
    const session = await boundSession(ctx, deps, challenge.sessionId);
    if (session) ctx.body = { login_code: session.loginCode, command: session.command, ...sessionJson(session) };
  };
}

/**
 * Answers a watch core refused before its first message: a 429 (too many live pages), a 404, or
 * the reconnect hint when the database is out of reach.
 */
function refusedWatch(ctx: Context, error: unknown): void {
  const unavailable = unavailableHeaders(error);
  if (unavailable) return answerDatabaseUnavailable(ctx, Number(unavailable["Retry-After"]));
  const limited = rateLimitHeaders(error);
  if (!limited) return void notFoundOr(ctx, error);
  // Too many live pages from this address on this instance (EventSource does not retry a 429).
  ctx.set(limited);
  answerJson(ctx, 429, "too_many_streams", ConnectError.from(error).rawMessage);
}

/**
 * Server-sent events: one `status` event now and at each change, until completed or expired;
 * `replaced` when a newer stream of the same session took over. Core bounds the streams (one
 * per session, a few per client address: 429 past that).
 */
export function createEventsHandler(deps: HostedPageDeps) {
  return async function events(ctx: Context): Promise<void> {
    const sessionId = typeof ctx.query.session === "string" ? ctx.query.session : "";
    const secret = readBinding(ctx.req.headers, deps.secureCookies);
    ctx.set("Cache-Control", "no-store");
    if (!secret) return void notBound(ctx);
    await relayStream<WatchItem>(ctx, deps.shutdown, {
      what: "authorization watch",
      open: (signal) => deps.calls.client(ctx, GameOAuthService).watchAuthorization({ sessionId, browserBindingHash: bindingHash(secret) }, { signal }),
      refused: refusedWatch,
      write: (res, item) => {
        if (item.replaced) {
          // This session is now followed by a newer stream (the page reconnected, or another tab):
          // the page that reads this stops instead of reconnecting and taking it back.
          res.write(`event: replaced\ndata: {}\n\n`);
          return false;
        }
        if (item.session) res.write(`event: status\ndata: ${JSON.stringify(sessionJson(item.session))}\n\n`);
        const status = item.session?.status;
        return status !== AuthorizationStatus.COMPLETED && status !== AuthorizationStatus.EXPIRED;
      },
    });
  };
}
