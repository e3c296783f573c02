/**
 * A directory's entries for the files panel: what `servers/listFiles` shows, sorted the way a file
 * browser reads (folders first, then by name), and paged so that a 10,000-entry `world/` folder
 * does not travel in one message. Entries the deny list hides, and those no path could name, are not there at all.
 */
import type { Stats } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { FileError, asFileError, errnoCode } from "./file-error.ts";
import type { FileSandbox } from "./sandbox.ts";
import { parseClientPath } from "./client-path.ts";

/** One entry of a listing. Devices, FIFOs and sockets are left out: nothing can be done with them here. */
export interface FileEntry {
  name: string;
  type: "file" | "directory" | "symlink";
  /** In bytes (a symlink's is the length of its target's path). */
  size: number;
  modifiedAt: Date;
}

/** A page of a listing; `nextCursor` asks for the next one, and is absent on the last. */
export interface DirectoryPage {
  path: string;
  entries: FileEntry[];
  nextCursor?: string;
}

export interface ListOptions {
  /** A previous page's `nextCursor`. */
  cursor?: string;
  /** Entries per page (default 1,000). */
  pageSize?: number;
}

export const defaultPageSize = 1000;

/**
 * The entries of the directory `path`, from `cursor` on. The cursor names the last entry sent
 * rather than a count, so entries added or removed between pages shift nothing that was not seen.
 */
export async function listDirectory(sandbox: FileSandbox, path: string, options: ListOptions = {}): Promise<DirectoryPage> {
  const pageSize = Math.max(1, options.pageSize ?? defaultPageSize);
  const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
  const location = await sandbox.locate(path, "read");
  if (!location.stats) throw new FileError("not_found", `${JSON.stringify(location.path)} does not exist`);
  if (!location.stats.isDirectory()) throw new FileError("not_a_directory", `${JSON.stringify(location.path)} is not a directory`);
  const directory = await sandbox.openDirectory(location.absolute, location.path);
  let entries: FileEntry[];
  try {
    const under = (folder: string, name: string) => (folder ? `${folder}/${name}` : name);
    // Hidden by the path asked for, or by where it really is (a listing through a symlinked folder).
    const names = (await readdir(directory.anchor).catch((error) => asFileError(error, location.path))).filter(
      (name) => addressable(name) && !sandbox.isHidden(under(location.path, name)) && !sandbox.isHidden(under(location.real, name)),
    );
    entries = await describeAll(directory.anchor, names);
  } finally {
    await directory.handle.close();
  }
  entries.sort(compareEntries);
  const from = after ? entries.findIndex((entry) => compareEntries(entry, after) > 0) : 0;
  const page = from < 0 ? [] : entries.slice(from, from + pageSize);
  const more = from >= 0 && from + pageSize < entries.length;
  return { path: location.path, entries: page, nextCursor: more ? encodeCursor(page[page.length - 1]) : undefined };
}

/**
 * Whether a client could name this entry in a path: one the path check refuses (a control or
 * invisible character, only dots) is left out of listings, as nothing could be done with it.
 */
export function addressable(name: string): boolean {
  try {
    return parseClientPath(name).relative === name;
  } catch {
    return false;
  }
}

/** The entries named `names` in the opened directory, in batches (a big folder is not 10,000 calls at once). */
async function describeAll(anchor: string, names: string[]): Promise<FileEntry[]> {
  const entries: FileEntry[] = [];
  for (let start = 0; start < names.length; start += 64) {
    const batch = await Promise.all(names.slice(start, start + 64).map((name) => describe(anchor, name)));
    for (const entry of batch) if (entry) entries.push(entry);
  }
  return entries;
}

/** One entry as lstat sees it (a symlink is not followed), or undefined when it is gone or not listable. */
async function describe(anchor: string, name: string): Promise<FileEntry | undefined> {
  let stats: Stats;
  try {
    stats = await lstat(join(anchor, name));
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return undefined;
    throw error;
  }
  const type = stats.isDirectory() ? "directory" : stats.isFile() ? "file" : stats.isSymbolicLink() ? "symlink" : undefined;
  return type && { name, type, size: stats.size, modifiedAt: stats.mtime };
}

type SortKey = Pick<FileEntry, "name" | "type">;

/** Folders first, then by name in code-point order (the same on every machine, whatever its locale). */
function compareEntries(a: SortKey, b: SortKey): number {
  const rank = Number(a.type !== "directory") - Number(b.type !== "directory");
  if (rank !== 0) return rank;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function encodeCursor(entry: SortKey): string {
  return Buffer.from(JSON.stringify([entry.type === "directory" ? "d" : "f", entry.name])).toString("base64url");
}

function decodeCursor(cursor: string): SortKey {
  try {
    const [kind, name] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown[];
    if ((kind === "d" || kind === "f") && typeof name === "string") return { name, type: kind === "d" ? "directory" : "file" };
  } catch {
    // Falls through to the refusal.
  }
  throw new FileError("invalid_cursor", "this listing's cursor is not one the agent gave; list again from the start");
}
