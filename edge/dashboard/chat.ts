/**
 * The assistant's chat, the routes: read a conversation, ask, allow or deny a command or a file
 * change, delete.
 * Asking and confirming are plain forms: posted by the browser, core's SendMessage or
 * ConfirmToolCall waits for the whole answer and the page comes back with it; posted by chat.js
 * (Accept: text/event-stream), the same form answers with server-sent events relayed from core's
 * StreamMessage or StreamConfirmToolCall by relayStream, the one relay. Every event's text is
 * JSON the script puts into the page as text, never as HTML.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import type { ServerResponse } from "node:http";
import { ConnectError } from "@connectrpc/connect";
import { TurnStatus, type ChatEvent, type StreamConfirmToolCallResponse, type StreamMessageResponse } from "../../gen/outpost/chat/v1/chat_service_pb.js";
import { action, done, orgOf, page, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { httpStatus } from "../errors.ts";
import { answerError, relayStream } from "../event-streams.ts";
import { untilClientGone } from "../core-calls.ts";
import { chatPage, chatPath, diffLines } from "./chat-views.ts";
import { visibleLine } from "../../contract/one-line.ts";

function wantsEvents(ctx: Context): boolean {
  return ctx.accepts("html", "text/event-stream") === "text/event-stream";
}

/** One core event as the script reads it: its kind, and the facts it needs as JSON. */
function eventData(org: string, event: ChatEvent["event"]): [string, unknown] | undefined {
  switch (event.case) {
    case "started":
      return [
        "started",
        {
          conversationId: event.value.conversation?.id,
          title: event.value.conversation?.title,
          url: chatPath(org, event.value.conversation?.id),
          question: event.value.userMessage?.content,
        },
      ];
    case "delta":
      return ["delta", { text: event.value }];
    case "toolCallStarted":
      return ["tool", { name: event.value.name, arguments: event.value.arguments }];
    case "toolResult":
      return ["result", { name: event.value.toolName, status: event.value.toolStatus, content: event.value.content }];
    case "assistantMessage":
      return ["message", { content: event.value.content, toolCalls: event.value.toolCalls.length }];
    case "confirmationRequired": {
      const { toolCallId, serverName, command, fileEdit } = event.value;
      const edit = fileEdit && { path: visibleLine(fileEdit.path), added: fileEdit.linesAdded, removed: fileEdit.linesRemoved, lines: diffLines(fileEdit.diff) };
      return ["confirm", { toolCallId, serverName, command, ...(edit && { fileEdit: edit }) }];
    }
    case "done":
      return ["done", { awaitingConfirmation: event.value === TurnStatus.AWAITING_CONFIRMATION }];
    default:
      return undefined;
  }
}

const failedEvent = (error: unknown) => {
  const e = ConnectError.from(error);
  return `event: failed\ndata: ${JSON.stringify({ status: httpStatus(e.code), message: e.rawMessage })}\n\n`;
};

/** Relays a chat stream to chat.js. A refusal before the first event is a JSON error with its status. */
type ChatStreamItem = StreamMessageResponse | StreamConfirmToolCallResponse;

function relay(ctx: Context, deps: DashboardDeps, org: string, open: (signal: AbortSignal) => AsyncIterable<ChatStreamItem>): Promise<void> {
  return relayStream<ChatStreamItem>(ctx, deps.shutdown, {
    what: "assistant answer",
    open,
    refused: (ctx, error) => answerError(ctx, error, "assistant answer"),
    write: (res: ServerResponse, { event }) => {
      const data = event && eventData(org, event.event);
      if (data) res.write(`event: ${data[0]}\ndata: ${JSON.stringify(data[1])}\n\n`);
      if (event?.event.case === "done") return false;
    },
    endedBy: (error) => failedEvent(error),
  });
}

/** Without script: core's refusal on the page, with what was typed. */
async function refusedPage(ctx: Context, v: Viewer, error: unknown, conversationId: string | undefined, typed: string): Promise<void> {
  if (!(error instanceof ConnectError) || (httpStatus(error.code) >= 500 && httpStatus(error.code) !== 503)) throw error;
  const org = orgOf(v, ctx.params.slug);
  const conversation = conversationId ? await v.core.chat.getConversation({ organizationSlug: org.slug, conversationId }).catch(() => undefined) : undefined;
  await chatPage(ctx, v, { conversation, problem: error.rawMessage, typed }, httpStatus(error.code));
}

const ask =
  (deps: DashboardDeps): ActionHandler =>
  async (ctx, v, form) => {
    const org = orgOf(v, ctx.params.slug);
    const content = (form.get("content") ?? "").replace(/\r\n?/g, "\n");
    const req = { organizationSlug: org.slug, conversationId: form.get("conversationId") || undefined, serverId: form.get("serverId") || undefined, content };
    if (wantsEvents(ctx)) return relay(ctx, deps, org.slug, (signal) => v.core.chat.streamMessage(req, { signal }));
    const gone = untilClientGone(ctx);
    try {
      const sent = await v.core.chat.sendMessage(req, { signal: gone });
      done(ctx, chatPath(org, sent.conversation!.id));
    } catch (error) {
      if (gone.aborted) return; // the page left: its answer was stopped, and no one reads this one
      await refusedPage(ctx, v, error, req.conversationId, content);
    }
  };

const confirm =
  (deps: DashboardDeps): ActionHandler =>
  async (ctx, v, form) => {
    const org = orgOf(v, ctx.params.slug);
    const req = { organizationSlug: org.slug, conversationId: ctx.params.id, toolCallId: form.get("toolCallId") ?? "", allow: form.get("allow") === "yes" };
    if (wantsEvents(ctx)) return relay(ctx, deps, org.slug, (signal) => v.core.chat.streamConfirmToolCall(req, { signal }));
    const gone = untilClientGone(ctx);
    try {
      await v.core.chat.confirmToolCall(req, { signal: gone });
      done(ctx, chatPath(org, req.conversationId));
    } catch (error) {
      if (gone.aborted) return;
      await refusedPage(ctx, v, error, req.conversationId, "");
    }
  };

const remove: ActionHandler = async (ctx, v) => {
  const org = orgOf(v, ctx.params.slug);
  await v.core.chat.deleteConversation({ organizationSlug: org.slug, conversationId: ctx.params.id });
  done(ctx, chatPath(org));
};

export function chatRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/assistant",
    page(deps, (ctx, v) => chatPage(ctx, v)),
  );
  router.get(
    "/app/o/:slug/assistant/c/:id",
    page(deps, async (ctx, v) => {
      const org = orgOf(v, ctx.params.slug);
      const conversation = await v.core.chat.getConversation({ organizationSlug: org.slug, conversationId: ctx.params.id });
      await chatPage(ctx, v, { conversation });
    }),
  );
  router.post("/app/o/:slug/assistant", action(deps, ask(deps)));
  router.post("/app/o/:slug/assistant/c/:id/confirm", action(deps, confirm(deps)));
  router.post("/app/o/:slug/assistant/c/:id/delete", action(deps, remove));
}
