/**
 * GameOAuthService: the Game OAuth issuer's engine, for the edge alone (never served publicly).
 * The edge speaks OAuth on GAME_ISSUER_URL; every decision is made here.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import {
  AuthorizationStatus,
  ExchangeCodeResponseSchema,
  GameClaimsSchema,
  GameOAuthService,
  GetAuthorizationResponseSchema,
  GetUserInfoResponseSchema,
  StartAuthorizationResponseSchema,
  WatchAuthorizationResponseSchema,
  type AuthorizationSession,
} from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { entityManager } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { redirectUriMatches } from "../oauth/redirect-uris.ts";
import { checkAuthorizationParams } from "../oauth/authorization-request.ts";
import { insertSession, readSession, sessionToProto } from "./hosted-sessions.ts";
import { claimsOutcome, exchangeCode, tokenOutcome, userInfo } from "../oauth/token-engine.ts";
import { countedExchange } from "../metrics.ts";
import { gameTokenProfile } from "./token-exchange.ts";
import type { Watch } from "./watches.ts";
import { clientIpKey } from "../ratelimit/client-ip.ts";
import { clientIpHeader } from "../../contract/credentials.ts";

/** How often a watch re-reads its session when no event arrives: a safety net, not the main path. */
export const watchPollMs = 2_000;

/** What the page shows of a session's claim, to tell a change (a claim made, renewed, cancelled or run out). */
const claimOf = (session: AuthorizationSession) =>
  session.claim ? `${session.claim.playerName}\n${session.claim.serverName}\n${session.claim.expiresAt?.seconds}` : "";

/** What the page shows of the listed servers, to tell a change (one went on- or offline, or can sign in no more). */
const serversOf = (session: AuthorizationSession) => session.servers.map((s) => `${s.online}/${s.signInAllowed}`).join();

/** Game OAuth grants these (and always both: the game claims are the point of a sign-in). */
const gameScopes = ["openid", "profile"] as const;

const sessionNotFound = () => fail("not_found", "no such sign-in session for this browser");

function pageError(error: string, description: string) {
  return create(StartAuthorizationResponseSchema, { outcome: { case: "pageError", value: { error, description } } });
}

export function createGameOAuthService(deps: CoreDeps): ServiceImpl<typeof GameOAuthService> {
  const tokens = gameTokenProfile(deps.config);
  return {
    async startAuthorization(req, ctx) {
      const em = entityManager(ctx);
      const now = deps.clock.now();
      const [client] = req.clientId
        ? await em.execute<Array<{ id: string; organization_id: string; name: string; verifier_policy: string; redirect_uris: string[]; disabled: boolean; verified: boolean }>>(
            `select c.id, c.organization_id, c.name, c.verifier_policy, c.redirect_uris, c.disabled, o.verified
               from game_oauth_clients c join organizations o on o.id = c.organization_id where c.client_id = ?`,
            [req.clientId],
          )
        : [];
      if (!client) return pageError("invalid_client", "unknown client_id");
      if (client.disabled) return pageError("unauthorized_client", "this app's sign-in is disabled");
      if (!req.redirectUri || !redirectUriMatches(client.redirect_uris, req.redirectUri)) {
        return pageError("invalid_request", "redirect_uri is not one this app registered");
      }
      const checked = checkAuthorizationParams(req, gameScopes);
      if ("error" in checked) {
        // Anyone may register a client: only a verified organization's errors go straight back to
        // its redirect URI; for the others the page names where the user would be sent.
        const outcome = client.verified ? ("redirectError" as const) : ("confirmRedirectError" as const);
        return create(StartAuthorizationResponseSchema, { outcome: { case: outcome, value: checked } });
      }
      const sessionClient = { id: client.id, organizationId: client.organization_id, name: client.name, verifierPolicy: client.verifier_policy };
      const opened = await insertSession(
        em,
        deps.loginCodes,
        {
          client: sessionClient,
          redirectUri: req.redirectUri,
          state: req.state,
          nonce: req.nonce || null,
          codeChallenge: checked.codeChallenge,
          codeChallengeMethod: checked.codeChallengeMethod,
          browserBindingHash: req.browserBindingHash,
        },
        now,
      );
      const session = await sessionToProto(
        em,
        {
          id: opened.id,
          status: "pending",
          expires_at: opened.expiresAt,
          redirectUrl: null,
          redirect_uri: req.redirectUri,
          claimed_player_name: null,
          claimed_server_name: null,
          claimed_until: null,
          client_name: client.name,
          verifier_policy: client.verifier_policy,
          client_id: client.id,
          loginCode: opened.loginCode,
        },
        now,
        deps.config,
      );
      deps.metrics.signInStarted();
      return create(StartAuthorizationResponseSchema, { outcome: { case: "session", value: session } });
    },

    async getAuthorization(req, ctx) {
      const session = await readSession(entityManager(ctx), req.sessionId, req.browserBindingHash, deps.clock.now(), deps.config);
      if (!session) throw sessionNotFound();
      return create(GetAuthorizationResponseSchema, { session });
    },

    async *watchAuthorization(req, ctx) {
      const em = entityManager(ctx);
      const read = () => readSession(em.fork(), req.sessionId, req.browserBindingHash, deps.clock.now(), deps.config);
      const message = (session: AuthorizationSession) => create(WatchAuthorizationResponseSchema, { session });
      const pending = (session: AuthorizationSession) => session.status === AuthorizationStatus.PENDING;
      let wake: (() => void) | undefined;
      let changed = false;
      let watch: Watch | undefined;
      // Subscribed before the first read, so a change between the two is not missed.
      const unsubscribe = deps.events.subscribe(req.sessionId, () => {
        changed = true;
        wake?.();
      });
      // What the watch holds goes back as soon as it has nothing more to say, or when the call
      // ends: not only when this generator is resumed to finish, which a caller that stops
      // reading after the last message, or leaves while it waits at a yield, never does.
      const release = () => {
        watch?.close();
        unsubscribe();
        ctx.signal.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        release();
        wake?.();
      };
      ctx.signal.addEventListener("abort", onAbort);
      try {
        let last: AuthorizationSession | undefined = await read();
        if (!last) throw sessionNotFound();
        if (ctx.signal.aborted) return; // gone during the read: take no slot
        // Only the bound browser gets here, so only it can replace the session's watch.
        if (pending(last)) watch = deps.watches.open(req.sessionId, clientIpKey(ctx.requestHeader.get(clientIpHeader)) ?? "unknown", () => wake?.());
        else release();
        yield message(last);
        while (pending(last) && !ctx.signal.aborted) {
          if (!changed && !watch?.replaced) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, watchPollMs);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = undefined;
          }
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
          if (next.status !== last.status || claimOf(next) !== claimOf(last) || serversOf(next) !== serversOf(last)) {
            yield message(next);
          }
          last = next;
        }
      } finally {
        release();
      }
    },

    async exchangeCode(req, ctx) {
      const result = await countedExchange(deps.metrics, "game", exchangeCode(tokens, deps, entityManager(ctx), req));
      return create(ExchangeCodeResponseSchema, { outcome: tokenOutcome(result) });
    },

    async getUserInfo(req, ctx) {
      const result = await userInfo(tokens, deps, entityManager(ctx), req.accessToken);
      return create(GetUserInfoResponseSchema, { outcome: claimsOutcome(result, (claims) => create(GameClaimsSchema, claims)) });
    },
  };
}
