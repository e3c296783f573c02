import type { Context } from "koa";
import type { JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { HttpError } from "../errors.ts";
import { mediaType, readLimitedText } from "../body.ts";

/** The request body as a JSON object: 415 for another media type, 413 past `limit` bytes. */
export async function readJsonObject(ctx: Context, limit: number): Promise<{ [key: string]: JsonValue }> {
  if (mediaType(ctx) !== "application/json") {
    throw new HttpError(415, "unsupported_media_type", "send the input as a JSON object with Content-Type: application/json");
  }
  const text = await readLimitedText(ctx, limit, () => new HttpError(413, "payload_too_large", `the body is larger than ${limit} bytes`));
  let value: unknown;
  try {
    value = text.trim() === "" ? {} : JSON.parse(text);
  } catch {
    throw new ConnectError("the body is not valid JSON", Code.InvalidArgument);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    throw new ConnectError("the body must be a JSON object", Code.InvalidArgument);
  }
  return value as { [key: string]: JsonValue };
}
