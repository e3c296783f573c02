/**
 * AccountOAuthService: the Account OAuth issuer's engine, for the edge alone (never served
 * publicly). The edge speaks OpenID Connect at ACCOUNT_BASE_URL/api/auth and renders the pages;
 * every decision is made here.
 */
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import {
  AccountClaimsSchema,
  AccountOAuthService,
  AuthorizationStepSchema,
  ContinueAuthorizationResponseSchema,
  DecideConsentResponseSchema,
  ExchangeCodeResponseSchema,
  GetUserInfoResponseSchema,
  IntrospectTokenResponseSchema,
  EndSessionResponseSchema,
  RevokeTokenResponseSchema,
  StartAuthorizationResponseSchema,
} from "../../gen/outpost/accountoauth/v1/account_oauth_service_pb.js";
import { entityManager } from "../context.ts";
import { presentedCredential } from "../auth/credential-store.ts";
import type { CoreDeps } from "../deps.ts";
import { exchangeCode, tokenSet, userInfo } from "../oauth/token-engine.ts";
import { countedExchange } from "../metrics.ts";
import { createAccountAuthorization, type Step } from "./authorization.ts";
import { accountTokenProfile } from "./tokens.ts";
import { refreshGrant } from "./refresh-tokens.ts";
import { endSession } from "./end-session.ts";
import { accountRevocationProfile } from "./revocation-queries.ts";
import { introspectToken, revokeToken } from "../oauth/token-endpoints.ts";
import { createClientCredentialGuard } from "../oauth/client-credential-guard.ts";

const step = (next: Step) => create(AuthorizationStepSchema, { step: next });

/**
 * The browser's dashboard session, from the session header as on every call. This service takes
 * no credential in the auth interceptor (it serves people who are not signed in yet), so an absent
 * or dead session is "not signed in" here, not a refusal.
 */
const browserSession = (ctx: HandlerContext) => presentedCredential(ctx.requestHeader).session ?? "";

export function createAccountOAuthService(deps: CoreDeps): ServiceImpl<typeof AccountOAuthService> {
  const tokens = accountTokenProfile(deps.config);
  const authorization = createAccountAuthorization(deps);
  const revocation = accountRevocationProfile(deps.config);
  const clientGuard = createClientCredentialGuard(deps);
  return {
    async startAuthorization(req, ctx) {
      const next = await authorization.start(entityManager(ctx), { ...req, sessionToken: browserSession(ctx) });
      return create(StartAuthorizationResponseSchema, { next: step(next) });
    },

    async continueAuthorization(req, ctx) {
      const next = await authorization.continue(entityManager(ctx), req.requestId, browserSession(ctx));
      return create(ContinueAuthorizationResponseSchema, { next: step(next) });
    },

    async decideConsent(req, ctx) {
      const next = await authorization.decide(entityManager(ctx), req.requestId, browserSession(ctx), req.allow);
      return create(DecideConsentResponseSchema, { next: step(next) });
    },

    async exchangeCode(req, ctx) {
      const em = entityManager(ctx);
      const grant = () => (req.grantType === "refresh_token" ? refreshGrant(deps, em, req) : exchangeCode(tokens, deps, em, req));
      const issued = await clientGuard(ctx, req, () => countedExchange(deps.metrics, "account", grant()));
      return create(ExchangeCodeResponseSchema, { tokens: tokenSet(issued) });
    },

    async getUserInfo(req, ctx) {
      const claims = await userInfo(tokens, deps, entityManager(ctx), req.accessToken);
      return create(GetUserInfoResponseSchema, { claims: create(AccountClaimsSchema, claims) });
    },

    async revokeToken(req, ctx) {
      await revokeToken(revocation, deps, entityManager(ctx), req);
      return create(RevokeTokenResponseSchema);
    },

    async introspectToken(req, ctx) {
      return create(IntrospectTokenResponseSchema, { introspection: await introspectToken(revocation, deps, entityManager(ctx), req) });
    },

    async endSession(req, ctx) {
      const { sessionEnded, ...outcome } = await endSession(deps, entityManager(ctx), { ...req, sessionToken: browserSession(ctx) });
      return create(EndSessionResponseSchema, { outcome, sessionEnded: sessionEnded ?? false });
    },
  };
}
