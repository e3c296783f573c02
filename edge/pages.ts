/**
 * What every server-rendered page of Outpost shares: escaping, the headers (strict CSP with no
 * inline script or style, no framing, nothing cached) and static assets served from memory with
 * a content hash, so pages link `…/file?v=<hash>` and browsers cache them for good.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Context, Middleware } from "koa";
import { Code, ConnectError } from "@connectrpc/connect";
import { rateLimitHeaders } from "./errors.ts";

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
 * For pages whose form may end, through redirects, at another site (sign-in and consent go back to
 * the app that asked): browsers apply `form-action` to every redirect after a form submission, so
 * it is left out; everything else stays as strict.
 */
export const redirectingFormPolicy = pageContentSecurityPolicy
  .split("; ")
  .filter((directive) => !directive.startsWith("form-action"))
  .join("; ");

const htmlEscapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text made safe for HTML content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => htmlEscapes[c]);
}

/** Headers of every page: no framing, strict CSP, nothing cached, no referrer. */
export function sendPage(ctx: Context, status: number, html: string, policy = pageContentSecurityPolicy): void {
  ctx.status = status;
  ctx.set("Content-Security-Policy", policy);
  ctx.set("X-Frame-Options", "DENY");
  ctx.set("Referrer-Policy", "no-referrer");
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set("Cache-Control", "no-store");
  ctx.type = "text/html; charset=utf-8";
  ctx.body = html;
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
 * sign-ins started from this address (429 with its rate-limit headers) or input it finds invalid
 * before looking at the client, such as an over-long parameter or a NUL character (400) — sends
 * the page `page` makes and returns true. Neither is a redirect: the client's redirect URI is not
 * trusted yet. Otherwise returns false and sends nothing.
 */
export function sendStartRefusalPage(ctx: Context, error: unknown, page: (refusal: StartRefusal) => string): boolean {
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
  ico: "image/x-icon",
};

/** Static files under `base` (a directory URL ending in "/"), by name, read once at start-up. */
export class AssetSet {
  readonly #assets: ReadonlyMap<string, Asset>;
  readonly path: string;

  constructor(path: string, base: URL, files: readonly string[]) {
    this.path = path;
    this.#assets = new Map(
      files.map((file) => {
        const body = readFileSync(new URL(file, base));
        const type = contentTypes[file.slice(file.lastIndexOf(".") + 1)] ?? "application/octet-stream";
        return [file, { contentType: type, body, hash: createHash("sha256").update(body).digest("base64url").slice(0, 12) }];
      }),
    );
  }

  /** The URL of `file` with its content hash (escaped for an attribute). */
  href(file: string): string {
    const found = this.#assets.get(file);
    if (!found) throw new Error(`no asset ${file}`);
    return escapeHtml(`${this.path}${file}?v=${found.hash}`);
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
