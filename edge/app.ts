/**
 * The edge on ACCOUNT_BASE_URL: health, the Connect services at /api/rpc, the HTTP API, the
 * account pages and the Account OAuth issuer. It authenticates nothing itself and keeps no
 * state: it moves transport facts (cookies, headers) to where core expects them and shapes
 * core's answers.
 */
import Koa, { type Context, type Middleware } from "koa";
import type { Transport } from "@connectrpc/connect";
import type { Logger } from "pino";
import type http from "node:http";
import type http2 from "node:http2";
import { clientIpHeader, requestIdHeader, sessionHeader } from "../contract/credentials.ts";
import { requestLog, type RequestMetrics } from "./request-log.ts";
import { metricsEndpoint, type Scrape } from "./metrics-endpoint.ts";
import { services } from "../contract/services.ts";
import { errorBody, retryHeaders, isUnexplainedFailure } from "./errors.ts";
import { isCrossSite } from "./csrf.ts";
import { readSessionCookie } from "./cookies.ts";
import { createAccountRoutes } from "./account-routes.ts";
import { createAccountIssuer } from "./account-issuer/issuer.ts";
import { accountAssets } from "./account-pages/pages.ts";
import { createHttpApi } from "./http-api/router.ts";
import { createFileTransfers } from "./http-api/transfers.ts";
import { createCoreCalls } from "./core-calls.ts";
import { createOpenApiDocument } from "./http-api/openapi.ts";
import { apiDocs } from "./http-api/docs.ts";
import { readFileSync } from "node:fs";
import { createDashboard } from "./dashboard/index.ts";
import { defaultFileTransferMaxBytes, edgeBodyMaxBytes, refuseOversizedBodies, uploadBodyMaxBytes } from "./body-limits.ts";
import { clientAddressMiddleware, noProxies, type TrustedProxies } from "./client-address.ts";
import { rpcBodyMaxBytes } from "../contract/request-limits.ts";

type NodeHandler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse, next?: () => void) => void;

export interface EdgeOptions {
  accountBaseUrl: URL;
  /** GAME_ISSUER_URL, for the dashboard's Game OAuth client pages. */
  gameIssuerUrl?: URL;
  logger: Logger;
  /** In-process transport to every core service. */
  transport: Transport;
  /** Serves the public Connect services; mounted at /api/rpc. */
  rpcHandler: NodeHandler;
  /** Resolves when the database answers. */
  ready: () => Promise<void>;
  /** True once the instance is shutting down: /readyz answers 503 so that proxies send nothing more. */
  draining?: () => boolean;
  /** Proxies whose header names the client (TRUSTED_PROXIES); none by default. */
  trustedProxies?: TrustedProxies;
  /** Where each response is counted, and /metrics when METRICS_TOKEN is set. */
  metrics?: EdgeMetrics;
  /** Aborted when the instance shuts down: server-sent event streams end with a reconnect hint. */
  shutdown?: AbortSignal;
  /** The largest upload's body (FILE_TRANSFER_MAX_MB; default 1 GiB): a larger declared one is refused before it is read. */
  fileTransferMaxBytes?: number;
}

export interface EdgeMetrics extends RequestMetrics {
  scrape(): Promise<Scrape>;
  /** METRICS_TOKEN: /metrics is served on this port only with it (as a bearer token). */
  token: string | undefined;
}

const accountPaths = new Set(["/sign-up", "/sign-in", "/sign-out", "/verify-email"]);

const packageVersion = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** Every error outside /api/rpc becomes `{code, status, message}`; a 5xx hides its cause. */
function jsonErrors(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const body = errorBody(error, ctx.state.requestId);
      if (isUnexplainedFailure(error)) ctx.state.log.error({ err: error }, "request failed");
      for (const [name, value] of Object.entries(retryHeaders(error) ?? {})) ctx.set(name, value);
      ctx.status = body.status;
      ctx.body = body;
    }
  };
}

function securityHeaders(): Middleware {
  return async (ctx, next) => {
    ctx.res.setHeader("x-content-type-options", "nosniff");
    ctx.res.setHeader("referrer-policy", "no-referrer");
    ctx.res.setHeader("x-frame-options", "DENY");
    await next();
  };
}

/** Refuses cross-site state changes made with the session cookie (and cross-site sign-ins). */
function crossOriginProtection(ownOrigin: string, secureCookies: boolean): Middleware {
  return async (ctx, next) => {
    const concerned = readSessionCookie(ctx.req.headers, secureCookies) !== undefined || accountPaths.has(ctx.path);
    if (concerned && isCrossSite(ctx.method, ctx.req.headers, ownOrigin)) {
      ctx.status = 403;
      ctx.body = { code: "permission_denied", status: 403, message: "cross-site request refused" };
      return;
    }
    await next();
  };
}

const isRpc = (ctx: Context) => ctx.path === "/api/rpc" || ctx.path.startsWith("/api/rpc/");

/** Every Connect procedure's path: a call's metrics label when its path is one, else `/api/rpc/other`. */
const rpcPaths = new Set(services.flatMap((service) => service.methods.map((method) => `/api/rpc/${service.typeName}/${method.name}`)));

/**
 * 413 for a declared body over the route's limit: one Connect message at /api/rpc (in Connect's
 * error shape, so its clients read the code), the largest form or JSON body elsewhere.
 */
function bodyLimits(uploadMaxBytes: number): Middleware {
  return refuseOversizedBodies(
    (ctx) => (isRpc(ctx) ? rpcBodyMaxBytes(ctx.path) : (uploadBodyMaxBytes(ctx.path, uploadMaxBytes) ?? edgeBodyMaxBytes(ctx.path))),
    (ctx, message) => {
      ctx.body = isRpc(ctx) ? { code: "resource_exhausted", message } : { code: "payload_too_large", status: 413, message };
    },
  );
}

/**
 * /api/rpc: the public Connect services take the request as it came (so not through
 * edge/core-calls.ts), with the facts that helper adds: the session cookie as the session header,
 * the client's address and the request id.
 */
function connectRpc(handler: NodeHandler, secureCookies: boolean): Middleware {
  return async (ctx, next) => {
    if (!isRpc(ctx)) return next();
    const token = readSessionCookie(ctx.req.headers, secureCookies);
    if (token && ctx.req.headers[sessionHeader] === undefined) ctx.req.headers[sessionHeader] = token;
    ctx.req.headers[clientIpHeader] = ctx.ip;
    ctx.state.route = rpcPaths.has(ctx.path) ? ctx.path : "/api/rpc/other";
    ctx.req.headers[requestIdHeader] = ctx.state.requestId;
    ctx.respond = false;
    handler(ctx.req, ctx.res);
  };
}

export function createEdgeApp(options: EdgeOptions): Koa {
  const app = new Koa();
  app.silent = true;
  // On https every cookie is Secure and `__Host-` prefixed (edge/cookies.ts).
  const secureCookies = options.accountBaseUrl.protocol === "https:";
  const accountRoutes = createAccountRoutes({ transport: options.transport, secureCookies });

  app.use(requestLog(options.logger, { server: "account", metrics: options.metrics }));
  app.use(clientAddressMiddleware(options.trustedProxies ?? noProxies));
  app.use(securityHeaders());
  app.use(bodyLimits(options.fileTransferMaxBytes ?? defaultFileTransferMaxBytes));
  app.use(jsonErrors());
  app.use(crossOriginProtection(options.accountBaseUrl.origin, secureCookies));
  app.use(connectRpc(options.rpcHandler, secureCookies));
  // On the main port only with a token: never public by default.
  if (options.metrics?.token !== undefined) app.use(metricsEndpoint(options.metrics));
  app.use(async (ctx, next) => {
    if (ctx.method === "GET" && ctx.path === "/healthz") {
      ctx.state.route = ctx.path;
      ctx.body = { status: "ok" };
      return;
    }
    if (ctx.method === "GET" && ctx.path === "/readyz") {
      ctx.state.route = ctx.path;
      if (options.draining?.()) {
        ctx.status = 503;
        ctx.body = { status: "shutting_down" };
        return;
      }
      try {
        await options.ready();
        ctx.body = { status: "ready" };
      } catch (error) {
        // The composition's ready() logs why (once a minute while the database is away).
        ctx.state.log.debug({ err: error }, "not ready");
        ctx.status = 503;
        ctx.body = { status: "unavailable" };
      }
      return;
    }
    await next();
  });
  // Account OAuth (issuer ACCOUNT_BASE_URL/api/auth) and the account pages' stylesheet.
  app.use(accountAssets.middleware());
  app.use(
    createAccountIssuer({
      accountBaseUrl: options.accountBaseUrl,
      transport: options.transport,
      secureCookies,
    }),
  );
  // The OpenAPI document and its reference page, generated from the descriptors (comments from
  // the descriptor set that npm run generate writes). Before the router, which owns /api/http/.
  const document = createOpenApiDocument({
    serverUrl: options.accountBaseUrl.origin,
    version: packageVersion,
    sourceInfo: readFileSync(new URL("../gen/outpost.binpb", import.meta.url)),
  });
  app.use(apiDocs({ document }));
  const calls = createCoreCalls({ transport: options.transport, secureCookies });
  app.use(createFileTransfers({ calls, errorHeaders: retryHeaders }));
  app.use(createHttpApi({ calls, errorHeaders: retryHeaders }));
  app.use(accountRoutes.routes());
  app.use(accountRoutes.allowedMethods());
  app.use(createDashboard(options));
  app.use(async (ctx) => {
    ctx.status = 404;
    ctx.body = { code: "not_found", status: 404, message: `no route for ${ctx.method} ${ctx.path}` };
  });
  return app;
}
