import type { Context } from "koa";
import { InvalidRequest } from "./oauth-errors.ts";
import { mediaType, readLimitedText } from "../body.ts";

/** The bodies the issuer reads are small: a few form fields or a solved challenge. */
export const bodyLimit = 16 * 1024;

/** The raw body as UTF-8, refused past `limit` bytes (413). */
export function readText(ctx: Context, limit = bodyLimit): Promise<string> {
  return readLimitedText(ctx, limit, () => new InvalidRequest(`the body is larger than ${limit} bytes`, 413));
}

/**
 * Parameters given once each (RFC 6749 §3.1: "MUST NOT be included more than once"). A repeated
 * one is refused, naming it.
 */
export function singleParams(params: URLSearchParams): Map<string, string> {
  const result = new Map<string, string>();
  for (const [name, value] of params) {
    if (result.has(name)) throw new InvalidRequest(`the parameter ${name} is repeated`);
    result.set(name, value);
  }
  return result;
}

/** An application/x-www-form-urlencoded body (415 for anything else), each parameter once. */
export async function readForm(ctx: Context): Promise<Map<string, string>> {
  if (mediaType(ctx) !== "application/x-www-form-urlencoded") {
    throw new InvalidRequest("the body must be application/x-www-form-urlencoded", 415);
  }
  return singleParams(new URLSearchParams(await readText(ctx)));
}
