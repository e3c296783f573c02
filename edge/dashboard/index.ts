/**
 * The dashboard under /app: server-rendered pages and forms (POST, then a redirect; a refused
 * form comes back with the API's message next to each field), a few small scripts for copying,
 * confirmation dialogs and live server status. It talks to core only through Connect clients on
 * the edge's transport, as the signed-in person (the session cookie), and owns no state.
 */
import { defaultFileTransferMaxBytes } from "../body-limits.ts";
import type { Context, Middleware } from "koa";
import type { Transport } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { Router } from "@koa/router";
import { codeName, httpStatus, retryHeaders, isUnexplainedFailure } from "../errors.ts";
import { createCoreCalls } from "../core-calls.ts";
import { ErrorInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { page, PageError, render, signInRedirect, type DashboardDeps, type Viewer } from "./context.ts";
import { assets } from "./layout.ts";
import { createEditorModules, vendorPath } from "./editor-modules.ts";
import { html } from "../html.ts";
import { organizationRoutes } from "./organizations.ts";
import { orgPath } from "./paths.ts";
import { accessPageRoutes } from "./access.ts";
import { serverRoutes } from "./servers.ts";
import { gameOAuthRoutes } from "./game-oauth.ts";
import { integrationRoutes } from "./integrations.ts";
import { alertRoutes } from "./alerts.ts";
import { assistantRoutes } from "./assistant.ts";
import { chatRoutes } from "./chat.ts";
import { knowledgeRoutes } from "./knowledge.ts";
import { accountRoutes } from "./account.ts";
import { activityRoutes } from "./activity.ts";
import { adminRoutes } from "./admin.ts";
import { notificationRoutes } from "./notifications.ts";
import { pwaRoutes } from "./pwa.ts";

export interface DashboardOptions {
  transport: Transport;
  /** ACCOUNT_BASE_URL: shown in the agent command; https makes the form cookie Secure. */
  accountBaseUrl: URL;
  /** GAME_ISSUER_URL, shown on Game OAuth client pages (issuer and discovery URLs). */
  gameIssuerUrl?: URL;
  /** Aborted when the instance shuts down (live consoles end with a reconnect hint). */
  shutdown?: AbortSignal;
  /** The largest file the upload form takes (FILE_TRANSFER_MAX_MB; default 1 GiB), as the HTTP API's upload. */
  fileTransferMaxBytes?: number;
}

const titles: Record<number, string> = {
  400: "That did not work",
  403: "Not allowed",
  404: "Not found",
  409: "That did not work",
  413: "Too large",
  415: "Unsupported form",
  429: "Too many requests",
};

/** Failures become pages: no session → sign in; 4xx → the API's message; 5xx → the request id only. */
function errorPages(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const viewer = ctx.state.dashboardViewer as Viewer | undefined;
      if (error instanceof ConnectError && error.code === Code.Unauthenticated) return signInRedirect(ctx);
      let status: number;
      let message: string;
      if (error instanceof PageError) {
        status = error.status;
        message = error.message;
      } else {
        const connectError = ConnectError.from(error);
        status = httpStatus(connectError.code);
        const [info] = connectError.findDetails(ErrorInfoSchema);
        // A 5xx that explains itself (the database cannot be reached) says so; any other, only its request id.
        message = isUnexplainedFailure(error)
          ? `Something went wrong on our side. If it keeps happening, quote the request id ${ctx.state.requestId ?? ""}.`
          : connectError.rawMessage;
        if (isUnexplainedFailure(error)) ctx.state.log?.error({ err: error, code: codeName(connectError.code), reason: info?.reason }, "dashboard request failed");
        // A page over the rate limit says when to come back, as the API does.
        for (const [name, value] of Object.entries(retryHeaders(error) ?? {})) ctx.set(name, value);
      }
      render(
        ctx,
        viewer,
        {
          title: titles[status] ?? "Something went wrong",
          body: html`<div class="panel"><p class="problem">${message}</p><p><a href="/app">Back to the dashboard</a></p></div>`,
        },
        status,
      );
    }
  };
}

/** The Koa middleware serving GET / (→ /app) and everything under /app. */
export function createDashboard(options: DashboardOptions): Middleware {
  const secureCookies = options.accountBaseUrl.protocol === "https:";
  const deps: DashboardDeps = {
    calls: createCoreCalls({ transport: options.transport, secureCookies }),
    accountBaseUrl: options.accountBaseUrl,
    gameIssuerUrl: options.gameIssuerUrl,
    secureCookies,
    shutdown: options.shutdown,
    editor: createEditorModules(),
    fileTransferMaxBytes: options.fileTransferMaxBytes ?? defaultFileTransferMaxBytes,
  };
  const router = new Router();
  pwaRoutes(router);
  router.get(
    "/app",
    page(deps, (ctx: Context, v) => {
      const org = v.organizations.find((o) => o.slug === v.lastOrg) ?? v.organizations[0];
      ctx.redirect(org ? orgPath(org, "/servers") : "/app/organizations");
    }),
  );
  organizationRoutes(router, deps);
  serverRoutes(router, deps);
  accessPageRoutes(router, deps);
  gameOAuthRoutes(router, deps);
  integrationRoutes(router, deps);
  alertRoutes(router, deps);
  assistantRoutes(router, deps);
  chatRoutes(router, deps);
  knowledgeRoutes(router, deps);
  accountRoutes(router, deps);
  activityRoutes(router, deps);
  adminRoutes(router, deps);
  notificationRoutes(router, deps);

  const routes = router.routes() as unknown as Middleware;
  const methods = router.allowedMethods() as unknown as Middleware;
  const serveAssets = assets.middleware();
  const serveVendor = deps.editor.assets.middleware();
  const errors = errorPages();
  const notFound = page(deps, () => {
    throw new PageError(404, "There is no page at this address.");
  });

  return async (ctx, next) => {
    if (ctx.path === "/" && (ctx.method === "GET" || ctx.method === "HEAD")) return ctx.redirect("/app");
    if (ctx.path !== "/app" && !ctx.path.startsWith("/app/")) return next();
    if (ctx.path.startsWith(assets.path)) return serveAssets(ctx, next);
    if (ctx.path.startsWith(vendorPath)) return serveVendor(ctx, next);
    await errors(ctx, async () => {
      await routes(ctx, async () => {
        await methods(ctx, async () => {
          if (ctx.method === "GET") await notFound(ctx);
          else throw new PageError(404, "There is no page at this address.");
        });
      });
    });
  };
}
