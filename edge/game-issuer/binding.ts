/**
 * The browser binding: a random secret in an HttpOnly cookie; core only ever sees its SHA-256, so
 * only the browser that started a sign-in may watch it and be sent its code.
 */
import { createHash, randomBytes } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

export const bindingCookie = "outpost_game_binding";
/** Longer than a hosted session (10 min), so one cookie serves a few sign-ins in a row. */
const maxAgeSeconds = 86_400;
const secretPattern = /^[A-Za-z0-9_-]{43}$/;

/** The binding secret from the Cookie header, when there is a well-formed one. */
export function readBinding(headers: IncomingHttpHeaders): string | undefined {
  const header = headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === bindingCookie) {
      const value = part.slice(eq + 1).trim();
      if (secretPattern.test(value)) return value;
    }
  }
  return undefined;
}

export function newBinding(): string {
  return randomBytes(32).toString("base64url");
}

export function bindingHash(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** HttpOnly, SameSite=Lax (the page is reached by a top-level GET from the app), Secure on https. */
export function bindingCookieHeader(secret: string, secure: boolean): string {
  return [`${bindingCookie}=${secret}`, "Path=/", `Max-Age=${maxAgeSeconds}`, "HttpOnly", "SameSite=Lax", ...(secure ? ["Secure"] : [])].join("; ");
}
