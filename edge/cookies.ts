import type { IncomingHttpHeaders } from "node:http";
import { sessionCookie } from "../contract/credentials.ts";

/** The value of the cookie `name` in the Cookie header, if it is there and not empty. */
export function readCookie(headers: IncomingHttpHeaders, name: string): string | undefined {
  const header = headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      return value || undefined;
    }
  }
  return undefined;
}

/**
 * Set-Cookie for a cookie only the server reads: HttpOnly, SameSite=Lax (pages are reached by
 * top-level navigation from other sites), Path=/, Secure on https.
 */
export function httpOnlyCookieHeader(name: string, value: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${name}=${value}`,
    "Path=/",
    `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`,
    "HttpOnly",
    "SameSite=Lax",
    ...(secure ? ["Secure"] : []),
  ].join("; ");
}

/** The session token from the Cookie header, if any. */
export function readSessionCookie(headers: IncomingHttpHeaders): string | undefined {
  return readCookie(headers, sessionCookie);
}

/** Set-Cookie for a session. */
export function sessionCookieHeader(token: string, maxAgeSeconds: number, secure: boolean): string {
  return httpOnlyCookieHeader(sessionCookie, token, maxAgeSeconds, secure);
}

export function clearSessionCookieHeader(secure: boolean): string {
  return sessionCookieHeader("", 0, secure);
}
