/**
 * The files procedures (servers/listFiles, readFile, writeFile, createDirectory, moveFile,
 * deleteFile): a server's directory through its agent's stream, as far as three checks allow, each
 * on its own and in this order:
 * 1. the caller's access: owners and admins everywhere; a member needs a live grant with
 *    files_read (listing, reading) or files_write (changing), and every path must be within the
 *    grant's file paths (a listing may also pass through the folders that lead to them, and shows
 *    only what the grant reaches);
 * 2. what the agent's operator allows (`wrap --files on|read-only|off`, Server.files), checked
 *    here so that the caller hears it at once;
 * 3. the agent's own sandbox, the last line of defence (agent/files/sandbox.ts), which checks every
 *    path again whatever core allowed, and answers refusals with a reason core passes on.
 * Every change that happened is an activity event with its paths, size and hashes, never the
 * content. Changing spends one of a member's grant uses; listing and reading never do.
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { HandlerContext } from "@connectrpc/connect";
import type { FileResult } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import {
  CreateDirectoryResponseSchema,
  DeleteFileResponseSchema,
  ListFilesResponseSchema,
  MoveFileResponseSchema,
  ReadFileResponseSchema,
  WriteFileResponseSchema,
  type CreateDirectoryRequest,
  type DeleteFileRequest,
  type ListFilesRequest,
  type MoveFileRequest,
  type ReadFileRequest,
  type WriteFileRequest,
} from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { FileType } from "../../gen/outpost/servers/v1/resources_pb.js";
import { ClientPathError, parseClientPath } from "../../contract/file-path.ts";
import { entityManager, requireUser, serverScope, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import type { FilePathAccess } from "../file-paths.ts";
import { fileAccessOf, filePathRefusal, judgeServerRow, returnServerUse, spendServerUse, type ServerAddress } from "../access.ts";
import type { ActivityAction } from "../activity/kinds.ts";
import { DomainError, domainErrors, fail, type DomainErrorReason } from "../errors.ts";
import { isOnline } from "../agents/presence.ts";
import { AgentUnanswered, unansweredRefusal } from "../agents/answer-waits.ts";
import { fileTimeoutMs } from "../agents/file-router.ts";
import type { FileOperation } from "../agents/connection-files.ts";
import { agentServer, type AgentServer } from "./console-methods.ts";

export type FileDeps = Pick<CoreDeps, "activity" | "clock" | "config" | "files" | "statements">;

/** The most bytes writeFile takes (the agent's readFile limit too: what is written can be read back). */
export const maxFileBytes = 5 * 1024 * 1024;

/** The agent's refusals core passes on by their reason (anything else is a failure of the agent's). */
const agentReasons = new Set<string>([
  "invalid_path",
  "outside_root",
  "not_found",
  "denied",
  "not_a_regular_file",
  "not_a_directory",
  "already_exists",
  "directory_not_empty",
  "read_only",
  "files_off",
  "too_large",
  "edit_conflict",
]);

/** A client's path, normalized as the agent will read it ("" for the directory itself), or the refusal the agent would give. */
export function filePath(text: string): string {
  try {
    return parseClientPath(text).relative;
  } catch (error) {
    if (error instanceof ClientPathError) throw fail(error.reason, error.message);
    throw error;
  }
}

/** What one call does: read or change, at which paths, and the operation the agent runs. */
export interface FileCall {
  access: "read" | "write";
  /** The normalized paths the call touches; each must be within the caller's grant. */
  paths: string[];
  /** listFiles: the path is a folder the caller may pass through to reach their paths. */
  browsing?: boolean;
  /** The operation, or what makes it once the caller's path access is known. */
  operation: FileOperation | ((access: FilePathAccess) => FileOperation);
}

/** What the agent answers an operation that it did. */
export type Answer = Exclude<FileResult["result"], { case: "failure" } | { case: undefined }>;

type AnswerValues = { [A in Answer as A["case"]]: A["value"] };

/** What a call gave, and whom it was for. */
export interface FileOutcome {
  caller: UserCaller;
  server: AgentServer;
  result: Answer;
  access: FilePathAccess;
}

/**
 * A caller's way to one server's files once the three checks passed: each `send` runs one
 * operation on the agent and answers its result, or throws its refusal. A transfer sends many.
 */
export interface FileSession {
  caller: UserCaller;
  server: AgentServer;
  access: FilePathAccess;
  /** The call's operation, made once the caller's access was known (before anything was spent). */
  operation?: FileOperation;
  send(operation: FileOperation): Promise<Answer>;
}

/**
 * The checks of a call (see the module's comment) and the grant's use it spends (a change spends
 * one, once, however many operations follow); `paths` must all be within the caller's access.
 */
/** How an unanswered file operation is told (answer-waits.ts). */
const fileUnanswered = { many: "file operations", unknown: "a change it asked for may or may not have been made; look before trying again" };

export async function openFileSession(
  deps: FileDeps,
  address: ServerAddress,
  ctx: HandlerContext,
  call: Omit<FileCall, "operation"> & Partial<Pick<FileCall, "operation">>,
): Promise<FileSession> {
  const caller = requireUser(ctx);
  const db = deps.statements.db(entityManager(ctx));
  const use = {
    action: call.access === "read" ? ("files_read" as const) : ("files_write" as const),
    now: deps.clock.now(),
    plans: deps.config.plans,
    spend: call.access === "write",
  };
  const judged = await judgeServerRow(db.query, caller, address, use, serverScope(ctx));
  const access = fileAccessOf(judged);
  for (const path of call.paths) {
    const refusal = filePathRefusal(access, path, call.browsing);
    if (refusal) throw refusal;
  }
  const operation = typeof call.operation === "function" ? call.operation(access) : call.operation;
  const server = agentServer(judged.row);
  if (!isOnline(server, use.now) || !server.agentConnectionId) throw fail("agent_offline", "the server's agent is offline");
  if (server.agentFiles === "off") {
    throw fail("files_off", "the server's agent serves no files (its operator started it with `--files off`, or it is older than the files panel)");
  }
  if (call.access === "write" && server.agentFiles !== "on") throw fail("read_only", "the server's agent allows reading files only (`--files read-only`)");
  await spendServerUse(db.query, caller, judged, use);
  const target = { serverId: server.id, connectionId: server.agentConnectionId };
  let sentAny = false;
  const send = async (operation: FileOperation): Promise<Answer> => {
    let result: FileResult;
    try {
      result = await deps.files.execute(target, randomUUID(), { operation, confined: !access.everywhere }, fileTimeoutMs);
      sentAny = true;
    } catch (error) {
      if (!(error instanceof AgentUnanswered)) throw error;
      // Turned away before the agent got anything: nothing can have changed.
      if (!error.sent && !sentAny) await returnServerUse(db.query, judged, use);
      sentAny ||= error.sent;
      throw unansweredRefusal(error.outcome, error.sent, fileTimeoutMs, fileUnanswered);
    }
    if (result.result.case === "failure") throw agentRefusal(result.result.value.reason, result.result.value.message);
    if (!result.result.case) throw fail("failed_precondition", "the server's agent gave an empty answer");
    return result.result as Answer;
  };
  return { caller, server, access, operation, send };
}

/** Runs one call through the three checks, and answers the agent's result or its refusal. */
export async function runFileCall(deps: FileDeps, address: ServerAddress, ctx: HandlerContext, call: FileCall): Promise<FileOutcome> {
  const session = await openFileSession(deps, address, ctx, call);
  return { caller: session.caller, server: session.server, access: session.access, result: await session.send(session.operation!) };
}

/** The agent's refusal as the caller hears it: by its reason when it is one of the contract's. */
function agentRefusal(reason: string, message: string): DomainError {
  const text = message || reason;
  if (agentReasons.has(reason) && reason in domainErrors) return fail(reason as DomainErrorReason, text);
  if (reason === "busy") return new DomainError("server_busy", text);
  return fail("failed_precondition", `the server's agent could not do it: ${text}`);
}

/** The answer of the operation `expected`, or a failure: an agent that answers a read with a listing is broken. */
export function resultOf<C extends keyof AnswerValues>(outcome: Pick<FileOutcome, "result">, expected: C): AnswerValues[C] {
  const answer = outcome.result;
  if (answer.case !== expected) throw fail("failed_precondition", `the server's agent answered with ${answer.case}, not ${expected}`);
  return answer.value as AnswerValues[C];
}

/** A change on record: who, which server, the action, and its facts (paths, sizes, hashes). */
export function recordChange(deps: FileDeps, outcome: Pick<FileOutcome, "caller" | "server">, action: ActivityAction, details: Record<string, string>): Promise<void> {
  return deps.activity.append(outcome.caller, {
    organizationId: outcome.server.organizationId,
    action,
    targetType: "server",
    targetId: outcome.server.id,
    serverId: outcome.server.id,
    details,
  });
}

/** Whether `content` is text as it is (UTF-8, no NUL), so that readFile can answer it as text. */
function isText(content: Uint8Array): boolean {
  if (content.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(content);
    return true;
  } catch {
    return false;
  }
}

/** writeFile's content as bytes: text as UTF-8, or base64 checked strictly (a typo is refused, not decoded to something else). */
function contentBytes(content: string, encoding: string | undefined): Buffer {
  if (encoding !== "base64") return Buffer.from(content, "utf8");
  const compact = content.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) {
    throw fail("invalid_argument", 'content is not valid base64 (encoding is "base64")');
  }
  return Buffer.from(compact, "base64");
}

export function listFiles(deps: FileDeps, req: ListFilesRequest, ctx: HandlerContext) {
  const path = filePath(req.path);
  return runFileCall(deps, req, ctx, { access: "read", paths: [path], browsing: true, operation: { case: "list", value: { path, cursor: req.cursor ?? "" } } }).then(
    (outcome) => {
      const listing = resultOf(outcome, "listing");
      // A member sees what their grant reaches, and the folders on the way to it.
      const entries = listing.entries.filter((entry) => outcome.access.visibleEntry(listing.path, entry.name, entry.type === FileType.DIRECTORY));
      return create(ListFilesResponseSchema, { path: listing.path, entries, nextCursor: listing.nextCursor });
    },
  );
}

export async function readFile(deps: FileDeps, req: ReadFileRequest, ctx: HandlerContext) {
  const path = filePath(req.path);
  const outcome = await runFileCall(deps, req, ctx, { access: "read", paths: [path], operation: { case: "read", value: { path } } });
  const file = resultOf(outcome, "content");
  const text = isText(file.content);
  return create(ReadFileResponseSchema, {
    path: file.path,
    content: Buffer.from(file.content).toString(text ? "utf8" : "base64"),
    encoding: text ? "utf8" : "base64",
    size: BigInt(file.content.length),
    sha256: file.sha256,
    modifiedAt: file.modifiedAt,
  });
}

export async function writeFile(deps: FileDeps, req: WriteFileRequest, ctx: HandlerContext) {
  const path = filePath(req.path);
  const content = contentBytes(req.content, req.encoding);
  if (content.length > maxFileBytes) throw fail("too_large", `content is larger than ${maxFileBytes} bytes; upload it instead`);
  const operation: FileOperation = { case: "write", value: { path, content, expectedSha256: req.expectedSha256 } };
  const outcome = await runFileCall(deps, req, ctx, { access: "write", paths: [path], operation });
  const written = resultOf(outcome, "written");
  await recordChange(deps, outcome, "server.file_written", {
    path: written.path,
    size: String(written.size),
    sha256: written.sha256,
    ...(req.expectedSha256 && { previousSha256: req.expectedSha256 }),
  });
  return create(WriteFileResponseSchema, {
    path: written.path,
    size: written.size,
    sha256: written.sha256,
    modifiedAt: written.modifiedAt ?? timestampFromDate(deps.clock.now()),
  });
}

export async function createDirectory(deps: FileDeps, req: CreateDirectoryRequest, ctx: HandlerContext) {
  const path = filePath(req.path);
  const outcome = await runFileCall(deps, req, ctx, { access: "write", paths: [path], operation: { case: "createDirectory", value: { path } } });
  resultOf(outcome, "done");
  await recordChange(deps, outcome, "server.directory_created", { path });
  return create(CreateDirectoryResponseSchema, { path });
}

export async function moveFile(deps: FileDeps, req: MoveFileRequest, ctx: HandlerContext) {
  const [from, to] = [filePath(req.from), filePath(req.to)];
  // A folder moves with all it holds: where the access reaches the two paths only, files alone move.
  const operation = (access: FileOutcome["access"]): FileOperation => ({
    case: "move",
    value: { from, to, overwrite: req.overwrite ?? false, filesOnly: !(access.allowsAllUnder(from) && access.allowsAllUnder(to)) },
  });
  const outcome = await runFileCall(deps, req, ctx, { access: "write", paths: [from, to], operation });
  resultOf(outcome, "done");
  await recordChange(deps, outcome, "server.file_moved", { from, to, ...(req.overwrite && { overwrite: "true" }) });
  return create(MoveFileResponseSchema, { from, to });
}

export async function deleteFile(deps: FileDeps, req: DeleteFileRequest, ctx: HandlerContext) {
  const path = filePath(req.path);
  const recursive = req.recursive ?? false;
  const operation = (access: FileOutcome["access"]): FileOperation => {
    if (recursive && !access.allowsAllUnder(path)) {
      throw fail(
        "permission_denied",
        `your access grant to this server does not reach everything under ${JSON.stringify(path)}, so it cannot be deleted with all it holds`,
      );
    }
    return { case: "delete", value: { path, recursive } };
  };
  const outcome = await runFileCall(deps, req, ctx, { access: "write", paths: [path], operation });
  resultOf(outcome, "done");
  await recordChange(deps, outcome, "server.file_deleted", { path, ...(req.recursive && { recursive: "true" }) });
  return create(DeleteFileResponseSchema, { path });
}
