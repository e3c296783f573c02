/**
 * The HTTP API's human-readable reference at GET /api/http/docs: Swagger UI (swagger-ui-dist,
 * served from this process, no CDN) rendering the generated document from /api/http/openapi.json.
 *
 * The page has no inline script or style: Swagger UI and the few lines that start it are assets
 * under /api/http/docs/assets/, so it runs under the strict Content-Security-Policy given with it.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Context, Middleware } from "koa";
import { httpApiBasePath } from "./openapi.ts";
import { html } from "../html.ts";
import { page } from "../pages.ts";

export interface ApiDocsAsset {
  contentType: string;
  body: Buffer;
  /** A short hash of the body; the page links the asset with it, so it can be cached for good. */
  hash: string;
}

export interface ApiDocsPage {
  /** The page (text/html). */
  html: string;
  /** Its assets by name, served at `<assetsUrl><name>`. */
  assets: ReadonlyMap<string, ApiDocsAsset>;
  /** The Content-Security-Policy the page needs (and works under). */
  contentSecurityPolicy: string;
}

export interface ApiDocsPageOptions {
  /** Where the page fetches the document. Default /api/http/openapi.json. */
  specUrl?: string;
  /** Where the assets are served, ending with "/". Default /api/http/docs/assets/. */
  assetsUrl?: string;
}

/** The paths the docs are served on. */
export const apiDocsPaths = {
  document: `${httpApiBasePath}/openapi.json`,
  page: `${httpApiBasePath}/docs`,
  assets: `${httpApiBasePath}/docs/assets/`,
} as const;

/**
 * Swagger UI's starter, as a file (a CSP without 'unsafe-inline' forbids inline scripts). The spec
 * URL comes from the page's markup. No remote validator, no ?url= / ?configUrl= from the address
 * bar, and credentials stay out of localStorage.
 */
const initScript = `"use strict";
(function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-spec-url"),
    domNode: root,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    validatorUrl: null,
    queryConfigEnabled: false,
    persistAuthorization: false,
    withCredentials: true,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    docExpansion: "list",
    tryItOutEnabled: false
  });
})();
`;

const pageCss = `body { margin: 0; background: #fafafa; }
.outpost-docs-header { max-width: 1460px; margin: 0 auto; padding: 16px 20px 0; box-sizing: border-box;
  font-family: sans-serif; color: #3b4151; display: flex; align-items: baseline; gap: 16px; }
.outpost-docs-header h1 { font-size: 20px; margin: 0; }
.outpost-docs-header a { color: #4990e2; font-size: 14px; }
`;

function swaggerUiDir(): string {
  return dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
}

function asset(contentType: string, body: Buffer): ApiDocsAsset {
  return { contentType, body, hash: createHash("sha256").update(body).digest("base64url").slice(0, 12) };
}

/** Reads Swagger UI's files once; a source-map comment is dropped (the maps are not served). */
function readDistFile(dir: string, name: string): Buffer {
  const body = readFileSync(join(dir, name));
  if (!name.endsWith(".js") && !name.endsWith(".css")) return body;
  const text = body.toString("utf8").replace(/\n?\/[/*]# sourceMappingURL=[^\n]*\s*$/, "\n");
  return Buffer.from(text, "utf8");
}

/**
 * The page and its assets. Reads swagger-ui-dist once (about 2 MB); call it once at start-up.
 * The CSP it returns: scripts, styles and fonts from the origin only, images also from data: URLs
 * (Swagger UI's icons), fetches to the origin only (the document and "Try it out").
 */
export function createApiDocsPage(options: ApiDocsPageOptions = {}): ApiDocsPage {
  const specUrl = options.specUrl ?? apiDocsPaths.document;
  const assetsUrl = options.assetsUrl ?? apiDocsPaths.assets;
  const dir = swaggerUiDir();
  const assets = new Map<string, ApiDocsAsset>([
    ["swagger-ui.css", asset("text/css; charset=utf-8", readDistFile(dir, "swagger-ui.css"))],
    ["swagger-ui-bundle.js", asset("text/javascript; charset=utf-8", readDistFile(dir, "swagger-ui-bundle.js"))],
    ["favicon-32x32.png", asset("image/png", readDistFile(dir, "favicon-32x32.png"))],
    ["docs.css", asset("text/css; charset=utf-8", Buffer.from(pageCss, "utf8"))],
    ["docs.js", asset("text/javascript; charset=utf-8", Buffer.from(initScript, "utf8"))],
  ]);
  const href = (name: string) => `${assetsUrl}${name}?v=${assets.get(name)!.hash}`;
  // Deferred, the bundle still runs before the starter, and both after #swagger-ui is parsed.
  const document = page({
    title: "Outpost HTTP API",
    icon: { href: href("favicon-32x32.png"), type: "image/png" },
    stylesheets: [href("swagger-ui.css"), href("docs.css")],
    scripts: [href("swagger-ui-bundle.js"), href("docs.js")],
    body: html`<header class="outpost-docs-header"><h1>Outpost HTTP API</h1><a href="${specUrl}">openapi.json</a></header>
<div id="swagger-ui" data-spec-url="${specUrl}"></div>`,
  });
  const contentSecurityPolicy = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return { html: document.toString(), assets, contentSecurityPolicy };
}

export interface ApiDocsOptions {
  /** The OpenAPI document (createOpenApiDocument's), served as it is. */
  document: object;
  /** The page; made with the default paths when absent. */
  page?: ApiDocsPage;
}

/** The OpenAPI document, revalidated by its ETag. */
function serveDocument(ctx: Context, json: Buffer, etag: string): void {
  ctx.set("Cache-Control", "no-cache");
  ctx.set("ETag", etag);
  if (ctx.get("if-none-match") === etag) {
    ctx.status = 304;
    return;
  }
  ctx.type = "application/json; charset=utf-8";
  ctx.body = json;
}

function servePage(ctx: Context, page: ApiDocsPage, body: Buffer): void {
  ctx.set("Content-Security-Policy", page.contentSecurityPolicy);
  ctx.set("Cache-Control", "no-cache");
  ctx.type = "text/html; charset=utf-8";
  ctx.body = body;
}

function serveAsset(ctx: Context, page: ApiDocsPage): void {
  const found = page.assets.get(ctx.path.slice(apiDocsPaths.assets.length));
  if (!found) {
    ctx.status = 404;
    ctx.body = { code: "not_found", status: 404, message: "no such asset" };
    return;
  }
  // Linked with ?v=<hash>, so a copy never goes stale.
  ctx.set("Cache-Control", ctx.query.v === found.hash ? "public, max-age=31536000, immutable" : "no-cache");
  ctx.type = found.contentType;
  ctx.body = found.body;
}

/**
 * Koa middleware for GET/HEAD /api/http/openapi.json, /api/http/docs and /api/http/docs/assets/<name>;
 * everything else goes on to `next`. Mount it before the HTTP API router. Needs no credential.
 */
export function apiDocs(options: ApiDocsOptions): Middleware {
  const page = options.page ?? createApiDocsPage();
  const documentJson = Buffer.from(JSON.stringify(options.document), "utf8");
  const documentEtag = `"${createHash("sha256").update(documentJson).digest("base64url").slice(0, 16)}"`;
  const pageBody = Buffer.from(page.html, "utf8");

  return async (ctx, next) => {
    const path = ctx.path;
    if (path !== apiDocsPaths.document && path !== apiDocsPaths.page && !path.startsWith(apiDocsPaths.assets)) return next();
    if (ctx.method !== "GET" && ctx.method !== "HEAD") {
      ctx.status = 405;
      ctx.set("Allow", "GET, HEAD");
      ctx.body = { code: "method_not_allowed", status: 405, message: `${path} takes GET` };
    } else if (path === apiDocsPaths.document) serveDocument(ctx, documentJson, documentEtag);
    else if (path === apiDocsPaths.page) servePage(ctx, page, pageBody);
    else serveAsset(ctx, page);
  };
}
