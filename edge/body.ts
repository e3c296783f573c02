import type { Context } from "koa";
import { Code, ConnectError } from "@connectrpc/connect";

/** Reads a request body of at most `limit` bytes as JSON or as a form, into plain strings. */
export async function readFields(ctx: Context, limit = 16 * 1024): Promise<Record<string, unknown>> {
  const type = (ctx.get("content-type") || "").split(";")[0].trim().toLowerCase();
  if (type !== "application/json" && type !== "application/x-www-form-urlencoded") {
    throw new ConnectError("send application/json or application/x-www-form-urlencoded", Code.InvalidArgument);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new ConnectError(`the body is larger than ${limit} bytes`, Code.InvalidArgument);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
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
