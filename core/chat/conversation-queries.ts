/**
 * The conversations' plain SQL. A conversation is found only with its owner's id and its
 * organization's, so another member's id finds nothing. Messages take the next `seq` under the
 * conversation's row lock (and a unique constraint besides), so two writers never share a place.
 */
import { randomUUID } from "node:crypto";
import { empty, sql, type SqlRunner } from "../db/sql.ts";
import { arrayOf, bool, int, nullable, oneOf, row, text, timestamp, type Row } from "../db/rows.ts";
import type { ModelToolCall } from "./model.ts";

const roles = ["user", "assistant", "tool"] as const;
const toolStatuses = ["succeeded", "failed", "refused", "pending", "denied", "running"] as const;
export type Role = (typeof roles)[number];
export type ToolStatus = (typeof toolStatuses)[number];

const conversationRow = row({
  id: text,
  organization_id: text,
  server_id: nullable(text),
  user_id: text,
  title: text,
  created_at: timestamp,
  updated_at: timestamp,
});
export type ConversationRow = Row<typeof conversationRow>;

/** A tool call as the model made it (core/chat/model.ts ModelToolCall), kept as JSON. */
const toolCall = row({ id: text, type: oneOf("function"), function: row({ name: text, arguments: text }) });

const messageFields = {
  id: text,
  conversation_id: text,
  seq: int,
  role: oneOf(...roles),
  content: text,
  tool_calls: nullable(arrayOf(toolCall)),
  tool_call_id: nullable(text),
  tool_name: nullable(text),
  tool_status: nullable(oneOf(...toolStatuses)),
  created_at: timestamp,
};
const messageRow = row(messageFields);
export type MessageRow = Row<typeof messageRow>;

const conversationColumns = sql`id, organization_id, server_id, user_id, title, created_at, updated_at`;
const messageColumns = sql`id, conversation_id, seq, role, content, tool_calls, tool_call_id, tool_name, tool_status, created_at`;

/** The caller's conversation in the organization, optionally locked for the transaction. */
export function findConversation(
  query: SqlRunner,
  ids: { organizationId: string; userId: string; conversationId: string },
  lock = false,
): Promise<ConversationRow | undefined> {
  return query.one(
    sql`select ${conversationColumns} from chat_conversations
         where id = ${ids.conversationId} and organization_id = ${ids.organizationId} and user_id = ${ids.userId} ${lock ? sql`for update` : empty}`,
    conversationRow,
  );
}

export async function insertConversation(
  query: SqlRunner,
  c: { organizationId: string; serverId: string | null; userId: string; title: string },
): Promise<ConversationRow> {
  const inserted = await query.one(
    sql`insert into chat_conversations (id, organization_id, server_id, user_id, title, created_at, updated_at)
        values (${randomUUID()}, ${c.organizationId}, ${c.serverId}, ${c.userId}, ${c.title}, now(), now()) returning ${conversationColumns}`,
    conversationRow,
  );
  return inserted!;
}

/** The caller's conversations, newest first, after the cursor's row. */
export function listConversations(
  query: SqlRunner,
  f: { organizationId: string; userId: string; serverId?: string; limit: number; after?: { createdAt: Date; id: string } },
): Promise<ConversationRow[]> {
  return query.rows(
    sql`select ${conversationColumns} from chat_conversations
         where organization_id = ${f.organizationId} and user_id = ${f.userId}
               ${f.serverId ? sql`and server_id = ${f.serverId}` : empty}
               ${f.after ? sql`and (created_at, id) < (${f.after.createdAt}::timestamptz, ${f.after.id}::uuid)` : empty}
         order by created_at desc, id desc limit ${f.limit}`,
    conversationRow,
  );
}

export async function deleteConversation(query: SqlRunner, ids: { organizationId: string; userId: string; conversationId: string }): Promise<boolean> {
  const deleted = await query.run(
    sql`delete from chat_conversations where id = ${ids.conversationId} and organization_id = ${ids.organizationId} and user_id = ${ids.userId}`,
  );
  return deleted === 1;
}

export function listMessages(query: SqlRunner, conversationId: string): Promise<MessageRow[]> {
  return query.rows(sql`select ${messageColumns} from chat_messages where conversation_id = ${conversationId} order by seq`, messageRow);
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
export async function appendMessage(query: SqlRunner, conversationId: string, m: NewMessage): Promise<MessageRow> {
  const appended = await query.one(
    sql`insert into chat_messages (id, conversation_id, seq, role, content, tool_calls, tool_call_id, tool_name, tool_status, execution_token, created_at)
        values (${randomUUID()}, ${conversationId}, (select coalesce(max(seq), 0) + 1 from chat_messages where conversation_id = ${conversationId}),
                ${m.role}, ${m.content}, ${m.toolCalls ? JSON.stringify(m.toolCalls) : null}::jsonb, ${m.toolCallId ?? null}, ${m.toolName ?? null},
                ${m.toolStatus ?? null}, ${m.executionToken ?? null}, now())
        returning ${messageColumns}`,
    messageRow,
  );
  await query.run(sql`update chat_conversations set updated_at = now() where id = ${conversationId}`);
  return appended!;
}

/** The tool message waiting for confirmation, if any. */
export function pendingToolMessage(query: SqlRunner, conversationId: string): Promise<MessageRow | undefined> {
  return query.one(
    sql`select ${messageColumns} from chat_messages where conversation_id = ${conversationId} and tool_status = 'pending' order by seq limit 1`,
    messageRow,
  );
}

/**
 * The call waiting for confirmation in the conversation whose token has expired (by the database's
 * clock), if there is one: it can no longer be allowed.
 */
export async function expiredWait(query: SqlRunner, conversationId: string, hash: (token: string) => string): Promise<string | undefined> {
  const waiting = await query.one(
    sql`select tool_call_id, execution_token from chat_messages
         where conversation_id = ${conversationId} and tool_status = 'pending' and execution_token is not null order by seq limit 1`,
    row({ tool_call_id: text, execution_token: text }),
  );
  if (!waiting) return undefined;
  const action = await query.one(
    sql`select expires_at <= now() as expired from ocelot_tool_actions where token_hash = ${hash(waiting.execution_token)}`,
    row({ expired: bool }),
  );
  return !action || action.expired ? waiting.tool_call_id : undefined;
}

/** A claimed message with the token it held. */
const claimedRow = row({ ...messageFields, token: text });

/**
 * Takes the pending call `toolCallId` off the waiting list, once: moves it to `running` and returns
 * its token and its row; undefined when it is not pending (settled already, or by a concurrent call).
 */
export async function claimPending(query: SqlRunner, conversationId: string, toolCallId: string): Promise<{ row: MessageRow; token: string } | undefined> {
  const claimed = await query.one(
    sql`update chat_messages m set tool_status = 'running', execution_token = null
          from (select id as old_id, execution_token as old_token from chat_messages
                 where conversation_id = ${conversationId} and tool_call_id = ${toolCallId} and tool_status = 'pending' for update) old
         where m.id = old.old_id returning ${messageColumns}, old.old_token as token`,
    claimedRow,
  );
  if (!claimed) return undefined;
  const { token, ...message } = claimed;
  return { row: message, token };
}

/** Settles a tool message: its result and status. */
export async function settleToolMessage(query: SqlRunner, id: string, status: ToolStatus, content: string): Promise<MessageRow> {
  const settled = await query.one(
    sql`update chat_messages set tool_status = ${status}, content = ${content}, execution_token = null where id = ${id} returning ${messageColumns}`,
    messageRow,
  );
  return settled!;
}
