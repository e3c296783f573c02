/**
 * The HTTP API's two raw-bytes routes, beside the generated ones (streams are not part of those):
 * - `GET /api/http/servers/downloadFile?serverId=…&path=…` answers the file's bytes
 *   (application/octet-stream, Content-Disposition), streamed from core's DownloadFile;
 * - `PUT /api/http/servers/uploadFile?serverId=…&path=…[&expectedSha256=…]` takes the raw body
 *   and streams it to core's UploadFile in pieces of 1 MiB (upload-pieces.ts), answering the file
 *   as written (JSON).
 * Both hold at most a piece at a time whatever the file's size: the response is written as core
 * yields, and the body is read only as core asks for more. Authentication, errors and their
 * statuses are the HTTP API's (router.ts); the OpenAPI document describes both (openapi/).
 */
import { Readable } from "node:stream";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Context, Middleware } from "koa";
import { ServersService, UploadFileResponseSchema, UploadHeaderSchema } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { HttpError } from "../errors.ts";
import { untilClientGone, type CoreCalls } from "../core-calls.ts";
import { uploadMessages } from "../upload-pieces.ts";
import { messageFromApiJson, messageToApiJson } from "./json.ts";
import { queryToJson } from "./query.ts";
import { answerApiError, httpApiPrefix, refuseCredentialsInUrl, type HttpApiOptions } from "./router.ts";

export const downloadPath = `${httpApiPrefix}servers/downloadFile`;
export const uploadPath = `${httpApiPrefix}servers/uploadFile`;

/** A route's query as its request message: the same names and checks as a generated GET's. */
function queryInput<D extends DescMessage>(ctx: Context, desc: D): MessageShape<D> {
  const params = new URLSearchParams(ctx.querystring);
  refuseCredentialsInUrl(params);
  if (ctx.get("authorization")) {
    throw new ConnectError("OAuth access tokens do not authenticate the HTTP API; send an API key in the X-API-Key header", Code.Unauthenticated);
  }
  return messageFromApiJson(desc, queryToJson(desc, params)) as MessageShape<D>;
}

/** `attachment` with the file's name: an ASCII fallback, and the name itself (RFC 6266, RFC 8187). */
export function contentDisposition(path: string): string {
  const name = path.split("/").pop() || "download";
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** The bytes as a Buffer over the same memory (Buffer.from of a Uint8Array would copy them). */
const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

async function download(ctx: Context, calls: CoreCalls): Promise<void> {
  const input = queryInput(ctx, ServersService.method.downloadFile.input);
  const gone = untilClientGone(ctx);
  const stream = calls.client(ctx, ServersService).downloadFile(input, { signal: gone })[Symbol.asyncIterator]();
  // The first message is the header: until it came, a refusal is still a JSON error.
  const first = await stream.next();
  if (first.done || first.value.part.case !== "header") throw new ConnectError("the download ended before it began", Code.Internal);
  const header = first.value.part.value;
  ctx.status = 200;
  ctx.type = "application/octet-stream";
  ctx.length = Number(header.size);
  ctx.set("Content-Disposition", contentDisposition(header.path));
  ctx.set("X-Content-Type-Options", "nosniff");
  const body = Readable.from(
    (async function* () {
      for (let next = await stream.next(); !next.done; next = await stream.next()) {
        if (next.value.part.case === "data") yield asBuffer(next.value.part.value);
      }
    })(),
    { highWaterMark: 1 },
  );
  // A failure midway ends the connection short of Content-Length: the client sees it did not get it all.
  body.on("error", (error: unknown) => ctx.state.log?.warn({ err: error }, "a download ended early"));
  ctx.body = body;
}

async function upload(ctx: Context, calls: CoreCalls): Promise<void> {
  const header = queryInput(ctx, UploadHeaderSchema);
  const gone = untilClientGone(ctx);
  const response = await calls.client(ctx, ServersService).uploadFile(uploadMessages(header, ctx.req), { signal: gone });
  ctx.status = 200;
  ctx.body = messageToApiJson(UploadFileResponseSchema, response);
}

/** Serves the two routes; anything else goes on to the generated HTTP API. */
export function createFileTransfers(options: Pick<HttpApiOptions, "calls" | "errorHeaders">): Middleware {
  return async (ctx, next) => {
    const route = ctx.path === downloadPath ? { method: "GET", serve: download } : ctx.path === uploadPath ? { method: "PUT", serve: upload } : undefined;
    if (!route) return next();
    ctx.set("Cache-Control", "no-store");
    ctx.state.route = ctx.path;
    try {
      if (ctx.method !== route.method) {
        throw new HttpError(405, "method_not_allowed", `${ctx.path.slice(httpApiPrefix.length)} takes ${route.method}`, { Allow: route.method });
      }
      await route.serve(ctx, options.calls);
    } catch (error) {
      if (ctx.res.headersSent) return;
      answerApiError(ctx, error, options.errorHeaders);
    }
  };
}
