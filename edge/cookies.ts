import type { IncomingHttpHeaders } from "node:http";
import { sessionCookie } from "../contract/credentials.ts";

/**
 * A cookie's name as it is set and read: with the `__Host-` prefix on https. Browsers keep such a
 * cookie only if it is Secure, has Path=/ and no Domain, so no sibling subdomain and no plain-http
 * page can set or shadow it (RFC 6265bis, cookie name prefixes). On http (local development) the
 * bare name, since a browser refuses a `__Host-` cookie that is not Secure.
 */
export function cookieName(name: string, secure: boolean): string {
  return secure ? `__Host-${name}` : name;
}

/** The value of the cookie `name` (prefixed on https) in the Cookie header, if it is there and not empty. */
export function readCookie(headers: IncomingHttpHeaders, name: string, secure: boolean): string | undefined {
  const header = headers.cookie;
  if (!header) return undefined;
  const wanted = cookieName(name, secure);
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === wanted) {
      const value = part.slice(eq + 1).trim();
      return value || undefined;
    }
  }
  return undefined;
}

/**
 * Set-Cookie for a cookie only the server reads: HttpOnly, SameSite=Lax (pages are reached by
 * top-level navigation from other sites), Path=/, never a Domain; on https Secure and the
 * `__Host-` prefix ({@link cookieName}).
 */
export function httpOnlyCookieHeader(name: string, value: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${cookieName(name, secure)}=${value}`,
    "Path=/",
    `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`,
    "HttpOnly",
    "SameSite=Lax",
    ...(secure ? ["Secure"] : []),
  ].join("; ");
}

/** The session token from the Cookie header, if any (the cookie named as it is set: `secure` is the dashboard's https). */
export function readSessionCookie(headers: IncomingHttpHeaders, secure: boolean): string | undefined {
  return readCookie(headers, sessionCookie, secure);
}

/** Set-Cookie for a session. */
export function sessionCookieHeader(token: string, maxAgeSeconds: number, secure: boolean): string {
  return httpOnlyCookieHeader(sessionCookie, token, maxAgeSeconds, secure);
}

export function clearSessionCookieHeader(secure: boolean): string {
  return sessionCookieHeader("", 0, secure);
}
