/** The conversations' rows as the contract's messages. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ChatMessageSchema,
  ConversationSchema,
  MessageRole,
  PendingToolCallSchema,
  ToolCallStatus,
  type ChatMessage,
  type Conversation,
  type PendingToolCall,
} from "../../gen/outpost/chat/v1/chat_service_pb.js";
import type { ConversationRow, MessageRow, ToolStatus } from "./conversation-queries.ts";
import type { CallPreview } from "./tool-definition.ts";

const roles = { user: MessageRole.USER, assistant: MessageRole.ASSISTANT, tool: MessageRole.TOOL } as const;
const statuses: Record<ToolStatus, ToolCallStatus> = {
  succeeded: ToolCallStatus.SUCCEEDED,
  failed: ToolCallStatus.FAILED,
  refused: ToolCallStatus.REFUSED,
  pending: ToolCallStatus.PENDING,
  denied: ToolCallStatus.DENIED,
  running: ToolCallStatus.RUNNING,
};

export function conversationToProto(row: ConversationRow): Conversation {
  return create(ConversationSchema, {
    id: row.id,
    organizationId: row.organization_id,
    serverId: row.server_id ?? "",
    title: row.title,
    createdAt: timestampFromDate(new Date(row.created_at)),
    updatedAt: timestampFromDate(new Date(row.updated_at)),
  });
}

export function messageToProto(row: MessageRow): ChatMessage {
  return create(ChatMessageSchema, {
    id: row.id,
    seq: row.seq,
    role: roles[row.role],
    content: row.content,
    toolCalls: (row.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
    toolCallId: row.tool_call_id ?? "",
    toolName: row.tool_name ?? "",
    toolStatus: row.tool_status ? statuses[row.tool_status] : ToolCallStatus.UNSPECIFIED,
    createdAt: timestampFromDate(new Date(row.created_at)),
  });
}

/** A pending tool message's stored content: what the person is asked to allow. */
export interface PendingContent {
  server_id: string;
  server_name: string;
  /** The call's summary: a command as it runs; for a file edit, its path (shown in `preview`). */
  command: string;
  /** A file edit's diff and the versions it is bound to. */
  preview?: CallPreview;
}

export function pendingToProto(row: MessageRow): PendingToolCall {
  const facts = JSON.parse(row.content) as { pending: PendingContent };
  const edit = facts.pending.preview?.file_edit;
  return create(PendingToolCallSchema, {
    toolCallId: row.tool_call_id ?? "",
    toolName: row.tool_name ?? "",
    serverId: facts.pending.server_id,
    serverName: facts.pending.server_name,
    command: edit ? "" : facts.pending.command,
    fileEdit: edit && { path: edit.path, sha256: edit.sha256, diff: edit.diff, linesAdded: edit.lines_added, linesRemoved: edit.lines_removed },
  });
}
