/**
 * The history of files changed through Outpost, kept by the agent so that an owner can undo: before
 * a write, an upload, a restore or a move with `overwrite` replaces a regular file, and before a
 * deletion removes one, the agent copies the file as it was into `<root>/.outpost/history/`. Folders
 * are not kept (a folder deleted with its contents keeps nothing of what it held), nor symlinks (a
 * deleted link loses no bytes), nor files over `maxFileBytes`.
 *
 * One folder per file, named by the sha256 of its path (where it really is, symlinks followed, so
 * a file edited through a link and by its own name has one history), holding `path.json` (the path,
 * for an operator who looks) and one file per version named `<savedAt ms>-<size>-<sha256>`. The name
 * is the version's id and says everything a listing shows, so listing is one readdir, and there is
 * no index to fall out of step with the files: a version appears whole, by a rename, or not at all.
 *
 * Copied, not hard-linked: the replaced inode may still be written by a process that holds it open
 * (a log the game server writes) or be another name's too, and a kept version must stay what it was.
 * A version that cannot be kept (a full disk, `.outpost` not a folder) fails the change: nothing is
 * replaced that could not be undone.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { lstat, mkdir, open, readdir, rename, rm, writeFile, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { FileError, errnoCode } from "./file-error.ts";
import { agentFolder, type FileSandbox, type Location } from "./sandbox.ts";
import { openRegularFile, sha256Hex, writeFileAtomically, type WriteOptions, type WriteResult } from "./write-file.ts";

/** The history's bounds; each has a default (createFileHistory). */
export interface HistoryOptions {
  /** Versions kept per file, the oldest dropped first (default 10). */
  maxVersions?: number;
  /** Larger files are not kept (default 5 MiB, what readFile and writeFile handle). */
  maxFileBytes?: number;
  /** All versions of all files together, the oldest dropped first, whichever file they are of (default 100 MiB). */
  maxTotalBytes?: number;
  /** Tests only: the clock of `savedAt`, in milliseconds. */
  now?: () => number;
}

/** A kept version of a file. */
export interface KeptVersion {
  /** Names it for `restore`: `<savedAt ms>-<size>-<sha256>`. */
  id: string;
  size: number;
  sha256: string;
  /** When it was set aside (it was current until then). */
  savedAt: Date;
}

/**
 * The history of one served directory. Built once per directory and shared by every FileOperations
 * over it (the confined ones too): it keeps one version at a time, so that its bounds hold.
 */
export interface FileHistory {
  /**
   * Keeps the regular file `location` leads to (as `sandbox.locate` found it) as a version, then
   * runs `change`, the rename or unlink that replaces or removes it. The two run before any other
   * keep starts, so the version kept is the very file the change replaces, however many changes come
   * at once. A file larger than `maxFileBytes`, or gone meanwhile, is not kept; `location` must not
   * be a symlink that is itself deleted or replaced (its target loses nothing). When the version
   * cannot be kept, `change` does not run and the promise rejects.
   */
  keep(sandbox: FileSandbox, location: Location, change: () => Promise<void>): Promise<void>;
  /** The versions kept of `path` (a read: the deny list and confinement apply), newest first. */
  list(sandbox: FileSandbox, path: string): Promise<KeptVersion[]>;
  /**
   * Writes the version `versionId` of `path` back over it, atomically as a write (and with
   * `expectedSha256` as one), keeping the current file as a version in turn. An id this history
   * does not hold for that path is `not_found`.
   */
  restore(sandbox: FileSandbox, path: string, versionId: string, options?: WriteOptions): Promise<WriteResult>;
}

export const defaultHistoryBounds = { maxVersions: 10, maxFileBytes: 5 * 1024 * 1024, maxTotalBytes: 100 * 1024 * 1024 } as const;

/** The contract's most versions in one answer (FileResult.History). */
const maxListed = 100;
const versionName = /^(\d{1,16})-(\d{1,16})-([0-9a-f]{64})$/;
const folderName = /^[0-9a-f]{32}$/;
const temporaryPrefix = ".tmp-";

/** The history under `root` (the sandbox's real root). */
export function createFileHistory(root: string, options: HistoryOptions = {}): FileHistory {
  const bounds = {
    maxVersions: options.maxVersions ?? defaultHistoryBounds.maxVersions,
    maxFileBytes: options.maxFileBytes ?? defaultHistoryBounds.maxFileBytes,
    maxTotalBytes: options.maxTotalBytes ?? defaultHistoryBounds.maxTotalBytes,
  };
  const now = options.now ?? Date.now;
  const base = join(root, agentFolder, "history");
  let lastSavedAt = 0;
  let queue: Promise<unknown> = Promise.resolve();
  /** Runs `task` after every one before it: one change to the history at a time. */
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };

  function keep(sandbox: FileSandbox, location: Location, change: () => Promise<void>): Promise<void> {
    return exclusive(async () => {
      if (location.stats?.isFile() && location.stats.size <= bounds.maxFileBytes) await keepCurrent(sandbox, location);
      await change();
    });
  }

  /** Keeps the file at `location` as it is now (another change may have replaced it since it was found). */
  async function keepCurrent(sandbox: FileSandbox, location: Location): Promise<void> {
    const opened = await openRegularFile(sandbox, location).catch((error) => {
      if (error instanceof FileError && error.reason === "not_found") return undefined;
      throw error;
    });
    if (!opened) return;
    try {
      if (opened.stats.size <= bounds.maxFileBytes) await keepOpened(opened.handle, location.real);
    } catch (error) {
      if (error instanceof FileError) throw error;
      // Said as the history's trouble: errno codes here are about .outpost, not the caller's path.
      throw new Error(`could not keep the version of ${JSON.stringify(location.path)} being replaced, in ${base}: ${(error as Error).message}`, { cause: error });
    } finally {
      await opened.handle.close();
    }
  }

  async function keepOpened(handle: FileHandle, real: string): Promise<void> {
    await ensureFolder(join(root, agentFolder));
    await ensureFolder(base);
    const folder = join(base, folderOf(real));
    await ensureFolder(folder);
    await writeFile(join(folder, "path.json"), JSON.stringify({ path: real }) + "\n", { flag: "wx", mode: 0o600 }).catch((error) => {
      if (errnoCode(error) !== "EEXIST") throw error;
    });
    const temporary = join(folder, `${temporaryPrefix}${randomBytes(8).toString("hex")}`);
    try {
      const copied = await copyInto(handle, temporary, bounds.maxFileBytes);
      // It grew past the bound while being copied: not kept, as a file that large would not be.
      if (!copied) return;
      lastSavedAt = Math.max(now(), lastSavedAt + 1);
      const id = `${lastSavedAt}-${copied.size}-${copied.sha256}`;
      // The same bytes kept before move up to now rather than being kept twice.
      const same = (await versionsIn(folder)).find((version) => version.sha256 === copied.sha256);
      await rename(same ? join(folder, same.id) : temporary, join(folder, id));
      await syncFolder(folder);
    } finally {
      await rm(temporary, { force: true });
    }
    await prune(base, folder, bounds);
  }

  async function list(sandbox: FileSandbox, path: string): Promise<KeptVersion[]> {
    const location = await sandbox.locate(path, "read");
    if (!(await historyExists(root, base))) return [];
    return (await versionsIn(join(base, folderOf(location.real)))).slice(0, maxListed);
  }

  async function restore(sandbox: FileSandbox, path: string, versionId: string, options: WriteOptions = {}): Promise<WriteResult> {
    const location = await sandbox.locate(path, "write");
    const missing = () => new FileError("not_found", `${JSON.stringify(location.path)} has no kept version ${JSON.stringify(versionId)}; list its history again`);
    // Only ids this history makes: the contract's pattern alone would let ".." through.
    const parsed = versionName.exec(versionId);
    if (!parsed || !(await historyExists(root, base))) throw missing();
    const content = await readVersion(join(base, folderOf(location.real), versionId));
    if (!content) throw missing();
    if (sha256Hex(content) !== parsed[3]) throw new Error(`the kept version ${versionId} of ${JSON.stringify(location.path)} in ${base} is damaged (its sha256 differs)`);
    return writeFileAtomically(sandbox, path, content, options, { keep: (current, change) => keep(sandbox, current, change) });
  }

  return { keep, list, restore };
}

/** Drops what is past the bounds: this file's oldest versions, then the oldest of all until the total fits. */
async function prune(base: string, folder: string, bounds: { maxVersions: number; maxTotalBytes: number }): Promise<void> {
  for (const name of await readdir(folder)) if (name.startsWith(temporaryPrefix)) await rm(join(folder, name), { force: true });
  for (const old of (await versionsIn(folder)).slice(bounds.maxVersions)) await rm(join(folder, old.id), { force: true });
  const all: Array<KeptVersion & { folder: string }> = [];
  for (const name of await readdir(base)) {
    if (folderName.test(name)) all.push(...(await versionsIn(join(base, name))).map((version) => ({ ...version, folder: join(base, name) })));
  }
  all.sort((a, b) => a.savedAt.getTime() - b.savedAt.getTime());
  let total = all.reduce((sum, version) => sum + version.size, 0);
  const emptied = new Set<string>();
  for (const oldest of all) {
    if (total <= bounds.maxTotalBytes) break;
    await rm(join(oldest.folder, oldest.id), { force: true });
    total -= oldest.size;
    emptied.add(oldest.folder);
  }
  for (const touched of emptied) if ((await versionsIn(touched)).length === 0) await rm(touched, { recursive: true, force: true });
}

/** Whether `.outpost/history` is there, as folders (never through a symlink). */
async function historyExists(root: string, base: string): Promise<boolean> {
  for (const folder of [join(root, agentFolder), base]) {
    const stats = await lstat(folder).catch((error) => (errnoCode(error) === "ENOENT" ? undefined : Promise.reject(error)));
    if (!stats) return false;
    if (!stats.isDirectory()) throw notAFolder(folder);
  }
  return true;
}

/** A file's history folder: the first 128 bits of its path's sha256, in hex. */
const folderOf = (real: string) => createHash("sha256").update(real).digest("hex").slice(0, 32);

/** The versions in `folder`, newest first; nothing when it is not there. */
async function versionsIn(folder: string): Promise<KeptVersion[]> {
  const names = await readdir(folder).catch((error) => (errnoCode(error) === "ENOENT" ? [] : Promise.reject(error)));
  const versions: KeptVersion[] = [];
  for (const id of names) {
    const parsed = versionName.exec(id);
    if (parsed) versions.push({ id, savedAt: new Date(Number(parsed[1])), size: Number(parsed[2]), sha256: parsed[3] });
  }
  return versions.sort((a, b) => b.savedAt.getTime() - a.savedAt.getTime() || (a.id < b.id ? 1 : -1));
}

const notAFolder = (path: string) => new Error(`${path} is not a folder (a file or a symlink); the agent keeps the files' history there, so move it away`);

/** Makes the folder `path` unless it is there, and refuses a symlink or a file in its place. */
async function ensureFolder(path: string): Promise<void> {
  await mkdir(path, { mode: 0o700 }).catch((error) => {
    if (errnoCode(error) !== "EEXIST") throw error;
  });
  if (!(await lstat(path)).isDirectory()) throw notAFolder(path);
}

/** Copies all of `source` into the new file `target` (synced), hashing it; undefined when it holds more than `limit` bytes. */
async function copyInto(source: FileHandle, target: string, limit: number): Promise<{ size: number; sha256: string } | undefined> {
  const output = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    const hash = createHash("sha256");
    const buffer = Buffer.alloc(64 * 1024);
    let size = 0;
    for (let read = 1; read > 0;) {
      ({ bytesRead: read } = await source.read(buffer, 0, buffer.length, size));
      size += read;
      if (size > limit) return undefined;
      hash.update(buffer.subarray(0, read));
      await output.write(buffer, 0, read);
    }
    await output.sync();
    return { size, sha256: hash.digest("hex") };
  } finally {
    await output.close();
  }
}

/** The bytes of the version file `path`, or undefined when there is none (never through a symlink). */
async function readVersion(path: string): Promise<Buffer | undefined> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW).catch((error) => {
    if (errnoCode(error) === "ENOENT" || errnoCode(error) === "ELOOP") return undefined;
    throw error;
  });
  if (!handle) return undefined;
  try {
    return (await handle.stat()).isFile() ? await handle.readFile() : undefined;
  } finally {
    await handle.close();
  }
}

async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
