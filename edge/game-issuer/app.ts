/**
 * The Game OAuth issuer on GAME_ISSUER_URL, its own Koa app on its own listener. It speaks OAuth
 * 2.0 / OpenID Connect and the hosted page; GameOAuthService (core, over Connect) decides everything.
 */
import Koa, { type Context, type Middleware } from "koa";
import { createClient, type Transport } from "@connectrpc/connect";
import type { Logger } from "pino";
import { GameOAuthService } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { KeysService } from "../../gen/outpost/keys/v1/keys_service_pb.js";
import { clientIpHeader } from "../../contract/credentials.ts";
import { requestLog } from "../request-log.ts";
import { createAuthorizeHandlers } from "./authorize.ts";
import { createBotCheck, type BotCheckOptions } from "./bot-check.ts";
import { createDiscoveryHandler, createJwksHandler, issuerIdentifier, issuerPaths } from "./discovery.ts";
import { oauthErrorHandler } from "./oauth-errors.ts";
import { assets, assetsPath } from "./pages.ts";
import { createTokenHandler } from "./token.ts";
import { createUserInfoHandler } from "./userinfo.ts";

export interface GameIssuerOptions {
  /** GAME_ISSUER_URL: an origin; the issuer identifier is it without a trailing slash. */
  issuerUrl: URL;
  /** Reaches core's GameOAuthService and KeysService. */
  transport: Transport;
  logger: Logger;
  /** The hosted page's proof of work (HMAC key, difficulty). */
  botCheck?: BotCheckOptions;
}

type Handler = (ctx: Context) => Promise<void> | void;
type Routes = Record<string, Partial<Record<"GET" | "POST", Handler>>>;

/** Dispatches on exact paths; a known path with another method is 405 with Allow. */
function routes(table: Routes): Middleware {
  return async (ctx, next) => {
    const route = table[ctx.path];
    if (!route) return next();
    const method = ctx.method === "HEAD" ? "GET" : (ctx.method as "GET" | "POST");
    const handler = route[method];
    if (!handler) {
      ctx.status = 405;
      ctx.set("Allow", Object.keys(route).join(", "));
      ctx.body = { error: "invalid_request", error_description: `${ctx.path} does not take ${ctx.method}` };
      return;
    }
    await handler(ctx);
  };
}

/** Only the token and userinfo endpoints answer OAuth errors; the rest is JSON `{error}` or a page. */
function onlyFor(paths: string[], middleware: Middleware): Middleware {
  const set = new Set(paths);
  return (ctx, next) => (set.has(ctx.path) ? middleware(ctx, next) : next());
}

function plainErrors(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      ctx.state.log.error({ err: error }, "issuer request failed");
      ctx.status = 500;
      ctx.set("Cache-Control", "no-store");
      ctx.body = { error: "server_error" };
    }
  };
}

function serveAssets(): Middleware {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(assetsPath)) return next();
    const found = assets.get(ctx.path.slice(assetsPath.length));
    if (!found || (ctx.method !== "GET" && ctx.method !== "HEAD")) {
      ctx.status = 404;
      ctx.body = { error: "not_found" };
      return;
    }
    ctx.set("Cache-Control", ctx.query.v === found.hash ? "public, max-age=31536000, immutable" : "no-cache");
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.type = found.contentType;
    ctx.body = found.body;
  };
}

export function createGameIssuerApp(options: GameIssuerOptions): Koa {
  const issuer = issuerIdentifier(options.issuerUrl);
  const game = createClient(GameOAuthService, options.transport);
  const keys = createClient(KeysService, options.transport);
  const headers = (ctx: Context) => ({ [clientIpHeader]: ctx.ip });
  const authorize = createAuthorizeHandlers({
    client: game,
    botCheck: createBotCheck(options.botCheck),
    issuer,
    secureCookies: options.issuerUrl.protocol === "https:",
    headers,
  });

  const app = new Koa();
  app.silent = true;
  app.use(requestLog(options.logger));
  app.use(async (ctx, next) => {
    ctx.res.setHeader("x-content-type-options", "nosniff");
    ctx.res.setHeader("referrer-policy", "no-referrer");
    await next();
  });
  app.use(plainErrors());
  app.use(onlyFor([issuerPaths.token, issuerPaths.userinfo], oauthErrorHandler(issuer)));
  app.use(serveAssets());
  app.use(
    routes({
      [issuerPaths.discovery]: { GET: createDiscoveryHandler(issuer) },
      [issuerPaths.jwks]: { GET: createJwksHandler(keys) },
      [issuerPaths.authorize]: { GET: authorize.authorize },
      [`${issuerPaths.authorize}/verify-challenge`]: { POST: authorize.verifyChallenge },
      [`${issuerPaths.authorize}/events`]: { GET: authorize.events },
      [issuerPaths.token]: { POST: createTokenHandler(game, headers) },
      [issuerPaths.userinfo]: { GET: createUserInfoHandler(game, headers), POST: createUserInfoHandler(game, headers) },
      "/healthz": { GET: (ctx) => void (ctx.body = { status: "ok" }) },
    }),
  );
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = { error: "not_found", error_description: `no route for ${ctx.method} ${ctx.path}` };
  });
  return app;
}
