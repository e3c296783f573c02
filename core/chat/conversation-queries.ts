/**
 * The conversations' plain SQL. A conversation is found only with its owner's id and its
 * organization's, so another member's id finds nothing. Messages take the next `seq` under the
 * conversation's row lock (and a unique constraint besides), so two writers never share a place.
 */
import { randomUUID } from "node:crypto";
import type { Query } from "../db/statements.ts";
import type { ModelToolCall } from "./model.ts";

export type Role = "user" | "assistant" | "tool";
export type ToolStatus = "succeeded" | "failed" | "refused" | "pending" | "denied" | "running";

export interface ConversationRow {
  id: string;
  organization_id: string;
  server_id: string | null;
  user_id: string;
  title: string;
  created_at: Date;
  updated_at: Date;
}

export interface MessageRow {
  id: string;
  conversation_id: string;
  seq: number;
  role: Role;
  content: string;
  tool_calls: ModelToolCall[] | null;
  tool_call_id: string | null;
  tool_name: string | null;
  tool_status: ToolStatus | null;
  created_at: Date;
}

const conversationColumns = "id, organization_id, server_id, user_id, title, created_at, updated_at";
const messageColumns = "id, conversation_id, seq, role, content, tool_calls, tool_call_id, tool_name, tool_status, created_at";

/** The caller's conversation in the organization, optionally locked for the transaction. */
export async function findConversation(query: Query, ids: { organizationId: string; userId: string; conversationId: string }, lock = false): Promise<ConversationRow | undefined> {
  const [row] = await query<ConversationRow>(
    `select ${conversationColumns} from chat_conversations where id = ? and organization_id = ? and user_id = ?${lock ? " for update" : ""}`,
    [ids.conversationId, ids.organizationId, ids.userId],
  );
  return row;
}

export async function insertConversation(query: Query, c: { organizationId: string; serverId: string | null; userId: string; title: string }): Promise<ConversationRow> {
  const [row] = await query<ConversationRow>(
    `insert into chat_conversations (id, organization_id, server_id, user_id, title, created_at, updated_at) values (?, ?, ?, ?, ?, now(), now()) returning ${conversationColumns}`,
    [randomUUID(), c.organizationId, c.serverId, c.userId, c.title],
  );
  return row;
}

/** The caller's conversations, newest first, after the cursor's row. */
export function listConversations(query: Query, f: { organizationId: string; userId: string; serverId?: string; limit: number; after?: { createdAt: Date; id: string } }): Promise<ConversationRow[]> {
  const values: unknown[] = [f.organizationId, f.userId];
  let where = "organization_id = ? and user_id = ?";
  if (f.serverId) {
    where += " and server_id = ?";
    values.push(f.serverId);
  }
  if (f.after) {
    where += " and (created_at, id) < (?::timestamptz, ?::uuid)";
    values.push(f.after.createdAt, f.after.id);
  }
  return query(`select ${conversationColumns} from chat_conversations where ${where} order by created_at desc, id desc limit ?`, [...values, f.limit]);
}

export async function deleteConversation(query: Query, ids: { organizationId: string; userId: string; conversationId: string }): Promise<boolean> {
  const rows = await query(`delete from chat_conversations where id = ? and organization_id = ? and user_id = ? returning 1`, [ids.conversationId, ids.organizationId, ids.userId]);
  return rows.length === 1;
}

export function listMessages(query: Query, conversationId: string): Promise<MessageRow[]> {
  return query<MessageRow>(`select ${messageColumns} from chat_messages where conversation_id = ? order by seq`, [conversationId]);
}

export interface NewMessage {
  role: Role;
  content: string;
  toolCalls?: ModelToolCall[];
  toolCallId?: string;
  toolName?: string;
  toolStatus?: ToolStatus;
  executionToken?: string;
}

/** Appends a message (the conversation's row must be locked by the transaction); bumps `updated_at`. */
export async function appendMessage(query: Query, conversationId: string, m: NewMessage): Promise<MessageRow> {
  const [row] = await query<MessageRow>(
    `insert into chat_messages (id, conversation_id, seq, role, content, tool_calls, tool_call_id, tool_name, tool_status, execution_token, created_at)
     values (?, ?, (select coalesce(max(seq), 0) + 1 from chat_messages where conversation_id = ?), ?, ?, ?::jsonb, ?, ?, ?, ?, now())
     returning ${messageColumns}`,
    [
      randomUUID(),
      conversationId,
      conversationId,
      m.role,
      m.content,
      m.toolCalls ? JSON.stringify(m.toolCalls) : null,
      m.toolCallId ?? null,
      m.toolName ?? null,
      m.toolStatus ?? null,
      m.executionToken ?? null,
    ],
  );
  await query(`update chat_conversations set updated_at = now() where id = ?`, [conversationId]);
  return row;
}

/** The tool message waiting for confirmation, if any. */
export async function pendingToolMessage(query: Query, conversationId: string): Promise<MessageRow | undefined> {
  const [row] = await query<MessageRow>(`select ${messageColumns} from chat_messages where conversation_id = ? and tool_status = 'pending' order by seq limit 1`, [conversationId]);
  return row;
}

/**
 * The call waiting for confirmation in the conversation whose token has expired (by the database's
 * clock), if there is one: it can no longer be allowed.
 */
export async function expiredWait(query: Query, conversationId: string, hash: (token: string) => string): Promise<string | undefined> {
  const [waiting] = await query<{ tool_call_id: string; execution_token: string }>(
    `select tool_call_id, execution_token from chat_messages where conversation_id = ? and tool_status = 'pending' and execution_token is not null order by seq limit 1`,
    [conversationId],
  );
  if (!waiting) return undefined;
  const [action] = await query<{ expired: boolean }>(`select expires_at <= now() as expired from ocelot_tool_actions where token_hash = ?`, [hash(waiting.execution_token)]);
  return !action || action.expired ? waiting.tool_call_id : undefined;
}

/**
 * Takes the pending call `toolCallId` off the waiting list, once: moves it to `running` and returns
 * its token and its row; undefined when it is not pending (settled already, or by a concurrent call).
 */
export async function claimPending(query: Query, conversationId: string, toolCallId: string): Promise<{ row: MessageRow; token: string } | undefined> {
  const [row] = await query<MessageRow & { execution_token: string }>(
    `update chat_messages m set tool_status = 'running', execution_token = null
       from (select id, execution_token from chat_messages where conversation_id = ? and tool_call_id = ? and tool_status = 'pending' for update) old
      where m.id = old.id returning ${messageColumns.split(", ").map((c) => `m.${c}`).join(", ")}, old.execution_token`,
    [conversationId, toolCallId],
  );
  return row && { row, token: row.execution_token };
}

/** Settles a tool message: its result and status. */
export async function settleToolMessage(query: Query, id: string, status: ToolStatus, content: string): Promise<MessageRow> {
  const [row] = await query<MessageRow>(`update chat_messages set tool_status = ?, content = ?, execution_token = null where id = ? returning ${messageColumns}`, [status, content, id]);
  return row;
}
