/**
 * The upload form as a browser without script sends it: a multipart body whose fields come first
 * (the form token, the folder) and then one file, streamed as it arrives into core's servers/
 * uploadFile (a header naming the file, then its bytes in pieces of at most 1 MiB), so memory stays
 * flat whatever the file's size. The form token is checked before a byte of the file goes
 * anywhere. With script, files.js sends files to the HTTP API's PUT servers/uploadFile instead,
 * with a progress bar, so this route is the fallback of the same form.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import type { Readable } from "node:stream";
import busboy from "busboy";
import type { UploadFileResponse } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { uploadMessages } from "../upload-pieces.ts";
import { mediaType } from "../body.ts";
import { formTokenField, formTokenMatches } from "../form-token.ts";
import { done, loadViewer, orgOf, PageError, type DashboardDeps, type Viewer } from "./context.ts";
import { childPath, fileProblemOrThrow, folderHref, type FileProblem } from "./files-context.ts";
import { filesPage } from "./files.ts";

/** A file cut short at the size limit: never written as a shorter file. */
class UploadTooLarge extends Error {}

/** The part's bytes as they arrive; on return (core refused) the rest is drained, so that the form's parsing ends. */
async function* partBytes(file: Readable & { truncated?: boolean }): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of file.iterator({ destroyOnReturn: false })) yield chunk as Uint8Array;
    if (file.truncated) throw new UploadTooLarge("the file is larger than this Outpost takes");
  } finally {
    file.resume();
  }
}

/** A browser sends the name alone; some older ones a whole path, of which the last part counts. */
function fileName(sent: string): string {
  return sent.slice(Math.max(sent.lastIndexOf("/"), sent.lastIndexOf("\\")) + 1).trim();
}

/** How the file part ended: refused before it was sent, or core's answer. */
type Outcome = { kind: "forged" } | { kind: "signed-out" } | { kind: "answered"; v: Viewer; folder: string; response?: UploadFileResponse; problem?: FileProblem };

const noFile: FileProblem = { status: 400, reason: "invalid_argument", message: "Choose a file to upload." };
/** The file was larger than the deployment takes (FILE_TRANSFER_MAX_MB). */
const tooLarge = (maxBytes: number): FileProblem => ({
  status: 413,
  reason: "too_large",
  message: `The file is larger than ${Math.floor(maxBytes / (1024 * 1024))} MiB, the most an upload takes.`,
});

/** The file part: the fields before it decide whether it goes to core at all. */
async function sendPart(ctx: Context, deps: DashboardDeps, fields: Map<string, string>, file: Readable & { truncated?: boolean }, sent: string): Promise<Outcome> {
  if (!formTokenMatches(ctx, { [formTokenField]: fields.get(formTokenField) }, deps.secureCookies)) {
    file.resume();
    return { kind: "forged" };
  }
  const v = await loadViewer(ctx, deps);
  if (!v) {
    file.resume();
    return { kind: "signed-out" };
  }
  ctx.state.dashboardViewer = v;
  const folder = fields.get("path") ?? "";
  const name = fileName(sent);
  if (!name) {
    file.resume();
    return { kind: "answered", v, folder, problem: noFile };
  }
  try {
    const response = await v.core.servers.uploadFile(uploadMessages({ serverId: ctx.params.id, path: childPath(folder, name) }, partBytes(file)));
    return { kind: "answered", v, folder, response };
  } catch (error) {
    file.resume();
    return { kind: "answered", v, folder, problem: file.truncated || error instanceof UploadTooLarge ? tooLarge(deps.fileTransferMaxBytes) : fileProblemOrThrow(error) };
  }
}

/** Reads the form to its end, sending its file on the way: its fields, and the file part's outcome if it had one. */
function readUpload(ctx: Context, deps: DashboardDeps): Promise<{ fields: Map<string, string>; outcome?: Outcome }> {
  let parser: ReturnType<typeof busboy>;
  try {
    parser = busboy({ headers: ctx.req.headers, limits: { files: 1, fields: 4, parts: 6, fieldSize: 8 * 1024, fileSize: deps.fileTransferMaxBytes } });
  } catch {
    throw new PageError(400, "This upload could not be read: it is not a multipart form.");
  }
  const fields = new Map<string, string>();
  let outcome: Promise<Outcome> | undefined;
  parser.on("field", (name, value) => fields.set(name, value));
  parser.on("file", (_name, file, info) => {
    outcome = sendPart(ctx, deps, new Map(fields), file, info.filename ?? "");
    // Awaited once the form is read. A failure (core out of reach) drains the rest of the file, so
    // that the reading ends, and is handled now so that it is no unhandled rejection meanwhile.
    outcome.catch(() => file.resume());
  });
  const parsed = new Promise<void>((resolve, reject) => {
    parser.on("close", resolve);
    parser.on("error", reject);
  });
  ctx.req.pipe(parser);
  // A browser that goes away mid-body ends the parsing (and with it the stream to core) as an error.
  ctx.req.once("close", () => {
    if (!ctx.req.complete) parser.destroy(new Error("the browser went away"));
  });
  return parsed.then(
    async () => ({ fields, outcome: await outcome }),
    async (error: unknown) => {
      // Cut short (the browser went away, a malformed body): whatever was sent to core is not written.
      await outcome?.catch(() => undefined);
      throw new PageError(400, `The upload was cut short (${(error as Error).message}). Try again.`);
    },
  );
}

const forged = () => new PageError(403, "This form has expired or did not come from Outpost. Go back, reload the page and try again.");

async function uploadForm(ctx: Context, deps: DashboardDeps): Promise<void> {
  if (mediaType(ctx) !== "multipart/form-data") throw new PageError(415, "This form must be sent as multipart/form-data.");
  const { fields, outcome } = await readUpload(ctx, deps);
  if (!outcome) {
    if (!formTokenMatches(ctx, { [formTokenField]: fields.get(formTokenField) }, deps.secureCookies)) throw forged();
    throw new PageError(400, "Choose a file to upload.");
  }
  if (outcome.kind === "forged") throw forged();
  if (outcome.kind === "signed-out") return;
  const { v, folder, problem } = outcome;
  if (problem) return filesPage(ctx, v, folder, { upload: problem }, problem.status);
  done(ctx, folderHref(orgOf(v, ctx.params.slug), ctx.params.id, folder), "file-uploaded");
}

export function uploadRoutes(router: Router, deps: DashboardDeps): void {
  router.post("/app/o/:slug/servers/:id/files/upload", (ctx) => uploadForm(ctx, deps));
}
