/**
 * The Game OAuth issuer on GAME_ISSUER_URL, its own Koa app on its own listener. It speaks OAuth
 * 2.0 / OpenID Connect and the hosted page; GameOAuthService (core, over Connect) decides everything.
 * The token, userinfo, revocation, introspection, discovery and JWKS endpoints are the shared ones (edge/oauth/).
 */
import Koa, { type Context } from "koa";
import type { Transport } from "@connectrpc/connect";
import type { Logger } from "pino";
import { GameOAuthService } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { Issuer, KeysService } from "../../gen/outpost/keys/v1/keys_service_pb.js";
import { createCoreCalls } from "../core-calls.ts";
import { requestLog, type RequestMetrics } from "../request-log.ts";
import { createDiscoveryHandler, createJwksHandler, discoveryDocument } from "../oauth/discovery.ts";
import { oauthErrorHandler } from "../oauth/oauth-errors.ts";
import { onlyFor, plainErrors, routes } from "../oauth/routes.ts";
import { createTokenHandler } from "../oauth/token.ts";
import { createUserInfoHandler } from "../oauth/userinfo.ts";
import { createIntrospectionHandler, createRevocationHandler } from "../oauth/revocation.ts";
import { createAuthorizeHandler } from "./authorize.ts";
import { createEventsHandler, createVerifyChallengeHandler } from "./hosted-page-calls.ts";
import { createBotCheck, type BotCheckOptions } from "./bot-check.ts";
import { assets } from "./pages.ts";
import { refuseOversizedBodies } from "../body-limits.ts";
import { clientAddressMiddleware, noProxies, type TrustedProxies } from "../client-address.ts";
import { bodyLimit } from "../oauth/body.ts";

export interface GameIssuerOptions {
  /** GAME_ISSUER_URL: an origin; the issuer identifier is it without a trailing slash. */
  issuerUrl: URL;
  /** Reaches core's GameOAuthService and KeysService. */
  transport: Transport;
  logger: Logger;
  /** The hosted page's proof of work (HMAC key, difficulty). */
  botCheck?: BotCheckOptions;
  /** Proxies whose header names the client (TRUSTED_PROXIES); none by default. */
  trustedProxies?: TrustedProxies;
  /** Where each response is counted. */
  metrics?: RequestMetrics;
  /** Aborted when the instance shuts down: the hosted pages' live status ends with a reconnect hint. */
  shutdown?: AbortSignal;
}

export const issuerPaths = {
  discovery: "/.well-known/openid-configuration",
  authorize: "/oauth2/authorize",
  token: "/oauth2/token",
  userinfo: "/oauth2/userinfo",
  jwks: "/oauth2/jwks",
  revocation: "/oauth2/revoke",
  introspection: "/oauth2/introspect",
} as const;

/** The issuer identifier: the origin, never with a trailing slash (OIDC Discovery §4.3 compares it exactly). */
export function issuerIdentifier(issuerUrl: URL): string {
  return issuerUrl.origin;
}

export const gameClaims = ["preferred_username", "game", "game_account_name", "game_account_id", "organization_id", "verified_by_server_id"];

export function gameDiscoveryDocument(issuer: string) {
  return discoveryDocument({
    issuer,
    endpoints: {
      authorization: issuer + issuerPaths.authorize,
      token: issuer + issuerPaths.token,
      userinfo: issuer + issuerPaths.userinfo,
      jwks: issuer + issuerPaths.jwks,
      revocation: issuer + issuerPaths.revocation,
      introspection: issuer + issuerPaths.introspection,
    },
    scopes: ["openid", "profile"],
    grantTypes: ["authorization_code"],
    authMethods: ["client_secret_basic", "client_secret_post"],
    claims: gameClaims,
  });
}

export function createGameIssuerApp(options: GameIssuerOptions): Koa {
  const issuer = issuerIdentifier(options.issuerUrl);
  const secureCookies = options.issuerUrl.protocol === "https:";
  // No credential travels from here: this issuer has no dashboard sessions or API keys.
  const calls = createCoreCalls({ transport: options.transport, secureCookies, credentials: false });
  const game = (ctx: Context) => calls.client(ctx, GameOAuthService);
  const hosted = { calls, botCheck: createBotCheck(options.botCheck), issuer, secureCookies, shutdown: options.shutdown };
  const userinfo = createUserInfoHandler(async (accessToken, ctx) => {
    const c = (await game(ctx).getUserInfo({ accessToken })).claims;
    if (!c) throw new Error("core answered userinfo without claims");
    return {
      sub: c.sub,
      preferred_username: c.preferredUsername,
      game: c.game,
      game_account_name: c.gameAccountName,
      game_account_id: c.gameAccountId,
      organization_id: c.organizationId,
      verified_by_server_id: c.verifiedByServerId,
    };
  });

  const app = new Koa();
  app.silent = true;
  app.use(requestLog(options.logger, { server: "game", metrics: options.metrics }));
  app.use(clientAddressMiddleware(options.trustedProxies ?? noProxies));
  app.use(async (ctx, next) => {
    ctx.res.setHeader("x-content-type-options", "nosniff");
    ctx.res.setHeader("referrer-policy", "no-referrer");
    await next();
  });
  // The hosted page's events (GET) take no body; the token endpoint's form, 16 KiB at most.
  app.use(
    refuseOversizedBodies(
      () => bodyLimit,
      (ctx, message) => void (ctx.body = { error: "invalid_request", error_description: message }),
    ),
  );
  app.use(plainErrors());
  app.use(onlyFor([issuerPaths.token, issuerPaths.userinfo, issuerPaths.revocation, issuerPaths.introspection], oauthErrorHandler(issuer)));
  app.use(assets.middleware());
  app.use(
    routes({
      [issuerPaths.discovery]: { GET: createDiscoveryHandler(gameDiscoveryDocument(issuer)) },
      [issuerPaths.jwks]: { GET: createJwksHandler((ctx) => calls.client(ctx, KeysService), Issuer.GAME) },
      [issuerPaths.authorize]: { GET: createAuthorizeHandler(hosted) },
      [`${issuerPaths.authorize}/verify-challenge`]: { POST: createVerifyChallengeHandler(hosted) },
      [`${issuerPaths.authorize}/events`]: { GET: createEventsHandler(hosted) },
      [issuerPaths.token]: { POST: createTokenHandler((request, ctx) => game(ctx).exchangeCode(request)) },
      [issuerPaths.userinfo]: { GET: userinfo, POST: userinfo },
      [issuerPaths.revocation]: { POST: createRevocationHandler((request, ctx) => game(ctx).revokeToken(request)) },
      [issuerPaths.introspection]: { POST: createIntrospectionHandler((request, ctx) => game(ctx).introspectToken(request)) },
      "/healthz": { GET: (ctx) => void (ctx.body = { status: "ok" }) },
    }),
  );
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = { error: "not_found", error_description: `no route for ${ctx.method} ${ctx.path}` };
  });
  return app;
}
