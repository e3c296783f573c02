/**
 * gameOAuth/watchAuthorization: the hosted page's live status. It sends the session as its bound
 * browser sees it, then again whenever what the page shows changes (status, claim, the listed
 * servers' presence), woken by the session's events from any instance and re-reading every
 * {@link watchPollMs} as a safety net, until the session is no longer pending. A browser holds one
 * watch per session and a few per address (core/game-oauth/watches.ts); a newer watch of the same
 * session replaces this one, which then says so and ends.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import {
  AuthorizationStatus,
  WatchAuthorizationResponseSchema,
  type AuthorizationSession,
  type WatchAuthorizationRequest,
  type WatchAuthorizationResponse,
} from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { entityManager } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { clientIpKey } from "../ratelimit/client-ip.ts";
import { clientIpHeader } from "../../contract/credentials.ts";
import { createWaker, releaseWhenCallEnds } from "../stream-wait.ts";
import { readSession } from "./hosted-sessions.ts";
import type { Watch } from "./watches.ts";

/** How often a watch re-reads its session when no event arrives: a safety net, not the main path. */
export const watchPollMs = 2_000;

type WatchDeps = Pick<CoreDeps, "clock" | "config" | "events" | "watches" | "statements">;

export const sessionNotFound = () => fail("not_found", "no such sign-in session for this browser");

/** What the page shows of a session's claim, to tell a change (a claim made, renewed, cancelled or run out). */
const claimOf = (session: AuthorizationSession) => (session.claim ? `${session.claim.playerName}\n${session.claim.serverName}\n${session.claim.expiresAt?.seconds}` : "");

/** What the page shows of the listed servers, to tell a change (one went on- or offline, or can sign in no more). */
const serversOf = (session: AuthorizationSession) => session.servers.map((s) => `${s.online}/${s.signInAllowed}`).join();

const pending = (session: AuthorizationSession) => session.status === AuthorizationStatus.PENDING;

/** Whether the page would show `next` differently from `last`. */
const shownDifferently = (last: AuthorizationSession, next: AuthorizationSession) =>
  next.status !== last.status || claimOf(next) !== claimOf(last) || serversOf(next) !== serversOf(last);

export async function* watchAuthorization(deps: WatchDeps, req: WatchAuthorizationRequest, ctx: HandlerContext): AsyncGenerator<WatchAuthorizationResponse> {
  const em = entityManager(ctx);
  const read = () => readSession(deps.statements.on(em.fork()), req.sessionId, req.browserBindingHash, deps.clock.now(), deps.config);
  const message = (session: AuthorizationSession) => create(WatchAuthorizationResponseSchema, { session });
  const waker = createWaker();
  let changed = false;
  let watch: Watch | undefined;
  // Subscribed before the first read, so a change between the two is not missed.
  const unsubscribe = deps.events.subscribe(req.sessionId, () => {
    changed = true;
    waker.wake();
  });
  // What the watch holds goes back as soon as it has nothing more to say, or when the call ends.
  const release = releaseWhenCallEnds(ctx.signal, waker, () => {
    watch?.close();
    unsubscribe();
  });
  try {
    let last: AuthorizationSession | undefined = await read();
    if (!last) throw sessionNotFound();
    if (ctx.signal.aborted) return; // gone during the read: take no slot
    // Only the bound browser gets here, so only it can replace the session's watch.
    if (pending(last)) watch = deps.watches.open(req.sessionId, clientIpKey(ctx.requestHeader.get(clientIpHeader)) ?? "unknown", waker.wake);
    else release();
    yield message(last);
    while (pending(last) && !ctx.signal.aborted) {
      if (!changed && !watch?.replaced) await waker.sleep(watchPollMs);
      changed = false;
      if (ctx.signal.aborted) break;
      if (watch?.replaced) {
        release();
        yield create(WatchAuthorizationResponseSchema, { replaced: true });
        return;
      }
      const next = await read();
      if (!next) throw sessionNotFound();
      if (!pending(next)) release();
      if (shownDifferently(last, next)) yield message(next);
      last = next;
    }
  } finally {
    release();
  }
}
