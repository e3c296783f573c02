/**
 * The agent's sandbox for the files panel: the last line of defence between a path a client sends
 * and the machine the server runs on (core checks grants too, but the agent trusts no one). It
 * turns a client's path into a real place inside the server's directory, or refuses with a reason;
 * it never follows a path out, whatever the spelling, symlink or race.
 */
import { constants, type Stats } from "node:fs";
import { lstat, open, readlink, realpath, stat, type FileHandle } from "node:fs/promises";
import { join, matchesGlob, sep } from "node:path";
import { parseClientPath } from "./client-path.ts";
import { FileError, asFileError, errnoCode } from "./file-error.ts";

/** What the machine's operator lets Outpost do here (`wrap --files`): everything, reads only, nothing. */
export type FilesMode = "on" | "read-only" | "off";

/** Whether an operation only looks (`read`) or changes something (`write`). */
export type Access = "read" | "write";

export interface SandboxOptions {
  /** The server's directory; everything the sandbox reaches is inside its real path. */
  root: string;
  mode?: FilesMode;
  /** The operator's deny list (`--files-deny`): globs relative to the root, e.g. `secrets/**`. */
  deny?: string[];
  /**
   * Runs between the check of a path and its open, where another process could swap a symlink in:
   * tests do that here, deterministically. Never set in production.
   */
  beforeOpen?: (absolute: string) => Promise<void> | void;
}

/** A client's path as the sandbox found it, checked. */
export interface Location {
  /** The client's path, normalized ("" for the root): what messages name. */
  path: string;
  /** The real path of the directory that holds the entry, inside the root (the root for the root). */
  parent: string;
  /** The entry's name in `parent` ("" for the root). */
  name: string;
  /** The real path the entry stands for: itself, or where its symlink leads inside the root. */
  absolute: string;
  /** What is at `absolute`, or undefined when there is nothing yet (a write may create it). */
  stats?: Stats;
  /** The entry is a symlink (leading to `absolute`). */
  link: boolean;
  /**
   * `absolute` relative to the root, `/`-separated: where `path` really is once symlinks are
   * followed. The deny list applies to both, so a link does not unhide what it leads to.
   */
  real: string;
}

/** An opened directory, and the path under which its entries are reached without re-resolving it. */
export interface OpenedDirectory {
  handle: FileHandle;
  /** `/proc/self/fd/<fd>` on Linux (the very directory opened), else its checked real path. */
  anchor: string;
}

/** The sandbox of one server's directory (createFileSandbox). */
export interface FileSandbox {
  /** The real path of the server's directory. */
  readonly root: string;
  readonly mode: FilesMode;
  /** Checks `path` for `access` and finds what is there; refuses with a FileError. */
  locate(path: string, access: Access): Promise<Location>;
  /**
   * Whether `relative` (a `/`-separated path under the root) is out of clients' reach: the agent's
   * own folder (`.outpost/`), or what the deny list hides, or under a folder it hides.
   */
  isHidden(relative: string): boolean;
  /**
   * Opens `location.absolute` without following a symlink at its end and verifies that what was
   * opened is that real path: a symlink swapped in after `locate` is refused, the descriptor closed.
   */
  open(location: Location, flags: number, mode?: number): Promise<FileHandle>;
  /** Opens the real directory `absolute` (as found by `locate`) the same way, for `path`'s messages. */
  openDirectory(absolute: string, path: string): Promise<OpenedDirectory>;
}

const procFd = process.platform === "linux";

/**
 * The folder at the root where the agent keeps its own files (the files' history, history.ts).
 * Always hidden, whatever the deny list says: no client lists, reads, writes, moves or deletes what
 * is there, so a kept version is what was replaced and nothing else. Matched without regard to case,
 * as a case-insensitive file system would open it.
 */
export const agentFolder = ".outpost";

const isAgentOwn = (relative: string) => relative.split("/", 1)[0].toLowerCase() === agentFolder;

/**
 * The sandbox of `options.root`. The root's real path is taken once, here: a root that is itself a
 * symlink is followed this once, by the operator's choice; nothing under it ever is out of it.
 */
export async function createFileSandbox(options: SandboxOptions): Promise<FileSandbox> {
  const root = await realpath(options.root);
  const rootStats = await stat(root);
  if (!rootStats.isDirectory()) throw new Error(`the files root ${options.root} is not a directory`);
  const mode = options.mode ?? "on";
  const deny = (options.deny ?? []).map(checkDenyGlob);
  const isHidden = (relative: string) => isAgentOwn(relative) || hiddenBy(deny, relative);
  const inside = (real: string) => real === root || real.startsWith(root.endsWith(sep) ? root : root + sep);
  const relativeOf = (real: string) =>
    real === root
      ? ""
      : real
          .slice(root.length + (root.endsWith(sep) ? 0 : 1))
          .split(sep)
          .join("/");

  /** `absolute`'s real path, refused when it leaves the root or is hidden. */
  async function realInside(absolute: string, path: string, access: Access): Promise<string> {
    const real = await realpath(absolute).catch((error) => asFileError(error, path));
    if (!inside(real)) throw new FileError("outside_root", `${JSON.stringify(path)} leads outside the server's directory (a symlink); it is not followed`);
    if (isHidden(relativeOf(real))) throw hidden(path, access);
    return real;
  }

  async function locate(path: string, access: Access): Promise<Location> {
    if (mode === "off") throw new FileError("files_off", "files are off on this server: its operator started the agent with --files off");
    if (access === "write" && mode === "read-only") {
      throw new FileError("read_only", "files are read-only on this server: its operator started the agent with --files read-only");
    }
    const { segments, relative } = parseClientPath(path);
    if (isHidden(relative)) throw hidden(relative, access);
    if (segments.length === 0) return { path: "", parent: root, name: "", absolute: root, stats: await stat(root), link: false, real: "" };
    const name = segments[segments.length - 1];
    const parent = await realInside(join(root, ...segments.slice(0, -1)), relative, access);
    const entry = join(parent, name);
    if (isHidden(relativeOf(entry))) throw hidden(relative, access);
    const entryStats = await lstat(entry).catch((error) => (errnoCode(error) === "ENOENT" ? undefined : asFileError(error, relative)));
    if (!entryStats?.isSymbolicLink()) {
      return { path: relative, parent, name, absolute: entry, stats: kindChecked(entryStats, relative), link: false, real: relativeOf(entry) };
    }
    const target = await realInside(entry, relative, access);
    return { path: relative, parent, name, absolute: target, stats: kindChecked(await stat(target), relative), link: true, real: relativeOf(target) };
  }

  async function openChecked(absolute: string, path: string, flags: number, mode?: number): Promise<FileHandle> {
    await options.beforeOpen?.(absolute);
    const swapped = () => new FileError("outside_root", `${JSON.stringify(path)} changed while being opened (a symlink was swapped in); nothing was done`);
    const handle = await open(absolute, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, mode).catch(async (error) => {
      // O_NOFOLLOW meeting a symlink: ELOOP, or ENOTDIR with O_DIRECTORY.
      const link = await lstat(absolute).then(
        (stats) => stats.isSymbolicLink(),
        () => false,
      );
      throw link ? swapped() : asFileError(error, path);
    });
    try {
      const opened = await openedPath(handle, absolute);
      if (opened !== absolute || !inside(opened)) throw swapped();
      return handle;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  return {
    root,
    mode,
    locate,
    isHidden,
    open: (location, flags, fileMode) => openChecked(location.absolute, location.path, flags, fileMode),
    async openDirectory(absolute, path) {
      const handle = await openChecked(absolute, path, constants.O_RDONLY | constants.O_DIRECTORY);
      return { handle, anchor: procFd ? `/proc/self/fd/${handle.fd}` : absolute };
    },
  };
}

/**
 * The real path of what `handle` opened. On Linux the kernel says (`/proc/self/fd`); elsewhere,
 * `expected` is resolved again and must be the same file (device and inode) as the descriptor.
 */
async function openedPath(handle: FileHandle, expected: string): Promise<string> {
  if (procFd) return readlink(`/proc/self/fd/${handle.fd}`);
  const [real, opened] = await Promise.all([realpath(expected), handle.stat()]);
  const found = await lstat(real);
  return found.dev === opened.dev && found.ino === opened.ino ? real : `${real} (another file)`;
}

/** Devices, FIFOs and sockets are refused wherever they are; nothing there passes as undefined. */
function kindChecked(stats: Stats | undefined, path: string): Stats | undefined {
  if (!stats || stats.isFile() || stats.isDirectory()) return stats;
  throw new FileError("not_a_regular_file", `${JSON.stringify(path)} is a device, FIFO or socket, which the files panel does not open`);
}

/** A hidden path reads as missing; a write to one says why it is refused (nothing about what is there). */
function hidden(path: string, access: Access): FileError {
  if (access === "read") return new FileError("not_found", `${JSON.stringify(path)} does not exist`);
  if (isAgentOwn(path)) return new FileError("denied", `${JSON.stringify(path)} is where the agent keeps the files' history; it is out of reach`);
  return new FileError("denied", `${JSON.stringify(path)} is on this server's deny list: its operator keeps it out of reach`);
}

/** An operator's glob, refused at start when it could never match a client's path (and by `wrap --files-deny` before that). */
export function checkDenyGlob(glob: string): string {
  const trimmed = glob.replace(/^\.\//, "");
  if (!trimmed || trimmed.startsWith("/") || trimmed.includes("\\")) {
    throw new Error(`--files-deny ${JSON.stringify(glob)}: a glob is relative to the server's directory and uses /`);
  }
  return trimmed;
}

/**
 * Whether a glob matches `relative` or a folder above it. `dir/**` also hides `dir` itself, and a
 * name's leading dot is a plain character (Node's globs skip dot files otherwise, and `secrets/**`
 * must hide `secrets/.env`).
 */
function hiddenBy(deny: string[], relative: string): boolean {
  if (!relative || deny.length === 0) return false;
  const parts = relative.split("/");
  for (let end = 1; end <= parts.length; end++) {
    const prefix = parts.slice(0, end).join("/");
    for (const glob of deny) {
      if (glob.endsWith("/**") && prefix === glob.slice(0, -3)) return true;
      if (matchesGlob(undotted(prefix), undotted(glob))) return true;
    }
  }
  return false;
}

/** A leading dot in each segment as a character globs match like any other. */
const undotted = (path: string) => path.replace(/(^|\/)\./g, "$1\u0001");

/**
 * The sandbox for a caller whose access reaches only some paths, checked by Outpost against the
 * paths as written: a path that leads elsewhere through a symlink (in it, or at its end) is refused
 * as `denied`, since where it really is may lie outside what the caller was allowed.
 */
export function confinedSandbox(sandbox: FileSandbox): FileSandbox {
  return {
    ...sandbox,
    async locate(path, access) {
      const location = await sandbox.locate(path, access);
      if (location.link || location.real !== location.path) {
        throw new FileError("denied", `${JSON.stringify(location.path)} is reached through a symlink, which your access to this server's files does not follow`);
      }
      return location;
    },
  };
}
