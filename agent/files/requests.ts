/**
 * The agent's answers to Outpost's FileRequests: each runs one file operation in the server's
 * directory and comes back as exactly one FileResult. A refusal keeps its reason (core maps it
 * without reading the message); anything else is `failed`, with a message that names no place on
 * the machine, while the real error goes to the operator. A few operations run at once per
 * connection and a bounded number wait; past that a request is answered `busy` at once, so a flood
 * of requests costs the game server's machine neither its disk nor its memory.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FileFailureSchema, FileRequest, FileResultSchema } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { FileType, FilesMode as WireFilesMode } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { AgentFilesOptions, FileOperationName } from "../options.ts";
import { FileError, errnoCode } from "./file-error.ts";
import { createFileHistory } from "./history.ts";
import type { FileEntry } from "./list-directory.ts";
import { createFileOperations, type FileOperations } from "./operations.ts";
import type { WriteResult } from "./write-file.ts";
import type { PluginInfo } from "./plugins.ts";
import { confinedSandbox, createFileSandbox, type FilesMode } from "./sandbox.ts";

export type FileResultInit = MessageInitShape<typeof FileResultSchema>;
type FileFailureInit = MessageInitShape<typeof FileFailureSchema>;
type Result = FileResultInit["result"];

/** Hears what went wrong that Outpost is not told (see the agent's `fileError` event). */
export type FileErrorListener = (error: Error, operation?: FileOperationName) => void;

/** The files an agent serves, built once: what Hello says, and the operations unless files are off. */
export interface ServedFiles {
  mode: FilesMode;
  operations?: FileOperations;
  /** The same for a confined request (a caller whose access reaches some paths only): no symlink followed. */
  confined?: FileOperations;
}

/** The contract's bounds on a FileResult (agent_service.proto). */
const maxRequestIdLength = 64;
const maxMessageLength = 1024;

/**
 * The sandbox and its operations for `options`, once per agent. A root that does not open as a
 * directory (or a deny glob that could never match) leaves files off, said through `onError`: the
 * game server runs on, and Outpost is told the truth in Hello rather than refused request by request.
 */
export async function openServedFiles(options: AgentFilesOptions | undefined, onError: FileErrorListener): Promise<ServedFiles> {
  const mode = options ? (options.mode ?? "on") : "off";
  if (!options || mode === "off") return { mode: "off" };
  try {
    const sandbox = await createFileSandbox({ root: options.root, mode, deny: options.deny });
    // One history for the directory, whichever operations change it.
    const history = createFileHistory(sandbox.root);
    return { mode, operations: createFileOperations(sandbox, { history }), confined: createFileOperations(confinedSandbox(sandbox), { history }) };
  } catch (error) {
    report(onError, new Error(`files are off: the files root ${options.root} cannot be served: ${(error as Error).message}`, { cause: error }));
    return { mode: "off" };
  }
}

/**
 * A `fileError` event in one line for the operator: the real error, with its paths, which Outpost
 * heard only as "failed".
 */
export function describeFileError(error: Error, operation?: FileOperationName): string {
  return operation ? `a file operation (${operation}) failed: ${error.message}` : error.message;
}

/** How Hello says `mode`. */
export function filesModeOnWire(mode: FilesMode): WireFilesMode {
  return mode === "on" ? WireFilesMode.ON : mode === "read-only" ? WireFilesMode.READ_ONLY : WireFilesMode.OFF;
}

/**
 * Answers one FileRequest with its FileResult, never rejecting: the operation's result, its
 * refusal, or `failed` for anything else (the error itself to `onError`).
 */
export async function answerFileRequest(files: ServedFiles, request: FileRequest, onError: FileErrorListener): Promise<FileResultInit> {
  const { requestId, operation } = request;
  try {
    const operations = request.confined ? files.confined : files.operations;
    if (!operations) {
      throw new FileError("files_off", "files are off on this server: its operator started the agent without them (--files off)");
    }
    return { requestId, result: await perform(operations, operation) };
  } catch (error) {
    return { requestId, result: { case: "failure", value: failureOf(error, operation.case, onError) } };
  }
}

/** Runs `operation` and shapes what it gave as the FileResult's `result`. */
async function perform(operations: FileOperations, operation: FileRequest["operation"]): Promise<Result> {
  const done: Result = { case: "done", value: {} };
  switch (operation.case) {
    case "list": {
      const { path, cursor } = operation.value;
      const page = await operations.list(path, { cursor: cursor || undefined });
      return { case: "listing", value: { path: page.path, entries: page.entries.map(entryOnWire), nextCursor: page.nextCursor ?? "" } };
    }
    case "read": {
      const read = await operations.read(operation.value.path);
      const content = new Uint8Array(read.content.buffer, read.content.byteOffset, read.content.byteLength);
      return { case: "content", value: { path: read.path, content, sha256: read.sha256, modifiedAt: timestampFromDate(read.modifiedAt) } };
    }
    case "write": {
      const { path, content, expectedSha256 } = operation.value;
      return writtenOnWire(await operations.write(path, content, expectedSha256 === undefined ? {} : { expectedSha256 }));
    }
    case "createDirectory":
      await operations.createDirectory(operation.value.path);
      return done;
    case "move":
      await operations.move(operation.value.from, operation.value.to, { overwrite: operation.value.overwrite, filesOnly: operation.value.filesOnly });
      return done;
    case "delete":
      await operations.remove(operation.value.path, { recursive: operation.value.recursive });
      return done;
    case "readRange": {
      const { path, offset, length } = operation.value;
      const range = await operations.readRange(path, Number(offset), length);
      return { case: "range", value: { data: range.data, offset: BigInt(range.offset), size: BigInt(range.size), modifiedAt: timestampFromDate(range.modifiedAt) } };
    }
    case "uploadChunk": {
      const { uploadId, path, offset, data, last, expectedSha256 } = operation.value;
      const written = await operations.uploads.piece({ uploadId, path, offset: Number(offset), data, last, expectedSha256 });
      return written ? writtenOnWire(written) : done;
    }
    case "abortUpload":
      await operations.uploads.abort(operation.value.uploadId);
      return done;
    case "listPlugins":
      return { case: "plugins", value: { plugins: (await operations.listPlugins()).map(pluginOnWire) } };
    case "setPluginEnabled":
      return { case: "plugin", value: pluginOnWire(await operations.setPluginEnabled(operation.value.path, operation.value.enabled)) };
    case "listHistory": {
      const versions = await operations.history(operation.value.path);
      return { case: "history", value: { versions: versions.map((v) => ({ id: v.id, size: BigInt(v.size), sha256: v.sha256, savedAt: timestampFromDate(v.savedAt) })) } };
    }
    case "restoreVersion": {
      const { path, versionId, expectedSha256 } = operation.value;
      return writtenOnWire(await operations.restore(path, versionId, expectedSha256 === undefined ? {} : { expectedSha256 }));
    }
    case "search": {
      const { path, query, maxResults, caseSensitive } = operation.value;
      return { case: "matches", value: await operations.search(path, query, { maxResults, caseSensitive }) };
    }
    default:
      // A newer Outpost's operation, which this agent cannot know.
      throw new UnknownOperation();
  }
}

class UnknownOperation extends Error {}

/** A file as written (a write, an upload's last piece), as the FileResult says it. */
function writtenOnWire(written: WriteResult): Result {
  return { case: "written", value: { path: written.path, size: BigInt(written.size), sha256: written.sha256, modifiedAt: timestampFromDate(written.modifiedAt) } };
}

const fileTypes: Record<FileEntry["type"], FileType> = { file: FileType.FILE, directory: FileType.DIRECTORY, symlink: FileType.SYMLINK };

function entryOnWire(entry: FileEntry) {
  return { name: entry.name, type: fileTypes[entry.type], size: BigInt(entry.size), modifiedAt: timestampFromDate(entry.modifiedAt) };
}

function pluginOnWire(plugin: PluginInfo) {
  return { ...plugin, size: BigInt(plugin.size), modifiedAt: timestampFromDate(plugin.modifiedAt), problem: plugin.problem ?? "" };
}

const operationWords: Record<FileOperationName, string> = {
  list: "listing",
  read: "read",
  write: "write",
  createDirectory: "new directory",
  move: "move",
  delete: "deletion",
  readRange: "download",
  uploadChunk: "upload",
  abortUpload: "upload",
  listHistory: "history",
  restoreVersion: "restore",
  listPlugins: "plugin listing",
  setPluginEnabled: "plugin change",
  search: "search",
};

/**
 * What Outpost is told of a failure. A refusal says its reason and its message (which names the
 * client's path only). Anything else is `failed` with the system's error code at most: its message
 * would name real paths on the machine, and a stack says more than any caller should know.
 */
function failureOf(error: unknown, operation: FileOperationName | undefined, onError: FileErrorListener): FileFailureInit {
  if (error instanceof FileError) return { reason: error.reason, message: bounded(error.message) };
  if (error instanceof UnknownOperation || !operation) {
    return { reason: "failed", message: "this agent does not know the file operation Outpost asked for; its operator can update it" };
  }
  report(onError, error instanceof Error ? error : new Error(String(error)), operation);
  const code = errnoCode(error);
  const why = code && /^E[A-Z0-9]+$/.test(code) ? ` (${code})` : "";
  return { reason: "failed", message: `the ${operationWords[operation]} failed on the server's machine${why}; the agent's output there says why` };
}

/** `message` within the contract's length, cut between characters. */
function bounded(message: string): string {
  const characters = Array.from(message);
  return characters.length <= maxMessageLength ? message : characters.slice(0, maxMessageLength - 1).join("") + "…";
}

/** Tells `onError`; a listener that throws must not turn an answer into none. */
function report(onError: FileErrorListener, error: Error, operation?: FileOperationName): void {
  try {
    onError(error, operation);
  } catch {
    // The operator's listener failed; the answer to Outpost does not depend on it.
  }
}

export interface FileRequestLimits {
  /** Operations running at once (default 4): a file panel is a person clicking, not a batch job. */
  running?: number;
  /** Requests waiting for one of those (default 64); past them a request is answered `busy` at once. */
  waiting?: number;
}

/** One connection's FileRequests, answered a few at a time (createFileRequests). */
export interface FileRequests {
  /**
   * Resolves with the FileResult for `request`, or with nothing when there is nothing to send: an
   * id the contract could not carry back (said through `onError`), or a connection that ended
   * before the request's turn. Never rejects.
   */
  answer(request: FileRequest): Promise<FileResultInit | undefined>;
  /**
   * The connection ended: requests still waiting are dropped unrun. Outpost has stopped waiting for
   * them, and a write it reported as failed must not happen afterwards.
   */
  close(): void;
}

export function createFileRequests(files: ServedFiles, onError: FileErrorListener, limits: FileRequestLimits = {}): FileRequests {
  const maxRunning = limits.running ?? 4;
  const maxWaiting = limits.waiting ?? 64;
  let running = 0;
  let closed = false;
  /** Each waiting request's turn: true to run (the slot handed over), false when the connection ended. */
  const waiting: Array<(run: boolean) => void> = [];
  const busy = (requestId: string, why: string): FileResultInit => ({ requestId, result: { case: "failure", value: { reason: "busy", message: why } } });

  async function answer(request: FileRequest): Promise<FileResultInit | undefined> {
    const { requestId } = request;
    if (!requestId || requestId.length > maxRequestIdLength) {
      report(
        onError,
        new Error(`Outpost sent a file request whose id is empty or longer than ${maxRequestIdLength} characters; it is not answered`),
        request.operation.case,
      );
      return undefined;
    }
    if (closed) return undefined;
    if (running < maxRunning) running++;
    else if (waiting.length >= maxWaiting) return busy(requestId, "the agent is busy with other file operations; try again in a moment");
    else {
      const since = Date.now();
      if (!(await new Promise<boolean>((resolve) => waiting.push(resolve)))) return undefined;
      if (request.timeoutMs > 0 && Date.now() - since >= request.timeoutMs) {
        release();
        // Outpost stopped waiting for it: what it was told (a timeout) must stay true.
        return busy(requestId, "the agent was busy with other file operations for longer than Outpost waits; nothing was done");
      }
    }
    try {
      return await answerFileRequest(files, request, onError);
    } finally {
      release();
    }
  }

  /** Hands a finished operation's slot to the next waiting request, so no newcomer slips in between. */
  function release() {
    const next = waiting.shift();
    if (next) next(true);
    else running--;
  }

  return {
    answer,
    close() {
      closed = true;
      for (const resolve of waiting.splice(0)) resolve(false);
    },
  };
}
