import type { IncomingHttpHeaders } from "node:http";
import { sessionCookie } from "../contract/credentials.ts";

/** The session token from the Cookie header, if any. */
export function readSessionCookie(headers: IncomingHttpHeaders): string | undefined {
  const header = headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === sessionCookie) {
      const value = part.slice(eq + 1).trim();
      return value || undefined;
    }
  }
  return undefined;
}

/** Set-Cookie for a session: HttpOnly, SameSite=Lax, Secure on https. */
export function sessionCookieHeader(token: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${sessionCookie}=${token}`,
    "Path=/",
    `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`,
    "HttpOnly",
    "SameSite=Lax",
    ...(secure ? ["Secure"] : []),
  ].join("; ");
}

export function clearSessionCookieHeader(secure: boolean): string {
  return sessionCookieHeader("", 0, secure);
}
