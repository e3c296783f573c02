/**
 * Searching the text files under a folder for the lines that hold some text (servers/searchFiles),
 * bounded so that a search of the whole directory costs the game server's machine little: it stops
 * at `maxResults` lines, after `maxTextBytes` of text read, `maxEntries` files and folders seen or
 * `maxMillis`, and says so (`truncated`). Every entry is reached through the sandbox as a read, so
 * what the deny list hides, the agent's `.outpost/`, and symlinks leading out are skipped, never
 * searched; through a confined sandbox no symlink is followed at all. Binary files (a NUL in their
 * first 8 KiB) and files over `maxFileBytes` are skipped.
 */
import { readdir, type FileHandle } from "node:fs/promises";
import { parseClientPath } from "../../contract/file-path.ts";
import { FileError, errnoCode } from "./file-error.ts";
import type { FileSandbox, Location } from "./sandbox.ts";
import { openRegularFile } from "./write-file.ts";

export interface SearchOptions {
  /** Lines answered at most (default 100, at most 1,000; 0 is the default). */
  maxResults?: number;
  caseSensitive?: boolean;
  /** Larger files are skipped (default 2 MiB). */
  maxFileBytes?: number;
  /** The search stops once this much text has been read (default 20 MiB). */
  maxTextBytes?: number;
  /** The search stops after this many files and folders (default 10,000). */
  maxEntries?: number;
  /** The search stops after this long (default 10 s, well within Outpost's 30 s wait). */
  maxMillis?: number;
}

/** One line that holds the text. */
export interface SearchMatch {
  /** The file's client path. */
  path: string;
  /** 1-based. */
  lineNumber: number;
  /** The line without its line break, cut to 500 characters. */
  line: string;
}

export interface SearchResult {
  matches: SearchMatch[];
  /** More lines matched than `maxResults`, or the search stopped at one of its bounds. */
  truncated: boolean;
}

export const searchBounds = {
  maxResults: 100,
  maxMaxResults: 1000,
  maxFileBytes: 2 * 1024 * 1024,
  maxTextBytes: 20 * 1024 * 1024,
  maxEntries: 10_000,
  maxMillis: 10_000,
};
/** The longest line answered, in characters (FileMatch.line). */
export const maxLineLength = 500;
/** How much of a file is looked at for a NUL, which marks it binary. */
const sniffBytes = 8 * 1024;

/** The lines holding `query` in the files under the folder `path`, in path order. */
export async function searchFiles(sandbox: FileSandbox, path: string, query: string, options: SearchOptions = {}): Promise<SearchResult> {
  const folder = await sandbox.locate(path, "read");
  if (!folder.stats) throw new FileError("not_found", `${JSON.stringify(folder.path)} does not exist`);
  if (!folder.stats.isDirectory()) throw new FileError("not_a_directory", `${JSON.stringify(folder.path)} is not a folder`);
  const search: Search = {
    sandbox,
    bounds: {
      maxResults: Math.min(options.maxResults || searchBounds.maxResults, searchBounds.maxMaxResults),
      maxFileBytes: options.maxFileBytes ?? searchBounds.maxFileBytes,
      maxTextBytes: options.maxTextBytes ?? searchBounds.maxTextBytes,
      maxEntries: options.maxEntries ?? searchBounds.maxEntries,
    },
    matches: matcher(query, options.caseSensitive ?? false),
    deadline: Date.now() + (options.maxMillis ?? searchBounds.maxMillis),
    found: [],
    stopped: false,
    entries: 0,
    textBytes: 0,
    seen: new Set(),
  };
  if (query) await walk(search, folder);
  return { matches: search.found, truncated: search.stopped };
}

/** One search under way: its bounds and how far it got. */
interface Search {
  sandbox: FileSandbox;
  bounds: Required<Pick<SearchOptions, "maxResults" | "maxFileBytes" | "maxTextBytes" | "maxEntries">>;
  matches: (line: string) => boolean;
  deadline: number;
  found: SearchMatch[];
  /** A bound was reached: nothing more is read. */
  stopped: boolean;
  entries: number;
  textBytes: number;
  /** Folders walked (device and inode), so a symlink back up is walked once. */
  seen: Set<string>;
}

function matcher(query: string, caseSensitive: boolean): (line: string) => boolean {
  if (caseSensitive) return (line) => line.includes(query);
  const lower = query.toLowerCase();
  return (line) => line.toLowerCase().includes(lower);
}

/** Searches the files in `folder`, then its folders, each in name order; stops when a bound is reached. */
async function walk(search: Search, folder: Location): Promise<void> {
  const identity = `${folder.stats!.dev}:${folder.stats!.ino}`;
  if (search.seen.has(identity)) return;
  search.seen.add(identity);
  for (const name of await namesIn(search.sandbox, folder)) {
    if (search.stopped) return;
    if (++search.entries > search.bounds.maxEntries || Date.now() > search.deadline) {
      search.stopped = true;
      return;
    }
    const entry = await search.sandbox.locate(folder.path ? `${folder.path}/${name}` : name, "read").catch(skipped);
    if (entry?.stats?.isDirectory()) await walk(search, entry);
    else if (entry?.stats?.isFile()) await searchFile(search, entry).catch(skipped);
  }
}

/** The names in `folder` a client could address, sorted; none when it cannot be read. */
async function namesIn(sandbox: FileSandbox, folder: Location): Promise<string[]> {
  const opened = await sandbox.openDirectory(folder.absolute, folder.path).catch(skipped);
  if (!opened) return [];
  try {
    const names = await readdir(opened.anchor).catch(skipped);
    return (names ?? []).filter(addressable).sort();
  } finally {
    await opened.handle.close();
  }
}

function addressable(name: string): boolean {
  try {
    return parseClientPath(name).relative === name;
  } catch {
    return false;
  }
}

/**
 * What one entry's failure means for the search: a refusal (hidden, a symlink out or not followed,
 * gone since the listing) or no permission skips the entry; anything else fails the search.
 */
function skipped(error: unknown): undefined {
  if (error instanceof FileError || ["EACCES", "EPERM", "ENOENT"].includes(errnoCode(error) ?? "")) return undefined;
  throw error;
}

async function searchFile(search: Search, location: Location): Promise<void> {
  const { bounds } = search;
  if (location.stats!.size > bounds.maxFileBytes) return;
  const { handle, stats } = await openRegularFile(search.sandbox, location);
  try {
    if (stats.size > bounds.maxFileBytes) return;
    if (search.textBytes + stats.size > bounds.maxTextBytes) {
      search.stopped = true;
      return;
    }
    const content = await readText(handle, stats.size, bounds.maxFileBytes);
    if (!content) return;
    search.textBytes += content.length;
    searchLines(search, location.path, content.toString("utf8"));
  } finally {
    await handle.close();
  }
}

/** The file's bytes, or undefined when it is binary (a NUL in its first 8 KiB) or grew past `limit`. */
async function readText(handle: FileHandle, size: number, limit: number): Promise<Buffer | undefined> {
  const buffer = Buffer.alloc(Math.min(size, limit) + 1);
  let length = 0;
  const fill = async (end: number) => {
    for (let read = 1; read > 0 && length < end; length += read) ({ bytesRead: read } = await handle.read(buffer, length, end - length, length));
  };
  await fill(Math.min(sniffBytes, buffer.length));
  if (buffer.subarray(0, length).includes(0)) return undefined;
  await fill(buffer.length);
  return length > limit ? undefined : buffer.subarray(0, length);
}

function searchLines(search: Search, path: string, text: string): void {
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index].endsWith("\r") ? lines[index].slice(0, -1) : lines[index];
    if (!search.matches(line)) continue;
    if (search.found.length >= search.bounds.maxResults) {
      search.stopped = true;
      return;
    }
    search.found.push({ path, lineNumber: index + 1, line: cut(line) });
  }
}

/** `line` cut to `maxLineLength` characters (code points: never half a character). */
function cut(line: string): string {
  if (line.length <= maxLineLength) return line;
  const characters = Array.from(line);
  return characters.length <= maxLineLength ? line : characters.slice(0, maxLineLength).join("");
}
