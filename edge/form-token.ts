/**
 * The anti-forgery token of Outpost's HTML forms (sign-in, sign-up, consent, the dashboard), on
 * top of the Origin / Sec-Fetch-Site check every cookie request passes (edge/csrf.ts): a random
 * value in an HttpOnly cookie, repeated in a hidden field of each form; a POST whose field does
 * not equal the cookie is refused. A page on another site can neither read the cookie nor set it.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { Context } from "koa";
import { httpOnlyCookieHeader, readCookie } from "./cookies.ts";
import { html, type Html } from "./html.ts";

export const formTokenCookie = "outpost_form";
/** The hidden field's name. */
export const formTokenField = "form_token";

const tokenPattern = /^[A-Za-z0-9_-]{43}$/;

/** This browser's form token, set as a cookie on the response when it had none. */
export function formToken(ctx: Context, secure: boolean): string {
  const existing = readCookie(ctx.req.headers, formTokenCookie, secure);
  if (existing && tokenPattern.test(existing)) return existing;
  const token = randomBytes(32).toString("base64url");
  ctx.append("Set-Cookie", httpOnlyCookieHeader(formTokenCookie, token, 60 * 60 * 24 * 30, secure));
  return token;
}

/** Whether the form's token is this browser's (constant time); `secure` as the cookie was set. */
export function formTokenMatches(ctx: Context, fields: Record<string, unknown>, secure: boolean): boolean {
  const cookie = readCookie(ctx.req.headers, formTokenCookie, secure);
  const field = fields[formTokenField];
  if (!cookie || typeof field !== "string" || !tokenPattern.test(cookie) || field.length !== cookie.length) return false;
  return timingSafeEqual(Buffer.from(cookie), Buffer.from(field));
}

/** The hidden input that carries the token. */
export function formTokenInput(token: string): Html {
  return html`<input type="hidden" name="${formTokenField}" value="${token}">`;
}
