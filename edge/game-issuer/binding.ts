/**
 * The browser binding: a random secret in an HttpOnly cookie; core only ever sees its SHA-256, so
 * only the browser that started a sign-in may watch it and be sent its code.
 */
import { randomBytes } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { hashSecret } from "../../contract/secrets.ts";
import { httpOnlyCookieHeader, readCookie } from "../cookies.ts";

export const bindingCookie = "outpost_game_binding";
/** Longer than a hosted session (10 min), so one cookie serves a few sign-ins in a row. */
const maxAgeSeconds = 86_400;
const secretPattern = /^[A-Za-z0-9_-]{43}$/;

/** The binding secret from the Cookie header, when there is a well-formed one (`secure`: GAME_ISSUER_URL is https). */
export function readBinding(headers: IncomingHttpHeaders, secure: boolean): string | undefined {
  const value = readCookie(headers, bindingCookie, secure);
  return value && secretPattern.test(value) ? value : undefined;
}

export function newBinding(): string {
  return randomBytes(32).toString("base64url");
}

/** What core sees of the secret: its SHA-256, hex. */
export function bindingHash(secret: string): string {
  return hashSecret(secret);
}

export function bindingCookieHeader(secret: string, secure: boolean): string {
  return httpOnlyCookieHeader(bindingCookie, secret, maxAgeSeconds, secure);
}
