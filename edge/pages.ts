/**
 * What every server-rendered page of Outpost shares: the document around its content (one `page`
 * layout), the headers (strict CSP with no inline script or style but what a page's own policy
 * names, the file editor's import map and style element; no framing, nothing cached) and static
 * assets served from memory with a content hash, so pages link `…/file?v=<hash>` and browsers
 * cache them for good. Markup is written with `html` (edge/html.ts), which escapes.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Context, Middleware } from "koa";
import { Code, ConnectError } from "@connectrpc/connect";
import { rateLimitHeaders, unavailableHeaders } from "./errors.ts";
import { html, type Html } from "./html.ts";

export const pageContentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join("; ");

/**
 * The dashboard's pages: as strict, and they may load the web app manifest and register the
 * service worker (both same-origin files; without these, manifest-src falls back to 'none').
 */
export const dashboardContentSecurityPolicy = `${pageContentSecurityPolicy}; manifest-src 'self'; worker-src 'self'`;

/**
 * `policy` with inline scripts of these hashes ("sha256-…") allowed too: a page's import map, which
 * browsers take only inline. A hash rather than a nonce: the map is the same on every page.
 */
export function allowScriptHashes(policy: string, hashes: readonly string[]): string {
  if (!hashes.length) return policy;
  return policy.replace("script-src 'self'", `script-src 'self' ${hashes.map((h) => `'${h}'`).join(" ")}`);
}

/**
 * For pages whose form may end, through redirects, at another site (sign-in and consent go back to
 * the app that asked): browsers apply `form-action` to every redirect after a form submission, so
 * it is left out; everything else stays as strict.
 */
export const redirectingFormPolicy = pageContentSecurityPolicy
  .split("; ")
  .filter((directive) => !directive.startsWith("form-action"))
  .join("; ");

export interface PageParts {
  /** The whole document title. */
  title: string;
  /** Stylesheet URLs (assets of this origin, as the CSP allows). */
  stylesheets: readonly string[];
  /** Script URLs, loaded deferred in this order (no inline script: the CSP forbids it). */
  scripts?: readonly string[];
  /** ES module URLs (deferred too), after the import map that resolves their bare imports. */
  modules?: readonly string[];
  /** An import map (`jsonScript("importmap", …)`): inline, so the page's CSP must allow its hash ({@link allowScriptHashes}). */
  importMap?: Html;
  icon?: { href: string; type: string };
  /** The web app manifest (the dashboard, an installable app) and the browser UI's colour with it. */
  manifest?: { href: string; themeColor: string };
  /** What goes inside `<body>`. */
  body: Html;
}

/** The head's icon, stylesheet and script elements, one a line. */
function headLinks(p: PageParts): Html[] {
  return [
    ...(p.icon ? [html`<link rel="icon" href="${p.icon.href}" type="${p.icon.type}">`] : []),
    ...(p.manifest ? [html`<link rel="manifest" href="${p.manifest.href}">`, html`<meta name="theme-color" content="${p.manifest.themeColor}">`] : []),
    ...p.stylesheets.map((href) => html`<link rel="stylesheet" href="${href}">`),
    ...(p.importMap ? [p.importMap] : []),
    ...(p.scripts ?? []).map((src) => html`<script src="${src}" defer></script>`),
    ...(p.modules ?? []).map((src) => html`<script type="module" src="${src}"></script>`),
  ].map((element) => html`${element}\n`);
}

/**
 * The layout of every full page Outpost serves (dashboard, both issuers, account pages, API docs):
 * the same head, with styles and scripts only as linked files so the CSP above holds.
 */
export function page(p: PageParts): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${p.title}</title>
${headLinks(p)}</head>
<body>
${p.body}
</body>
</html>
`;
}

/** Headers of every page: no framing, strict CSP, nothing cached, no referrer. */
export function sendPage(ctx: Context, status: number, document: Html, policy = pageContentSecurityPolicy): void {
  ctx.status = status;
  ctx.set("Content-Security-Policy", policy);
  ctx.set("X-Frame-Options", "DENY");
  ctx.set("Referrer-Policy", "no-referrer");
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set("Cache-Control", "no-store");
  ctx.type = "text/html; charset=utf-8";
  ctx.body = document.toString();
}

/** Why core refused to start an authorization, as an error page shows it. */
export interface StartRefusal {
  /** The OAuth error code: `temporarily_unavailable` (rate limit) or `invalid_request`. */
  error: string;
  message: string;
  /** Too many sign-ins started from this address (a 429). */
  limited: boolean;
}

/**
 * When `error` is core refusing to start an authorization in a way a page must answer — too many
 * sign-ins started from this address (429 with its rate-limit headers), its database out of reach
 * for now (503 with Retry-After), or input it finds invalid
 * before looking at the client, such as an over-long parameter or a NUL character (400) — sends
 * the page `page` makes and returns true. Neither is a redirect: the client's redirect URI is not
 * trusted yet. Otherwise returns false and sends nothing.
 */
export function sendStartRefusalPage(ctx: Context, error: unknown, page: (refusal: StartRefusal) => Html): boolean {
  const unavailable = unavailableHeaders(error);
  if (unavailable) {
    // Outpost cannot reach its database: the sign-in can start again in a moment, from the app.
    for (const [name, value] of Object.entries(unavailable)) ctx.set(name, value);
    sendPage(ctx, 503, page({ error: "temporarily_unavailable", message: ConnectError.from(error).rawMessage, limited: false }));
    return true;
  }
  const headers = rateLimitHeaders(error);
  if (headers) {
    for (const [name, value] of Object.entries(headers)) ctx.set(name, value);
    const message = `too many sign-ins started from your address; try again in ${headers["Retry-After"]} seconds`;
    sendPage(ctx, 429, page({ error: "temporarily_unavailable", message, limited: true }));
    return true;
  }
  if (error instanceof ConnectError && error.code === Code.InvalidArgument) {
    sendPage(ctx, 400, page({ error: "invalid_request", message: error.rawMessage, limited: false }));
    return true;
  }
  return false;
}

export interface Asset {
  contentType: string;
  body: Buffer;
  hash: string;
}

const contentTypes: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  webmanifest: "application/manifest+json",
  ico: "image/x-icon",
};

/**
 * Static files served under `path` by name, read once at start-up: each a name under `base` (a
 * directory URL ending in "/"), or a name and the file it is read from (a package's module).
 */
export class AssetSet {
  readonly #assets: ReadonlyMap<string, Asset>;
  readonly path: string;

  constructor(path: string, base: URL, files: ReadonlyArray<string | readonly [name: string, from: URL]>) {
    this.path = path;
    this.#assets = new Map(
      files.map((entry) => {
        const [file, from] = typeof entry === "string" ? [entry, new URL(entry, base)] : entry;
        const body = readFileSync(from);
        const type = contentTypes[file.slice(file.lastIndexOf(".") + 1)] ?? "application/octet-stream";
        return [file, { contentType: type, body, hash: createHash("sha256").update(body).digest("base64url").slice(0, 12) }];
      }),
    );
  }

  /** The URL of `file` with its content hash. */
  href(file: string): string {
    const found = this.#assets.get(file);
    if (!found) throw new Error(`no asset ${file}`);
    return `${this.path}${file}?v=${found.hash}`;
  }

  get(file: string): Asset | undefined {
    return this.#assets.get(file);
  }

  /** Serves the set under its path: immutable when the hash matches, revalidated otherwise. */
  middleware(): Middleware {
    return async (ctx, next) => {
      if (!ctx.path.startsWith(this.path)) return next();
      const found = this.#assets.get(ctx.path.slice(this.path.length));
      if (!found || (ctx.method !== "GET" && ctx.method !== "HEAD")) {
        ctx.status = 404;
        ctx.body = { error: "not_found" };
        return;
      }
      ctx.state.route = `${this.path}*`;
      ctx.set("Cache-Control", ctx.query.v === found.hash ? "public, max-age=31536000, immutable" : "no-cache");
      ctx.set("X-Content-Type-Options", "nosniff");
      ctx.type = found.contentType;
      ctx.body = found.body;
    };
  }
}
