import type { Context } from "koa";
import { Code, ConnectError } from "@connectrpc/connect";
import { HttpError } from "./errors.ts";

/** The request's media type, lower-case, without parameters. */
export function mediaType(ctx: Context): string {
  return (ctx.get("content-type") || "").split(";")[0].trim().toLowerCase();
}

/**
 * The body as UTF-8, refused with `tooLarge()` once it passes `limit` bytes (by its declared
 * length, or while it streams in). Each surface says "too large" in its own error shape.
 */
export async function readLimitedText(ctx: Context, limit: number, tooLarge: () => Error): Promise<string> {
  if (Number(ctx.get("content-length") || 0) > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Reads a request body of at most `limit` bytes as JSON or as a form, into plain strings; a larger
 * one is 413 `payload_too_large`, as the listeners answer a body declared over their own limit.
 */
export async function readFields(ctx: Context, limit = 16 * 1024): Promise<Record<string, unknown>> {
  const type = mediaType(ctx);
  if (type !== "application/json" && type !== "application/x-www-form-urlencoded") {
    throw new ConnectError("send application/json or application/x-www-form-urlencoded", Code.InvalidArgument);
  }
  const text = await readLimitedText(ctx, limit, () => new HttpError(413, "payload_too_large", `the body is larger than ${limit} bytes`));
  if (type === "application/x-www-form-urlencoded") return Object.fromEntries(new URLSearchParams(text));
  try {
    const value: unknown = JSON.parse(text);
    if (!value || typeof value !== "object" || Array.isArray(value)) throw new Error("not an object");
    return value as Record<string, unknown>;
  } catch {
    throw new ConnectError("the body is not a JSON object", Code.InvalidArgument);
  }
}

export function stringField(fields: Record<string, unknown>, name: string): string {
  const value = fields[name];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") throw new ConnectError(`${name}: must be a string`, Code.InvalidArgument);
  return value;
}
