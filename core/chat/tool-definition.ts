/**
 * What a tool of the assistant is, as the chat router runs it (chat-tools.ts, file-tools.ts), and
 * how a tool reads the model's arguments. A tool's `parse` checks the arguments and says what the
 * call will do; `preview`, for a tool a person confirms with more to see than that, finds it with
 * the caller's access; `run` does it. Nothing here decides permissions: the gate does, first.
 */
import type { HandlerContext } from "@connectrpc/connect";
import type { OrganizationAccess } from "../access.ts";
import type { UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import type { Db } from "../db/sql.ts";
import { fail } from "../errors.ts";
import type { ToolName } from "../ocelot/tools.ts";
import { isUuid } from "../../contract/uuid.ts";

export interface ToolEnv {
  deps: CoreDeps;
  /** The chat call's context: the same caller and database as the person's own calls. */
  ctx: HandlerContext;
  db: Db;
  caller: UserCaller;
  access: OrganizationAccess;
}

/**
 * A file change as a person is asked to allow it: the line diff from the version read to what
 * will be written, and the two versions' sha256, so that what runs writes exactly that change
 * over exactly that version, or nothing.
 */
export interface FileEditPreview {
  path: string;
  /** The version the diff was made from. */
  sha256: string;
  /** What the file holds once written. */
  new_sha256: string;
  /** Unified, with 3 lines of context; whole (a change too large to show is not proposed). */
  diff: string;
  lines_added: number;
  lines_removed: number;
}

/** What a person is shown of a call besides its summary; stored with the call that waits for them. */
export interface CallPreview {
  file_edit: FileEditPreview;
}

export interface ParsedCall {
  serverId?: string;
  /** A files tool's path, normalized: the gate judges it against the caller's file paths. */
  path?: string;
  /** What the call does, for people (the gate's arguments summary; the command verbatim). */
  summary: string;
  input: Record<string, string | number>;
  /** What the person was shown (from `preview`); the run is bound to it. */
  preview?: CallPreview;
}

export interface ChatTool {
  name: string;
  gateTool: ToolName;
  description: string;
  parameters: Record<string, unknown>;
  parse(args: Record<string, unknown>, scopeServerId: string | null): ParsedCall;
  /** Made once the gate allowed the call, before a person is asked; a refusal here ends the call as failed. */
  preview?(env: ToolEnv, call: ParsedCall): Promise<CallPreview>;
  run(env: ToolEnv, call: ParsedCall): Promise<unknown>;
}

/** A string argument: present, not blank, at most `max` characters. */
export function text(args: Record<string, unknown>, name: string, max: number): string {
  const value = args[name];
  if (typeof value !== "string" || !value.trim()) throw fail("invalid_argument", `${name}: a non-empty string is needed`);
  if (value.length > max) throw fail("invalid_argument", `${name}: at most ${max} characters`);
  return value;
}

/** A whole-number argument from 1, capped at `max`; `fallback` when absent. */
export function count(args: Record<string, unknown>, name: string, fallback: number, max: number): number {
  const value = args[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) throw fail("invalid_argument", `${name}: a whole number from 1 to ${max}`);
  return Math.min(value, max);
}

/** The server a server tool acts on: the conversation's, or the one named in an organization's conversation. */
export function serverOf(args: Record<string, unknown>, scope: string | null): string {
  const named = args.server_id;
  if (scope) {
    if (named !== undefined && named !== scope)
      throw fail("invalid_argument", "server_id: this conversation is about one server only; use its id or leave server_id out");
    return scope;
  }
  if (typeof named !== "string" || !isUuid(named))
    throw fail("invalid_argument", "server_id: the id of one of the organization's servers is needed (servers_list gives them)");
  return named.toLowerCase();
}

export const serverParam = { server_id: { type: "string", description: "The server's id (from servers_list); may be left out in a conversation about one server." } };
