/**
 * The files panel's operations on one server's directory, each through the sandbox: list, read,
 * write, create a directory, move, delete, a file's history and restoring from it, search,
 * downloads and uploads a piece at a time (transfers.ts) and the plugins panel's (plugins.ts). What
 * reaches the disk is checked there; what comes back names the client's paths only. The stream's
 * requests (requests.ts) call these and map a FileError's reason to their answer. Whatever replaces
 * or deletes a file keeps it in the history first (history.ts).
 */
import { lstat, mkdir, readdir, rename, rm, rmdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { createPieceCollector } from "../../contract/piece-collector.ts";
import { FileError, asFileError, errnoCode } from "./file-error.ts";
import { createFileHistory, type FileHistory, type KeptVersion } from "./history.ts";
import { listDirectory, type DirectoryPage, type ListOptions } from "./list-directory.ts";
import { listPlugins, setPluginEnabled, type PluginInfo } from "./plugins.ts";
import type { FileSandbox, Location } from "./sandbox.ts";
import { createUploads, readRange, type Range, type UploadOptions, type Uploads } from "./transfers.ts";
import { searchFiles, type SearchOptions, type SearchResult } from "./search.ts";
import { openRegularFile, sha256Hex, writeFileAtomically, type WriteContent, type WriteOptions, type WriteResult } from "./write-file.ts";

/** What `servers/readFile` answers up to: larger files are for the download (5 MiB). */
export const defaultReadLimit = 5 * 1024 * 1024;

/** A file read whole. */
export interface ReadResult {
  path: string;
  content: Buffer;
  size: number;
  sha256: string;
  modifiedAt: Date;
}

export interface FileOperationsOptions {
  /** The largest file `read` returns, in bytes (default 5 MiB). */
  readLimit?: number;
  /** Entries per listing page (default 1,000). */
  pageSize?: number;
  /** Tests only: how a write's bytes reach the temporary file. */
  writeContent?: WriteContent;
  /** Bounds of uploads (transfers.ts). */
  uploads?: UploadOptions;
  /**
   * The directory's history, shared by every FileOperations over it (openServedFiles makes one for
   * the plain and the confined operations); default: one of these operations' own, with its default bounds.
   */
  history?: FileHistory;
  /** A search's bounds (search.ts has the defaults). */
  search?: Omit<SearchOptions, "maxResults" | "caseSensitive">;
}

/** The operations on the sandbox's directory (createFileOperations). */
export interface FileOperations {
  list(path: string, options?: ListOptions): Promise<DirectoryPage>;
  read(path: string): Promise<ReadResult>;
  write(path: string, content: Uint8Array, options?: WriteOptions): Promise<WriteResult>;
  /** Creates one directory; its parent must exist. */
  createDirectory(path: string): Promise<void>;
  /**
   * Moves or renames; refuses a `to` that exists unless `overwrite`, and a folder with
   * `filesOnly` (the caller's access reaches the two paths but not all a folder could hold).
   */
  move(from: string, to: string, options?: { overwrite?: boolean; filesOnly?: boolean }): Promise<void>;
  /** Deletes a file or symlink (not its target), or a directory: an empty one, or any with `recursive`. */
  remove(path: string, options?: { recursive?: boolean }): Promise<void>;
  /** A piece of a file of any size, for a download (transfers.ts). */
  readRange(path: string, offset: number, length: number): Promise<Range>;
  /** The uploads under way through these operations (transfers.ts). */
  readonly uploads: Uploads;
  /** The jars of plugins/ and mods/ as they describe themselves, sorted by path. */
  listPlugins(): Promise<PluginInfo[]>;
  /** Renames a jar `X.jar` ↔ `X.jar.disabled`; answers it as it is now. */
  setPluginEnabled(path: string, enabled: boolean): Promise<PluginInfo>;
  /** The versions of `path` kept as Outpost replaced or deleted it, newest first. */
  history(path: string): Promise<KeptVersion[]>;
  /** Writes a kept version back over `path`, keeping the current file as a version in turn. */
  restore(path: string, versionId: string, options?: WriteOptions): Promise<WriteResult>;
  /** Lines holding `query` in the text files under the folder `path`, within the search's bounds. */
  search(path: string, query: string, options?: SearchOptions): Promise<SearchResult>;
}

/** The file operations over `sandbox`, each refusing with a FileError. */
export function createFileOperations(sandbox: FileSandbox, options: FileOperationsOptions = {}): FileOperations {
  const readLimit = options.readLimit ?? defaultReadLimit;
  const history = options.history ?? createFileHistory(sandbox.root);
  const keep: Keep = (location, change) => history.keep(sandbox, location, change);
  const collect = createPieceCollector();
  return {
    list: (path, listOptions) => listDirectory(sandbox, path, { pageSize: options.pageSize, ...listOptions }),
    read: (path) => readFile(sandbox, path, readLimit),
    write: (path, content, writeOptions) => writeFileAtomically(sandbox, path, content, writeOptions, { writeContent: options.writeContent, keep }),
    createDirectory: (path) => createDirectory(sandbox, path),
    move: (from, to, moveOptions) => move(sandbox, from, to, moveOptions?.overwrite ?? false, moveOptions?.filesOnly ?? false, keep),
    remove: (path, removeOptions) => remove(sandbox, path, removeOptions?.recursive ?? false, keep),
    history: (path) => history.list(sandbox, path),
    restore: (path, versionId, restoreOptions) => history.restore(sandbox, path, versionId, restoreOptions),
    search: (path, query, searchOptions) => searchFiles(sandbox, path, query, { ...options.search, ...searchOptions }),
    readRange: async (path, offset, length) => {
      collect(length);
      return readRange(sandbox, path, offset, length);
    },
    uploads: createUploads(sandbox, options.uploads, { keep }),
    listPlugins: () => listPlugins(sandbox),
    setPluginEnabled: (path, enabled) => setPluginEnabled(sandbox, path, enabled),
  };
}

/** Keeps the file at a location in the history, then runs the change that replaces or deletes it (FileHistory.keep). */
type Keep = (location: Location, change: () => Promise<void>) => Promise<void>;

async function readFile(sandbox: FileSandbox, path: string, limit: number): Promise<ReadResult> {
  const location = existing(await sandbox.locate(path, "read"));
  if (!location.stats?.isFile()) throw new FileError("not_a_regular_file", `${JSON.stringify(location.path || ".")} is a directory`);
  const { handle, stats } = await openRegularFile(sandbox, location);
  try {
    const tooLarge = () => new FileError("too_large", `${JSON.stringify(location.path)} is larger than ${limit} bytes; download it instead`);
    if (stats.size > limit) throw tooLarge();
    // One byte more than the limit: a file that grew since fstat is refused, not cut.
    const buffer = Buffer.alloc(Math.min(stats.size, limit) + 1);
    let length = 0;
    for (let read = 1; read > 0 && length < buffer.length; length += read) {
      ({ bytesRead: read } = await handle.read(buffer, length, buffer.length - length, null));
    }
    if (length > limit) throw tooLarge();
    const content = buffer.subarray(0, length);
    return { path: location.path, content, size: length, sha256: sha256Hex(content), modifiedAt: stats.mtime };
  } finally {
    await handle.close();
  }
}

async function createDirectory(sandbox: FileSandbox, path: string): Promise<void> {
  const location = await sandbox.locate(path, "write");
  if (location.stats || location.link) throw new FileError("already_exists", `${JSON.stringify(location.path || ".")} already exists`);
  const parent = await sandbox.openDirectory(location.parent, location.path);
  try {
    await mkdir(join(parent.anchor, location.name)).catch((error) => asFileError(error, location.path));
  } finally {
    await parent.handle.close();
  }
}

async function move(sandbox: FileSandbox, from: string, to: string, overwrite: boolean, filesOnly: boolean, keep: Keep): Promise<void> {
  const source = existing(await sandbox.locate(from, "write"));
  if (filesOnly && !source.link && source.stats?.isDirectory()) {
    throw new FileError("not_a_regular_file", `${JSON.stringify(source.path)} is a folder; moving it needs access to everything it holds`);
  }
  const target = await sandbox.locate(to, "write");
  if (source.path === "" || target.path === "") throw new FileError("invalid_path", "the server's directory itself cannot be moved, nor replaced");
  if (target.stats && !overwrite) throw new FileError("already_exists", `${JSON.stringify(target.path)} already exists; ask to overwrite it`);
  if (!source.link && source.stats?.isDirectory()) await refuseHiddenInside(sandbox, source);
  const [sourceParent, targetParent] = [await sandbox.openDirectory(source.parent, source.path), await sandbox.openDirectory(target.parent, target.path)];
  try {
    // The entry moves, not what a symlink leads to: the link keeps its target.
    const moveEntry = () => rename(join(sourceParent.anchor, source.name), join(targetParent.anchor, target.name));
    // A file moved over is kept first; a symlink moved over is replaced itself, not what it leads to.
    await (target.link ? moveEntry() : keep(target, moveEntry)).catch((error) => asFileError(error, source.path));
  } finally {
    await Promise.all([sourceParent.handle.close(), targetParent.handle.close()]);
  }
}

async function remove(sandbox: FileSandbox, path: string, recursive: boolean, keep: Keep): Promise<void> {
  const location = existing(await sandbox.locate(path, "write"));
  if (location.path === "") throw new FileError("invalid_path", "the server's directory itself cannot be deleted");
  const directory = !location.link && location.stats?.isDirectory();
  if (directory && recursive) await refuseHiddenInside(sandbox, location);
  const parent = await sandbox.openDirectory(location.parent, location.path);
  const entry = join(parent.anchor, location.name);
  try {
    // A file's bytes are kept; a symlink's target stays, and a folder is not kept (history.ts).
    if (!directory) await (location.link ? unlink(entry) : keep(location, () => unlink(entry)));
    else if (recursive) await rm(entry, { recursive: true });
    else await rmdir(entry);
  } catch (error) {
    asFileError(error, location.path);
  } finally {
    await parent.handle.close();
  }
}

/** `location`, refused as missing when there is nothing there. */
function existing(location: Location): Location {
  if (!location.stats && !location.link) throw new FileError("not_found", `${JSON.stringify(location.path)} does not exist`);
  return location;
}

/**
 * Refuses to move or delete a directory that holds something the deny list hides: moved, it would
 * come out from under the rule; deleted, the owner would destroy what they may not see.
 */
async function refuseHiddenInside(sandbox: FileSandbox, location: Location): Promise<void> {
  const pending: Array<[string, string]> = [[location.absolute, location.real]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [absolute, relative] = next;
    const names = await readdir(absolute).catch((error) => (errnoCode(error) === "ENOENT" ? [] : asFileError(error, location.path)));
    for (const name of names) {
      if (sandbox.isHidden(`${relative}/${name}`)) {
        throw new FileError("denied", `${JSON.stringify(location.path)} holds something this server's deny list keeps out of reach; it is left as it is`);
      }
      const stats = await lstat(join(absolute, name)).catch(() => undefined);
      if (stats?.isDirectory()) pending.push([join(absolute, name), `${relative}/${name}`]);
    }
  }
}
