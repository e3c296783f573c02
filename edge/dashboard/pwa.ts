/**
 * The dashboard as an installable app: the web app manifest, the service worker and the offline
 * page. None needs a session and none carries anything of a user's: the worker keeps only the
 * app shell (the dashboard's static assets and the offline page) and lets every other request
 * (pages, /api/…) go to the network untouched, so no user data ever lands in its cache.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { html } from "../html.ts";
import { dashboardContentSecurityPolicy, sendPage } from "../pages.ts";
import { assets, layout, manifestPath, themeColor } from "./layout.ts";

export const serviceWorkerPath = "/app/sw.js";
/** The service worker controls every dashboard page under this path. */
export const serviceWorkerScope = "/app/";
export const offlinePath = "/app/offline";

/** The assets of every dashboard page, which the worker keeps so the offline page has its look. */
const shellAssets = ["dashboard.css", "dashboard.js", "push.js", "favicon.svg", "icon-192.png"];

/** The worker's own rules: it fetches only this origin (the shell) and shows this origin's icons. */
const workerContentSecurityPolicy = "default-src 'none'; connect-src 'self'; img-src 'self'";

function manifest(): string {
  return JSON.stringify({
    id: "/app/",
    name: "Outpost",
    short_name: "Outpost",
    description: "Your game servers, organizations and sign-in clients.",
    start_url: "/app/",
    scope: serviceWorkerScope,
    display: "standalone",
    background_color: "#f4f5f8",
    theme_color: themeColor,
    icons: [
      { src: assets.href("icon-192.png"), sizes: "192x192", type: "image/png", purpose: "any" },
      { src: assets.href("icon-512.png"), sizes: "512x512", type: "image/png", purpose: "any" },
      { src: assets.href("icon-maskable-512.png"), sizes: "512x512", type: "image/png", purpose: "maskable" },
    ],
  });
}

/**
 * The worker's script: its build (the shell's URLs with their content hashes, and a version made
 * from them, so a new release changes the script's bytes and browsers install it) before the
 * fixed code in service-worker.js.
 */
function serviceWorker(): string {
  const shell = [offlinePath, ...shellAssets.map((file) => assets.href(file))];
  const version = createHash("sha256").update(shell.join("\n")).update(code).digest("base64url").slice(0, 12);
  return `"use strict";\nvar build = ${JSON.stringify({ version, shell, offline: offlinePath, icon: assets.href("icon-192.png") })};\n${code}`;
}

const code = readFileSync(new URL("./service-worker.js", import.meta.url), "utf8");

/** Static answers with a content type; revalidated each time, so a new release is seen at once. */
function sendStatic(ctx: Context, type: string, body: string): void {
  ctx.set("Cache-Control", "no-cache");
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.type = type;
  ctx.body = body;
}

export function pwaRoutes(router: Router): void {
  const manifestBody = manifest();
  const workerBody = serviceWorker();
  router.get(manifestPath, (ctx) => sendStatic(ctx, "application/manifest+json", manifestBody));
  router.get(serviceWorkerPath, (ctx) => {
    ctx.set("Content-Security-Policy", workerContentSecurityPolicy);
    sendStatic(ctx, "text/javascript; charset=utf-8", workerBody);
  });
  // The same for everyone and without a session: the worker fetches it once, at install.
  router.get(offlinePath, (ctx) => {
    sendPage(
      ctx,
      200,
      layout(undefined, {
        title: "You are offline",
        lede: "Outpost cannot be reached from this device right now.",
        body: html`<div class="panel stack"><p>Check your connection. The page you asked for opens again once Outpost answers.</p><p><a class="btn primary" href="/app">Try again</a></p></div>`,
      }),
      dashboardContentSecurityPolicy,
    );
  });
}
