/**
 * servers/downloadFile and servers/uploadFile: files of any size (up to FILE_TRANSFER_MAX_MB)
 * through the agent a piece at a time, with the same checks as every files procedure
 * (file-methods.ts), checked once per transfer. Memory stays bounded at every hop: the download
 * asks the agent for the next piece only once the caller took the last (the stream's
 * backpressure), and the upload sends a piece to the agent and waits for it to be written before
 * it reads the next from the caller.
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { HandlerContext } from "@connectrpc/connect";
import {
  DownloadFileResponseSchema,
  UploadFileResponseSchema,
  type DownloadFileRequest,
  type DownloadFileResponse,
  type UploadFileRequest,
  type UploadFileResponse,
  type UploadHeader,
} from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { createPieceCollector } from "../../contract/piece-collector.ts";
import { fail } from "../errors.ts";
import { filePath, openFileSession, recordChange, resultOf, type FileDeps } from "./file-methods.ts";

/** The piece a download asks for, and the most an upload sends at once. */
export const pieceBytes = 1024 * 1024;

/** The file's bytes: a header first (its size and time), then a piece a message. */
export async function* downloadFile(deps: FileDeps, req: DownloadFileRequest, ctx: HandlerContext): AsyncGenerator<DownloadFileResponse> {
  const path = filePath(req.path);
  const session = await openFileSession(deps, req, ctx, { access: "read", paths: [path] });
  const read = async (offset: bigint) => resultOf({ result: await session.send({ case: "readRange", value: { path, offset, length: pieceBytes } }) }, "range");
  let piece = await read(0n);
  if (piece.size > BigInt(deps.config.fileTransferMaxBytes)) {
    throw fail("too_large", `${JSON.stringify(path)} is larger than this deployment sends (${deps.config.fileTransferMaxBytes} bytes)`);
  }
  const { size, modifiedAt } = piece;
  yield create(DownloadFileResponseSchema, { part: { case: "header", value: { path, size, modifiedAt } } });
  const collect = createPieceCollector();
  let offset = 0n;
  for (;;) {
    if (piece.data.length) yield create(DownloadFileResponseSchema, { part: { case: "data", value: piece.data } });
    collect(piece.data.length);
    offset += BigInt(piece.data.length);
    if (offset >= size) return;
    if (piece.data.length === 0) throw fail("failed_precondition", `${JSON.stringify(path)} ended early (it shrank while being read)`);
    piece = await read(offset);
    const changed = piece.size !== size || (modifiedAt && piece.modifiedAt && timestampDate(piece.modifiedAt).getTime() !== timestampDate(modifiedAt).getTime());
    if (changed) throw fail("edit_conflict", `${JSON.stringify(path)} changed while it was being downloaded; download it again`);
  }
}

/** The header, which must come first and only first. */
async function headerOf(requests: AsyncIterator<UploadFileRequest>): Promise<UploadHeader> {
  const first = await requests.next();
  if (first.done || first.value.part.case !== "header") throw fail("invalid_argument", "an upload begins with its header (server, path), then its bytes");
  return first.value.part.value;
}

/** Writes the file from its pieces, atomically once whole; an upload that fails or is abandoned leaves the old file as it was. */
export async function uploadFile(deps: FileDeps, requests: AsyncIterable<UploadFileRequest>, ctx: HandlerContext): Promise<UploadFileResponse> {
  const incoming = requests[Symbol.asyncIterator]();
  const header = await headerOf(incoming);
  const path = filePath(header.path);
  const session = await openFileSession(deps, header, ctx, { access: "write", paths: [path] });
  const uploadId = randomUUID();
  const limit = deps.config.fileTransferMaxBytes;
  let offset = 0n;
  let held: Uint8Array | undefined;
  const collect = createPieceCollector();
  const send = (data: Uint8Array, last: boolean) =>
    session.send({ case: "uploadChunk", value: { uploadId, path, offset, data, last, expectedSha256: last ? header.expectedSha256 : undefined } });
  try {
    // One piece held back, so that the last one goes with `last`.
    for (let next = await incoming.next(); !next.done; next = await incoming.next()) {
      if (next.value.part.case !== "data") throw fail("invalid_argument", "an upload has one header, first; the rest is its bytes");
      const data = next.value.part.value;
      if (offset + BigInt((held?.length ?? 0) + data.length) > BigInt(limit)) throw fail("too_large", `the upload is larger than this deployment takes (${limit} bytes)`);
      if (held) {
        await send(held, false);
        offset += BigInt(held.length);
        collect(held.length);
      }
      held = data;
    }
    const written = resultOf({ result: await send(held ?? new Uint8Array(), true) }, "written");
    await recordChange(deps, session, "server.file_written", {
      path: written.path,
      size: String(written.size),
      sha256: written.sha256,
      via: "upload",
      ...(header.expectedSha256 && { previousSha256: header.expectedSha256 }),
    });
    return create(UploadFileResponseSchema, { path: written.path, size: written.size, sha256: written.sha256, modifiedAt: written.modifiedAt });
  } catch (error) {
    // The agent drops its temporary file (it would after a minute without pieces in any case).
    if (offset > 0n || held) await session.send({ case: "abortUpload", value: { uploadId } }).catch(() => {});
    throw error;
  }
}
