/**
 * ChatService: the assistant's conversations. A conversation is its owner's alone (another member,
 * an owner or admin included, finds nothing). Asking (SendMessage, StreamMessage) counts a
 * question against the day's cap, stores it, and runs the answer (turn.ts); ConfirmToolCall and
 * StreamConfirmToolCall settle a call that waits for the person and continue it. The unary
 * methods collect what the streamed ones give.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  ChatEventSchema,
  ChatService,
  TurnStatus,
  type ChatEvent,
  type ChatMessage,
  type Conversation,
  type PendingToolCall,
} from "../../gen/outpost/chat/v1/chat_service_pb.js";
import { requireMember, requireServer } from "../access.ts";
import { createWaker } from "../stream-wait.ts";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { DomainError, fail, fieldFail } from "../errors.ts";
import { decodeCursor, pageOf } from "../page-cursor.ts";
import { recordAssistantQuery, tokenHash } from "../ocelot/gate.ts";
import { applyTokenStep } from "../ocelot/token-steps.ts";
import { releaseUsage } from "../ocelot/ocelot-queries.ts";
import {
  appendMessage,
  claimPending,
  deleteConversation,
  expiredWait,
  findConversation,
  insertConversation,
  listConversations,
  listMessages,
  pendingToolMessage,
  type ConversationRow,
  type MessageRow,
} from "./conversation-queries.ts";
import { conversationToProto, messageToProto, pendingToProto, type PendingContent } from "./chat-proto.ts";
import { continueTurn, inConversation, notConfigured, releaseToken, runAuthorized, settle, type ChatEventInit, type Emit, type TurnEnv } from "./turn.ts";
import { chatTools } from "./chat-tools.ts";
import type { ChatTool, ParsedCall } from "./tool-definition.ts";
import { resultContent } from "./prompt.ts";

type Impl = ServiceImpl<typeof ChatService>;

/** A conversation's title: its first question on one line, at most 80 characters. */
export function titleOf(content: string): string {
  const line = content.replace(/\s+/g, " ").trim();
  return line.length <= 80 ? line : `${line.slice(0, 79)}…`;
}

interface Ask {
  organizationSlug: string;
  conversationId?: string;
  serverId?: string;
  content: string;
}

interface Decision {
  organizationSlug: string;
  conversationId: string;
  toolCallId: string;
  allow: boolean;
}

/**
 * A call that waited for confirmation past its token's life can no longer be allowed: a new
 * question settles it as not run (its quota given back) instead of being refused behind it.
 * Whether it did (the question may then be stored).
 */
async function endExpiredWait(env: TurnEnv): Promise<boolean> {
  const { deps, conversation } = env;
  const toolCallId = await expiredWait(deps.statements.on(entityManager(env.ctx)), conversation.id, tokenHash);
  if (!toolCallId) return false;
  const claimed = await inConversation(env, (tx) => claimPending(tx.query, conversation.id, toolCallId));
  if (!claimed) return true;
  const tool = chatTools.get(claimed.row.tool_name ?? "")!;
  // The gate finds the token expired: it records that and gives the quota back.
  await releaseToken(env, tool.gateTool, claimed.token);
  await settle(env, claimed.row, "refused", resultContent("refused", "not run: its confirmation expired before it was allowed"), () => {});
  return true;
}

/**
 * Stores the question (a new conversation if none is named) once the day's cap allows it; or, when
 * a call in the conversation waits for confirmation, the conversation it waits in.
 */
function storeQuestion(deps: CoreDeps, ctx: HandlerContext, caller: UserCaller, req: Ask) {
  return entityManager(ctx).transactional(async (tx) => {
    const db = deps.statements.db(tx);
    const access = await requireMember(tx, caller, req.organizationSlug);
    if (!deps.config.assistantModel) throw notConfigured();
    let conversation: ConversationRow | undefined;
    if (req.conversationId) {
      if (req.serverId !== undefined)
        throw fieldFail([{ field: "server_id", message: "a conversation stays about the server it started with; leave server_id out when continuing one" }]);
      conversation = await findConversation(db.query, { organizationId: access.organization.id, userId: caller.user.id, conversationId: req.conversationId }, true);
      if (!conversation) throw fail("not_found", "conversation not found");
      if (await pendingToolMessage(db.query, conversation.id)) return { waiting: { access, conversation } };
    } else {
      let serverId: string | null = null;
      if (req.serverId) {
        const onServer = await requireServer(
          db,
          caller,
          { serverId: req.serverId, organizationId: access.organization.id },
          { action: "view", now: deps.clock.now(), plans: deps.config.plans },
        );
        serverId = onServer.server.id;
      }
      conversation = await insertConversation(db.query, { organizationId: access.organization.id, serverId, userId: caller.user.id, title: titleOf(req.content) });
    }
    const { day } = await recordAssistantQuery(db, deps.config, access);
    const question = await appendMessage(db.query, conversation.id, { role: "user", content: req.content });
    await tx.flush();
    return { stored: { access, conversation, question, day } };
  });
}

/** Stores the question, then answers it. */
async function ask(deps: CoreDeps, ctx: HandlerContext, req: Ask, emit: Emit): Promise<void> {
  const caller = requireUser(ctx);
  let result = await storeQuestion(deps, ctx, caller, req);
  if (result.waiting && (await endExpiredWait({ deps, ctx, caller, ...result.waiting, slug: req.organizationSlug })))
    result = await storeQuestion(deps, ctx, caller, req);
  if (result.waiting) throw fail("failed_precondition", "a tool call waits for your confirmation in this conversation: allow or deny it first");
  const stored = result.stored!;
  emit({ event: { case: "started", value: { conversation: conversationToProto(stored.conversation), userMessage: messageToProto(stored.question) } } });
  const env: TurnEnv = { deps, ctx, caller, access: stored.access, slug: req.organizationSlug, conversation: stored.conversation };
  try {
    await continueTurn(env, emit);
  } catch (error) {
    if (error instanceof DomainError && error.reason === "model_unavailable") await giveBackUnanswered(deps, ctx, stored);
    throw error;
  }
}

/**
 * A question the model never answered at all (it failed before writing anything) does not count
 * against the day's questions: the count is given back. Once the model answered something (a tool
 * call, text), the question counted.
 */
async function giveBackUnanswered(
  deps: CoreDeps,
  ctx: HandlerContext,
  stored: { access: { organization: { id: string } }; conversation: ConversationRow; question: { seq: number }; day: string },
): Promise<void> {
  const query = deps.statements.on(entityManager(ctx));
  const after = (await listMessages(query, stored.conversation.id)).filter((m) => m.seq > stored.question.seq);
  if (!after.some((m) => m.role === "assistant")) await releaseUsage(query, stored.access.organization.id, stored.day, "queries", 1);
}

/** The caller's own conversation in the organization (anyone else's is not_found), with what finding it took. */
async function ownConversation(deps: CoreDeps, ctx: HandlerContext, req: { organizationSlug: string; conversationId: string }) {
  const caller = requireUser(ctx);
  const db = deps.statements.db(entityManager(ctx));
  const access = await requireMember(db.em, caller, req.organizationSlug);
  const ids = { organizationId: access.organization.id, userId: caller.user.id, conversationId: req.conversationId };
  const conversation = await findConversation(db.query, ids);
  if (!conversation) throw fail("not_found", "conversation not found");
  return { caller, db, access, ids, conversation };
}

/** Allows or denies the call that waits, runs it if allowed, and continues the answer. */
async function decide(deps: CoreDeps, ctx: HandlerContext, req: Decision, emit: Emit): Promise<void> {
  const { caller, db, access, conversation } = await ownConversation(deps, ctx, req);
  if (!deps.config.assistantModel) throw notConfigured();
  const env: TurnEnv = { deps, ctx, caller, access, slug: req.organizationSlug, conversation };
  const claimed = await inConversation(env, (tx) => claimPending(tx.query, conversation.id, req.toolCallId));
  if (!claimed) throw fail("failed_precondition", "no tool call with this id waits for confirmation in this conversation (it was settled already)");
  emit({ event: { case: "started", value: { conversation: conversationToProto(conversation) } } });
  const { row, token } = claimed;
  const tool = chatTools.get(row.tool_name ?? "")!;
  const history = await listMessages(db.query, conversation.id);
  const parsed = shownCall(tool, row, history, conversation.server_id);
  if (!parsed) {
    await releaseToken(env, tool.gateTool, token);
    await settle(env, row, "refused", resultContent("refused", "not run: the call does not match the command that was shown"), emit);
    return continueTurn(env, emit);
  }
  try {
    await applyTokenStep(db.em, deps.statements, caller, { organizationSlug: req.organizationSlug, executionToken: token }, { kind: "confirm", allow: req.allow });
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    await settle(env, row, "refused", resultContent("refused", error.message), emit);
    if (error.reason === "emergency_stop") throw error;
    return continueTurn(env, emit);
  }
  if (!req.allow) {
    await settle(env, row, "denied", resultContent("denied", "the user denied this action; it did not run"), emit);
  } else {
    const outcome = await runAuthorized(env, tool, parsed, token);
    await settle(env, row, outcome.toolStatus, outcome.content, emit);
  }
  await continueTurn(env, emit);
}

/**
 * The pending call as it will run, only if that is exactly what the person was shown: the model's
 * call with the row's id (the one of them: ids are unique in a conversation since uniqueCallIds,
 * but not in conversations stored before) parses to the stored command on the stored server; a
 * call shown with a preview (a file edit's diff) runs bound to that preview.
 */
function shownCall(tool: ChatTool, row: MessageRow, history: readonly MessageRow[], scope: string | null): ParsedCall | undefined {
  const shown = (JSON.parse(row.content) as { pending: PendingContent }).pending;
  const calls = history.flatMap((m) => m.tool_calls ?? []).filter((c) => c.id === row.tool_call_id && c.function.name === row.tool_name);
  if (calls.length !== 1) return undefined;
  try {
    const parsed = tool.parse(JSON.parse(calls[0].function.arguments) as Record<string, unknown>, scope);
    if (parsed.summary !== shown.command || (parsed.serverId ?? "") !== shown.server_id) return undefined;
    if (!tool.preview) return parsed;
    return shown.preview ? { ...parsed, preview: shown.preview } : undefined;
  } catch {
    return undefined;
  }
}

/** The events of `run` as a stream, in order; its error ends the stream. */
async function* eventsOf(run: (emit: Emit) => Promise<void>): AsyncGenerator<ChatEvent> {
  const queue: ChatEventInit[] = [];
  let finished = false;
  let failure: unknown;
  const waker = createWaker();
  const emit: Emit = (event) => {
    queue.push(event);
    waker.wake();
  };
  void run(emit)
    .then(
      () => (finished = true),
      (error: unknown) => ((failure = error), (finished = true)),
    )
    .finally(() => waker.wake());
  for (;;) {
    if (queue.length) {
      yield create(ChatEventSchema, queue.shift()!);
      continue;
    }
    if (finished) break;
    // Until the next event or the end: the longest sleep a timer allows.
    await waker.sleep(2 ** 31 - 1);
  }
  if (failure) throw failure;
}

/** What the unary methods answer: the events put together. */
async function collect(run: (emit: Emit) => Promise<void>) {
  let conversation: Conversation | undefined;
  const messages: ChatMessage[] = [];
  let status = TurnStatus.UNSPECIFIED;
  let pending: PendingToolCall | undefined;
  for await (const { event } of eventsOf(run)) {
    if (event.case === "started") {
      conversation = event.value.conversation;
      if (event.value.userMessage) messages.push(event.value.userMessage);
    } else if (event.case === "assistantMessage" || event.case === "toolResult") messages.push(event.value);
    else if (event.case === "confirmationRequired") pending = event.value;
    else if (event.case === "done") status = event.value;
  }
  return { conversation, messages, status, pending };
}

export function createChatService(deps: CoreDeps): Impl {
  return {
    async listConversations(req, ctx) {
      const caller = requireUser(ctx);
      const db = deps.statements.db(entityManager(ctx));
      const access = await requireMember(db.em, caller, req.organizationSlug);
      const limit = req.limit ?? 30;
      const after = req.cursor ? decodeCursor(req.cursor) : undefined;
      const rows = await listConversations(db.query, { organizationId: access.organization.id, userId: caller.user.id, serverId: req.serverId, limit: limit + 1, after });
      const { page, nextCursor } = pageOf(rows, limit);
      return {
        conversations: page.map(conversationToProto),
        nextCursor,
        modelConfigured: deps.config.assistantModel !== undefined,
      };
    },

    async getConversation(req, ctx) {
      const { db, conversation } = await ownConversation(deps, ctx, req);
      const messages = await listMessages(db.query, conversation.id);
      const pending = messages.find((m) => m.tool_status === "pending");
      return { conversation: conversationToProto(conversation), messages: messages.map(messageToProto), pending: pending && pendingToProto(pending) };
    },

    async deleteConversation(req, ctx) {
      const { caller, db, ids, conversation } = await ownConversation(deps, ctx, req);
      // A call waiting for confirmation gives its token (and its quota) back.
      const pending = await pendingToolMessage(db.query, conversation.id);
      const claimed = pending && (await claimPending(db.query, conversation.id, pending.tool_call_id ?? ""));
      if (claimed) await releaseToken({ deps, ctx, caller, slug: req.organizationSlug }, chatTools.get(claimed.row.tool_name ?? "")!.gateTool, claimed.token);
      await deleteConversation(db.query, ids);
      return {};
    },

    async sendMessage(req, ctx) {
      return collect((emit) => ask(deps, ctx, req, emit));
    },

    async confirmToolCall(req, ctx) {
      return collect((emit) => decide(deps, ctx, req, emit));
    },

    async *streamMessage(req, ctx) {
      for await (const event of eventsOf((emit) => ask(deps, ctx, req, emit))) yield { event };
    },

    async *streamConfirmToolCall(req, ctx) {
      for await (const event of eventsOf((emit) => decide(deps, ctx, req, emit))) yield { event };
    },
  };
}
