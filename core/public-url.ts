/**
 * Links that leave Outpost — a Discord embed's `url`, an email's "Open:" line (alerts, tests,
 * invitations) — are absolute URLs on the deployment's public base URL (ACCOUNT_BASE_URL, carried
 * as `CoreConfig.accountBaseUrl`). Their reader has no page to resolve a path against, and Discord
 * refuses an embed whose `url` is not an absolute http(s) URL (400, the whole message lost).
 *
 * Dashboard paths stay paths where the dashboard itself reads them: in-app notifications, and the
 * web push payload, which only Outpost's own service worker reads (encrypted to it) and which it
 * opens on its own origin, refusing any other (edge/dashboard/service-worker.js).
 */
import type { CoreConfig } from "./deps.ts";

/**
 * The absolute URL of a dashboard path (`/app/o/acme/activity`, with its query if any) on the
 * public base URL. A path must start with one `/`: anything else (a URL, `//host`) is a bug in
 * the caller, thrown, rather than a link sent somewhere else.
 */
export function publicUrl(config: Pick<CoreConfig, "accountBaseUrl">, path: string): string {
  if (!path.startsWith("/") || path.startsWith("//")) throw new Error(`a dashboard path starts with one "/" (got "${path}")`);
  return new URL(path, config.accountBaseUrl).href;
}
