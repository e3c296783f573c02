/**
 * Protection of cookie-authenticated requests from cross-site forgery: a browser tells where a
 * request comes from (`Sec-Fetch-Site`, else `Origin`), and anything but our own origin is refused.
 * Requests without either header come from non-browser clients, which cannot be forged by a page.
 */
import type { IncomingHttpHeaders } from "node:http";

const safeMethods = new Set(["GET", "HEAD", "OPTIONS"]);

export function isCrossSite(method: string, headers: IncomingHttpHeaders, ownOrigin: string): boolean {
  if (safeMethods.has(method)) return false;
  const site = headers["sec-fetch-site"];
  if (typeof site === "string") return site !== "same-origin" && site !== "none";
  const origin = headers.origin;
  if (typeof origin === "string") return origin !== ownOrigin;
  return false;
}
