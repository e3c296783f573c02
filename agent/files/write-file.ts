/**
 * Writing a file for the files panel: atomically, so that a crash, a full disk or a dropped
 * connection mid-write leaves the old file whole (a temporary file beside it, written, synced and
 * renamed over it, then the directory synced), and with `expectedSha256`, never over a version the
 * editor did not see.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { open, rename, rm, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { FileError, asFileError } from "./file-error.ts";
import type { FileSandbox, Location } from "./sandbox.ts";

export interface WriteOptions {
  /** The sha256 (hex) of the version the caller read; if the file is now another (or gone), nothing is written. */
  expectedSha256?: string;
}

/** What was written. */
export interface WriteResult {
  path: string;
  size: number;
  sha256: string;
  modifiedAt: Date;
}

/** Writes all of `content` to an opened file; tests put one that fails midway in its place. */
export type WriteContent = (handle: FileHandle, content: Uint8Array) => Promise<void>;

/** What runs inside a write besides the caller's options: the operations' wiring, not the caller's choice. */
export interface WriteSteps {
  /** Tests only: how the bytes reach the temporary file. */
  writeContent?: WriteContent;
  /**
   * Renames the new file, once written and synced, over an existing regular file: given where that
   * file is and the rename, it keeps the file (FileHistory.keep) and then renames. A failure leaves
   * the old file as it was and nothing written.
   */
  keep?: (replaced: Location, rename: () => Promise<void>) => Promise<void>;
}

/** Writes all of it at the handle's position: successive calls append. */
const writeAll: WriteContent = async (handle, content) => {
  await handle.writeFile(content);
};

/**
 * A file being written whole, atomically: bytes go to a temporary file beside the target (same
 * directory, so the rename stays on one file system) as they come, and `commit` syncs it, checks
 * `expectedSha256` against the file as it is then, and renames it over the target. Until then the
 * target is untouched; `abort` (or a failed commit) deletes the temporary file. A write is one
 * append; an upload is one per piece, however large the file.
 */
export interface AtomicWrite {
  /** Where the file goes, as the sandbox found it when the write began. */
  readonly location: Location;
  /** Bytes written so far. */
  readonly size: number;
  append(bytes: Uint8Array): Promise<void>;
  commit(): Promise<WriteResult>;
  abort(): Promise<void>;
}

/**
 * Begins writing `path` whole (creating it or replacing it). Through a symlink inside the root,
 * the file it leads to is written and the link kept. The new file keeps the old one's permissions.
 */
export async function beginAtomicWrite(sandbox: FileSandbox, path: string, options: WriteOptions = {}, steps: WriteSteps = {}): Promise<AtomicWrite> {
  const writeContent = steps.writeContent ?? writeAll;
  const location = await sandbox.locate(path, "write");
  if (location.path === "" || location.stats?.isDirectory()) throw new FileError("not_a_regular_file", `${JSON.stringify(location.path || ".")} is a directory`);
  const directory = await sandbox.openDirectory(dirname(location.absolute), location.path);
  const temporary = join(directory.anchor, `.outpost-${randomBytes(8).toString("hex")}.tmp`);
  let handle: FileHandle;
  try {
    handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, (location.stats?.mode ?? 0o644) & 0o777);
  } catch (error) {
    await directory.handle.close();
    return asFileError(error, location.path);
  }
  const hash = createHash("sha256");
  let size = 0;
  let finished = false;
  const finish = async (keep: boolean) => {
    finished = true;
    await handle.close().catch(() => {});
    if (!keep) await rm(temporary, { force: true });
    await directory.handle.close().catch(() => {});
  };
  return {
    location,
    get size() {
      return size;
    },
    async append(bytes) {
      if (finished) throw new FileError("not_found", `the write of ${JSON.stringify(location.path)} has ended`);
      try {
        await writeContent(handle, bytes);
      } catch (error) {
        await finish(false);
        return asFileError(error, location.path);
      }
      hash.update(bytes);
      size += bytes.byteLength;
    },
    async commit() {
      if (finished) throw new FileError("not_found", `the write of ${JSON.stringify(location.path)} has ended`);
      try {
        await handle.sync();
        const modifiedAt = (await handle.stat()).mtime;
        // Checked last, just before the rename: the version the caller saw must still be there.
        const current = await sandbox.locate(path, "write");
        if (options.expectedSha256 !== undefined) await checkExpected(sandbox, current, options.expectedSha256);
        const replace = () => rename(temporary, join(directory.anchor, basename(location.absolute)));
        // The version replaced is kept first (history.ts), when the operations keep versions.
        await (current.stats?.isFile() && steps.keep ? steps.keep(current, replace) : replace());
        await directory.handle.sync();
        await finish(true);
        return { path: location.path, size, sha256: hash.digest("hex"), modifiedAt };
      } catch (error) {
        await finish(false);
        return asFileError(error, location.path);
      }
    },
    abort: () => (finished ? Promise.resolve() : finish(false)),
  };
}

/** Writes `content` to `path` whole, atomically (see {@link beginAtomicWrite}). */
export async function writeFileAtomically(
  sandbox: FileSandbox,
  path: string,
  content: Uint8Array,
  options: WriteOptions = {},
  steps: WriteSteps = {},
): Promise<WriteResult> {
  const write = await beginAtomicWrite(sandbox, path, options, steps);
  await write.append(content);
  return write.commit();
}

/** Refuses with `edit_conflict` unless the file at `location` is the version whose sha256 is `expected`. */
async function checkExpected(sandbox: FileSandbox, location: Location, expected: string): Promise<void> {
  const current = location.stats ? await sha256OfFile(sandbox, location) : undefined;
  if (current !== expected.toLowerCase()) {
    const now = current ? `it is now ${current}` : "it no longer exists";
    throw new FileError("edit_conflict", `${JSON.stringify(location.path)} changed since it was read (${now}); nothing was written`);
  }
}

/**
 * Opens the file at `location` to read, refusing what is not a regular file once opened (where a
 * check before the open could have been raced); the caller closes the handle.
 */
export async function openRegularFile(sandbox: FileSandbox, location: Location): Promise<{ handle: FileHandle; stats: Stats }> {
  const handle = await sandbox.open(location, constants.O_RDONLY);
  const stats = await handle.stat().catch(async (error) => (await handle.close(), Promise.reject(error)));
  if (stats.isFile()) return { handle, stats };
  await handle.close();
  throw new FileError("not_a_regular_file", `${JSON.stringify(location.path)} is not a regular file`);
}

/** The sha256 (hex) of the regular file at `location`, read in chunks through the sandbox. */
export async function sha256OfFile(sandbox: FileSandbox, location: Location): Promise<string> {
  const { handle } = await openRegularFile(sandbox, location);
  try {
    const hash = createHash("sha256");
    const buffer = Buffer.alloc(64 * 1024);
    for (let read = 1; read > 0;) {
      ({ bytesRead: read } = await handle.read(buffer, 0, buffer.length, null));
      hash.update(buffer.subarray(0, read));
    }
    return hash.digest("hex");
  } finally {
    await handle.close();
  }
}

export const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
