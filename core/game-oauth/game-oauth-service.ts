/**
 * GameOAuthService: the Game OAuth issuer's engine, for the edge alone (never served publicly).
 * The edge speaks OAuth on GAME_ISSUER_URL; every decision is made here.
 */
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  ExchangeCodeResponseSchema,
  GameClaimsSchema,
  GameOAuthService,
  GetAuthorizationResponseSchema,
  GetUserInfoResponseSchema,
  IntrospectTokenResponseSchema,
  RevokeTokenResponseSchema,
  StartAuthorizationResponseSchema,
  type StartAuthorizationRequest,
} from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { gameRevocationProfile } from "./revocation-queries.ts";
import { introspectToken, revokeToken } from "../oauth/token-endpoints.ts";
import { createClientCredentialGuard } from "../oauth/client-credential-guard.ts";
import { entityManager } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import type { SqlRunner } from "../db/sql.ts";
import { redirectUriMatches } from "../oauth/redirect-uris.ts";
import { checkAuthorizationParams, type CheckedRequest } from "../oauth/authorization-request.ts";
import { insertSession, readSession, sessionToProto } from "./hosted-sessions.ts";
import { exchangeCode, tokenSet, userInfo } from "../oauth/token-engine.ts";
import { countedExchange } from "../metrics.ts";
import { gameTokenProfile } from "./token-exchange.ts";
import { findStartClient, type StartClientRow } from "./game-oauth-queries.ts";
import { sessionNotFound, watchAuthorization } from "./watch-authorization.ts";

/** Game OAuth grants these (and always both: the game claims are the point of a sign-in). */
const gameScopes = ["openid", "profile"] as const;

/** What the page is told: the session, an error shown on the page, or one for the app. */
type StartOutcome = MessageInitShape<typeof StartAuthorizationResponseSchema>["outcome"];

const pageError = (error: string, description: string): StartOutcome => ({ case: "pageError", value: { error, description } });

/** The app and the request's parameters, checked; or what the browser is shown instead. */
async function checkStart(query: SqlRunner, req: StartAuthorizationRequest): Promise<{ client: StartClientRow; checked: CheckedRequest } | { outcome: StartOutcome }> {
  const client = req.clientId ? await findStartClient(query, req.clientId) : undefined;
  if (!client) return { outcome: pageError("invalid_client", "unknown client_id") };
  if (client.disabled) return { outcome: pageError("unauthorized_client", "this app's sign-in is disabled") };
  if (!req.redirectUri || !redirectUriMatches(client.redirect_uris, req.redirectUri)) {
    return { outcome: pageError("invalid_request", "redirect_uri is not one this app registered") };
  }
  const checked = checkAuthorizationParams(req, gameScopes);
  if ("error" in checked) {
    // Anyone may register a client: only a verified organization's errors go straight back to
    // its redirect URI; for the others the page names where the user would be sent.
    return { outcome: { case: client.verified ? "redirectError" : "confirmRedirectError", value: checked } };
  }
  return { client, checked };
}

/** Opens a hosted session for a checked request and shows it as its browser will see it. */
async function openSession(deps: CoreDeps, query: SqlRunner, req: StartAuthorizationRequest, client: StartClientRow, checked: CheckedRequest): Promise<StartOutcome> {
  const now = deps.clock.now();
  const sessionClient = { id: client.id, organizationId: client.organization_id, name: client.name, verifierPolicy: client.verifier_policy };
  const opened = await insertSession(
    query,
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
  const view = {
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
  };
  const session = await sessionToProto(query, view, now, deps.config);
  deps.metrics.signInStarted();
  return { case: "session", value: session };
}

async function startAuthorization(deps: CoreDeps, req: StartAuthorizationRequest, ctx: HandlerContext) {
  const query = deps.statements.on(entityManager(ctx));
  const start = await checkStart(query, req);
  const outcome = "outcome" in start ? start.outcome : await openSession(deps, query, req, start.client, start.checked);
  return create(StartAuthorizationResponseSchema, { outcome });
}

export function createGameOAuthService(deps: CoreDeps): ServiceImpl<typeof GameOAuthService> {
  const tokens = gameTokenProfile(deps.config);
  const revocation = gameRevocationProfile(deps.config);
  const clientGuard = createClientCredentialGuard(deps);
  return {
    startAuthorization: (req, ctx) => startAuthorization(deps, req, ctx),

    async getAuthorization(req, ctx) {
      const query = deps.statements.on(entityManager(ctx));
      const session = await readSession(query, req.sessionId, req.browserBindingHash, deps.clock.now(), deps.config);
      if (!session) throw sessionNotFound();
      return create(GetAuthorizationResponseSchema, { session });
    },

    watchAuthorization: (req, ctx) => watchAuthorization(deps, req, ctx),

    async exchangeCode(req, ctx) {
      const issued = await clientGuard(ctx, req, () => countedExchange(deps.metrics, "game", exchangeCode(tokens, deps, entityManager(ctx), req)));
      return create(ExchangeCodeResponseSchema, { tokens: tokenSet(issued) });
    },

    async getUserInfo(req, ctx) {
      const claims = await userInfo(tokens, deps, entityManager(ctx), req.accessToken);
      return create(GetUserInfoResponseSchema, { claims: create(GameClaimsSchema, claims) });
    },

    async revokeToken(req, ctx) {
      await revokeToken(revocation, deps, entityManager(ctx), req);
      return create(RevokeTokenResponseSchema);
    },

    async introspectToken(req, ctx) {
      return create(IntrospectTokenResponseSchema, { introspection: await introspectToken(revocation, deps, entityManager(ctx), req) });
    },
  };
}
