/**
 * The first check of every request on both listeners: a body declared larger than its route
 * takes is refused (413) before anything reads it, and GET and HEAD (pages, queries, the hosted
 * page's server-sent events) take no body at all. Each reader still counts the bytes as they
 * arrive (edge/body.ts, Connect's readMaxBytes) for bodies sent without a declared length.
 */
import type { Context, Middleware } from "koa";
import { fileWriteMessageMaxBytes } from "../contract/request-limits.ts";

/** The largest body any edge reader takes: the HTTP API's JSON and the dashboard's forms. */
export const maxBodyBytes = 64 * 1024;

/**
 * A note's body: /api/http/knowledge/* and the dashboard's note forms, where a note's 100,000
 * characters may take 12 bytes each once percent-encoded in a form (a 4-byte UTF-8 character).
 */
export const noteBodyMaxBytes = 1280 * 1024;

const notePaths = /^(\/api\/http\/knowledge\/|\/app\/o\/[^/]+\/knowledge(\/|$))/;

/** servers/writeFile's JSON: a file of up to 5 MiB, as the contract allows it (contract/request-limits.ts). */
const fileWritePath = "/api/http/servers/writeFile";

/**
 * The dashboard's editor form: a file of up to 5 MiB, each byte percent-encoded (3 bytes) at worst
 * and each line break sent as CRLF (a textarea's), beside its path and hash.
 */
export const fileSaveFormMaxBytes = 5 * 1024 * 1024 * 3 * 2 + maxBodyBytes;

const fileSavePath = /^\/app\/o\/[^/]+\/servers\/[^/]+\/files\/save$/;

/** FILE_TRANSFER_MAX_MB's default: the largest file an upload takes, by the HTTP API or the dashboard's form. */
export const defaultFileTransferMaxBytes = 1024 * 1024 * 1024;

/** What the multipart form around an uploaded file may add to it (its fields, boundaries and headers). */
const uploadFormSlackBytes = 1024 * 1024;

const uploadPaths = /^(\/api\/http\/servers\/uploadFile|\/app\/o\/[^/]+\/servers\/[^/]+\/files\/upload)$/;

/**
 * The largest body an upload route takes (the HTTP API's PUT servers/uploadFile, the dashboard's
 * upload form), or undefined for any other path: a file of up to `fileMaxBytes`, and the form's own.
 */
export function uploadBodyMaxBytes(path: string, fileMaxBytes: number): number | undefined {
  return uploadPaths.test(path) ? fileMaxBytes + uploadFormSlackBytes : undefined;
}

/** The largest body the edge's own readers take at `path` (forms and the HTTP API's JSON). */
export function edgeBodyMaxBytes(path: string): number {
  if (path === fileWritePath) return fileWriteMessageMaxBytes;
  if (fileSavePath.test(path)) return fileSaveFormMaxBytes;
  return notePaths.test(path) ? noteBodyMaxBytes : maxBodyBytes;
}

const bodiless = new Set(["GET", "HEAD"]);

/** Why the request's declared body is refused, or undefined when it is within `limit`. */
function refusal(ctx: Context, limit: number): string | undefined {
  const headers = ctx.req.headers;
  const declared = headers["content-length"] === undefined ? 0 : Number(headers["content-length"]);
  // A chunked HTTP/1.1 body has no declared length: only a route that takes none refuses it here.
  const chunked = headers["transfer-encoding"] !== undefined;
  if (bodiless.has(ctx.method)) return declared > 0 || chunked || Number.isNaN(declared) ? `${ctx.method} ${ctx.path} takes no body` : undefined;
  return declared <= limit ? undefined : `the body is larger than ${limit} bytes`;
}

/**
 * Refuses an oversized declared body with `answer` (which writes a 413 in the surface's own
 * shape). On HTTP/1.1 the connection then closes, so the body is never read; on HTTP/2 the stream
 * ends with the answer.
 */
export function refuseOversizedBodies(limitOf: (ctx: Context) => number, answer: (ctx: Context, message: string) => void): Middleware {
  return async (ctx, next) => {
    const message = refusal(ctx, limitOf(ctx));
    if (message === undefined) return next();
    if (ctx.req.httpVersionMajor === 1) ctx.set("Connection", "close");
    ctx.set("Cache-Control", "no-store");
    ctx.status = 413;
    answer(ctx, message);
  };
}
