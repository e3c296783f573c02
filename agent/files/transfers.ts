/**
 * Files of any size, a piece at a time, for downloads and uploads: Outpost asks for one piece
 * after another, so neither side ever holds more than a piece (1 MiB) of a 1 GiB file.
 * - A download reads `length` bytes from `offset` of a regular file, with the file's size and time,
 *   which Outpost compares from piece to piece (a file that changes mid-download stops it).
 * - An upload writes its pieces, in order, to a temporary file beside the target (write-file.ts's
 *   atomic write) and renames it over the target with the last; an upload left without pieces for
 *   a while is dropped, its temporary file deleted, so a caller that went away leaves nothing.
 */
import { createPieceCollector } from "../../contract/piece-collector.ts";
import { FileError } from "./file-error.ts";
import type { FileSandbox } from "./sandbox.ts";
import { beginAtomicWrite, openRegularFile, type AtomicWrite, type WriteResult, type WriteSteps } from "./write-file.ts";

/** The largest piece a download reads, or an upload takes, at once. */
export const maxPieceBytes = 1024 * 1024;

/** A piece of a file, and the file's size and time as it was read. */
export interface Range {
  data: Buffer;
  offset: number;
  size: number;
  modifiedAt: Date;
}

/** Reads up to `length` bytes (at most {@link maxPieceBytes}) of the regular file `path` from `offset`. */
export async function readRange(sandbox: FileSandbox, path: string, offset: number, length: number): Promise<Range> {
  const location = await sandbox.locate(path, "read");
  if (!location.stats) throw new FileError("not_found", `${JSON.stringify(location.path)} does not exist`);
  const { handle, stats } = await openRegularFile(sandbox, location);
  try {
    const data = Buffer.alloc(Math.max(0, Math.min(length, maxPieceBytes, stats.size - offset)));
    let read = 0;
    while (read < data.length) {
      const { bytesRead } = await handle.read(data, read, data.length - read, offset + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return { data: data.subarray(0, read), offset, size: stats.size, modifiedAt: stats.mtime };
  } finally {
    await handle.close();
  }
}

/** One piece of an upload, as the stream carries it. */
export interface UploadPiece {
  uploadId: string;
  path: string;
  offset: number;
  data: Uint8Array;
  last: boolean;
  expectedSha256?: string;
}

export interface UploadOptions {
  /** An upload with no piece for this long is dropped (default one minute). */
  idleMs?: number;
  /** Uploads under way at once (default 8); past it, a new one is refused. */
  maxUploads?: number;
  /** The largest file an upload may write (default 1 GiB). */
  maxBytes?: number;
}

/** The uploads under way on one agent. */
export interface Uploads {
  /** Takes one piece; resolves with the file as written after the last, undefined before. */
  piece(piece: UploadPiece): Promise<WriteResult | undefined>;
  /** Drops an upload (nothing happens for an unknown one). */
  abort(uploadId: string): Promise<void>;
  /** Drops every upload (the agent stops). */
  close(): Promise<void>;
}

interface Under {
  path: string;
  write: AtomicWrite;
  timer: NodeJS.Timeout;
  /** The piece being written: pieces are taken one at a time. */
  busy: boolean;
}

export function createUploads(sandbox: FileSandbox, options: UploadOptions = {}, steps: Pick<WriteSteps, "keep"> = {}): Uploads {
  const { idleMs = 60_000, maxUploads = 8, maxBytes = 1024 * 1024 * 1024 } = options;
  const under = new Map<string, Under>();
  const collect = createPieceCollector();

  const drop = async (uploadId: string) => {
    const upload = under.get(uploadId);
    if (!upload) return;
    under.delete(uploadId);
    clearTimeout(upload.timer);
    await upload.write.abort();
  };

  async function begin(piece: UploadPiece): Promise<Under> {
    if (piece.offset !== 0)
      throw new FileError("not_found", `no upload ${JSON.stringify(piece.uploadId)} is under way (it was dropped after a minute without pieces); start again`);
    if (under.size >= maxUploads) throw new FileError("busy", `${maxUploads} uploads are under way on this server; try again when one ends`);
    const write = await beginAtomicWrite(sandbox, piece.path, { expectedSha256: piece.expectedSha256 }, steps);
    // Unref'd: an upload left behind does not keep a stopping agent alive.
    const upload: Under = { path: piece.path, write, busy: false, timer: setTimeout(() => void drop(piece.uploadId), idleMs).unref() };
    under.set(piece.uploadId, upload);
    return upload;
  }

  return {
    async piece(piece) {
      const upload = under.get(piece.uploadId) ?? (await begin(piece));
      if (upload.busy || upload.path !== piece.path || piece.offset !== upload.write.size) {
        await drop(piece.uploadId);
        throw new FileError("invalid_cursor", `a piece of ${JSON.stringify(piece.path)} came out of order (at ${piece.offset}); the upload was dropped, start again`);
      }
      if (upload.write.size + piece.data.byteLength > maxBytes) {
        await drop(piece.uploadId);
        throw new FileError("too_large", `the upload is larger than this server takes (${maxBytes} bytes); nothing was written`);
      }
      upload.busy = true;
      upload.timer.refresh();
      collect(piece.data.byteLength);
      try {
        await upload.write.append(piece.data);
        if (!piece.last) return undefined;
        under.delete(piece.uploadId);
        clearTimeout(upload.timer);
        return await upload.write.commit();
      } catch (error) {
        await drop(piece.uploadId);
        throw error;
      } finally {
        upload.busy = false;
      }
    },
    abort: drop,
    async close() {
      await Promise.all([...under.keys()].map(drop));
    },
  };
}
