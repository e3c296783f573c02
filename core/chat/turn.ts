/**
 * One answer of the assistant: the model is asked with the conversation so far and the tools the
 * caller may use now; each tool call it makes passes the gate (authorize, run, complete) with the
 * caller's own permissions, and its result goes back to the model as a `tool` message; this
 * repeats until the model answers in words, at most {@link maxModelCalls} times. A call that needs
 * a person's confirmation is stored `pending` with its execution token, and the answer pauses
 * until ConfirmToolCall (confirm.ts) settles it and continues here.
 *
 * Every step is stored when it is whole: the question before the model is asked, an assistant
 * message once the model finished it, a tool result once the tool finished. A model that fails
 * or is too slow leaves the conversation as it was (the question kept); so does the emergency
 * stop, whose refusal ends the answer after the refused call is stored.
 */
import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { TurnStatus, type ChatEventSchema } from "../../gen/outpost/chat/v1/chat_service_pb.js";
import { accessibleServers, type OrganizationAccess } from "../access.ts";
import { entityManager, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import type { Db } from "../db/sql.ts";
import { DomainError, fail } from "../errors.ts";
import { Server } from "../db/entities.ts";
import { authorizeToolAction, judgeWith, switchRefusal } from "../ocelot/gate.ts";
import { applyTokenStep } from "../ocelot/token-steps.ts";
import { readConfig, type ConfigRow } from "../ocelot/ocelot-queries.ts";
import { targetsServer, tools as gateTools } from "../ocelot/tools.ts";
import { appendMessage, findConversation, listMessages, settleToolMessage, type ConversationRow, type MessageRow, type NewMessage } from "./conversation-queries.ts";
import { askModel, type ModelToolCall } from "./model.ts";
import { chatTools, offered } from "./chat-tools.ts";
import type { ChatTool, ParsedCall, ToolEnv } from "./tool-definition.ts";
import { historyMessages, resultContent, systemPrompt } from "./prompt.ts";
import { messageToProto, pendingToProto, type PendingContent } from "./chat-proto.ts";

export type ChatEventInit = MessageInitShape<typeof ChatEventSchema>;
export type Emit = (event: ChatEventInit) => void;

/** Questions to the model per answer: up to five rounds of tool calls, then words. */
export const maxModelCalls = 6;
/** Servers a server tool is judged against when the conversation is about the whole organization. */
const serversJudged = 10;

export interface TurnEnv {
  deps: CoreDeps;
  ctx: HandlerContext;
  caller: UserCaller;
  access: OrganizationAccess;
  slug: string;
  conversation: ConversationRow;
}

/** Runs `work` in a transaction with the conversation's row locked (a deleted conversation: not_found). */
export async function inConversation<T>(env: TurnEnv, work: (db: Db) => Promise<T>): Promise<T> {
  return entityManager(env.ctx).transactional(async (tx) => {
    const db = env.deps.statements.db(tx);
    const ids = { organizationId: env.access.organization.id, userId: env.caller.user.id, conversationId: env.conversation.id };
    if (!(await findConversation(db.query, ids, true))) throw fail("not_found", "the conversation was deleted");
    const result = await work(db);
    await tx.flush();
    return result;
  });
}

/** Gives a call's token, and its quota, back without running it; a token the gate ended already is left as it is. */
export async function releaseToken(env: Pick<TurnEnv, "deps" | "ctx" | "caller" | "slug">, gateTool: string, token: string): Promise<void> {
  await applyTokenStep(
    entityManager(env.ctx),
    env.deps.statements,
    env.caller,
    { organizationSlug: env.slug, executionToken: token },
    { kind: "release", tool: gateTool },
  ).catch(() => {});
}

export const append = (env: TurnEnv, m: NewMessage) => inConversation(env, (db) => appendMessage(db.query, env.conversation.id, m));

/** The tools the caller may use now under `settings` (the gate's judgement without the quota): only these are offered. */
async function toolsAllowed(env: TurnEnv, db: Db, settings: ConfigRow): Promise<ChatTool[]> {
  const scope = env.conversation.server_id;
  const servers = scope ? [scope] : (await accessibleServers(db, env.caller, env.access, env.deps.clock.now())).slice(0, serversJudged).map((s) => s.id);
  const allowed: ChatTool[] = [];
  for (const tool of chatTools.values()) {
    const spec = gateTools.get(tool.gateTool)!;
    // A family switched off is off on every server.
    if (switchRefusal(settings, spec)) continue;
    for (const serverId of targetsServer(spec) ? servers : [undefined]) {
      const judged = await judgeWith(db, env.deps, env.caller, env.access, settings, { organizationSlug: env.slug, tool: tool.gateTool, serverId }, false);
      if (!judged.refusal) {
        allowed.push(tool);
        break;
      }
    }
  }
  return allowed;
}

/** Asks the model until it answers in words or a call waits for confirmation. */
export async function continueTurn(env: TurnEnv, emit: Emit): Promise<void> {
  const model = env.deps.config.assistantModel;
  if (!model) throw notConfigured();
  const db = env.deps.statements.db(entityManager(env.ctx));
  for (let calls = 0; ;) {
    const history = await listMessages(db.query, env.conversation.id);
    const last = [...history].reverse().find((m) => m.role === "assistant");
    const answered = new Set(history.filter((m) => m.role === "tool").map((m) => m.tool_call_id));
    const open = last && last.seq > lastUserSeq(history) ? (last.tool_calls ?? []).filter((c) => !answered.has(c.id)) : [];
    if (open.length) {
      for (const [i, call] of open.entries()) {
        const pending = await handleCall(env, call, calls > maxModelCalls - 1, emit, open.slice(i + 1));
        if (pending) {
          emit({ event: { case: "confirmationRequired", value: pendingToProto(pending) } });
          emit({ event: { case: "done", value: TurnStatus.AWAITING_CONFIRMATION } });
          return;
        }
      }
      if (calls >= maxModelCalls) break;
      continue;
    }
    if (calls >= maxModelCalls) break;
    calls++;
    const config = await readConfig(db.query, env.access.organization.id);
    const scope = env.conversation.server_id ? await db.em.findOne(Server, { id: env.conversation.server_id }) : null;
    const tools = calls < maxModelCalls ? await toolsAllowed(env, db, config) : [];
    const messages = [
      { role: "system" as const, content: systemPrompt(config, scope ? { serverId: scope.id, serverName: scope.name } : undefined) },
      ...historyMessages(history),
    ];
    const answer = await askModel(model, { messages, tools: tools.map(offered) }, (text) => emit({ event: { case: "delta", value: text } }), env.ctx.signal);
    answer.toolCalls = uniqueCallIds(answer.toolCalls, history);
    const stored = await append(env, { role: "assistant", content: answer.content, toolCalls: answer.toolCalls.length ? answer.toolCalls : undefined });
    emit({ event: { case: "assistantMessage", value: messageToProto(stored) } });
    for (const call of answer.toolCalls)
      emit({ event: { case: "toolCallStarted", value: { id: call.id, name: call.function.name, arguments: call.function.arguments } } });
    if (!answer.toolCalls.length) {
      emit({ event: { case: "done", value: TurnStatus.COMPLETED } });
      return;
    }
  }
  emit({ event: { case: "done", value: TurnStatus.COMPLETED } });
}

/**
 * The calls with ids unique in the conversation: a call is found by its id (its result, the
 * confirmation of a command), so an id the model left out, repeated in one answer or used before
 * (a model numbering its calls from call_0 each time, or told to reuse one) gets a fresh one.
 */
export function uniqueCallIds(calls: ModelToolCall[], history: readonly MessageRow[]): ModelToolCall[] {
  const used = new Set(history.flatMap((m) => [...(m.tool_calls ?? []).map((c) => c.id), ...(m.tool_call_id ? [m.tool_call_id] : [])]));
  return calls.map((call) => {
    const id = used.has(call.id) || !call.id ? `call_${randomUUID()}` : call.id;
    used.add(id);
    return id === call.id ? call : { ...call, id };
  });
}

const lastUserSeq = (history: MessageRow[]) => history.filter((m) => m.role === "user").reduce((max, m) => Math.max(max, m.seq), 0);

export function notConfigured(): DomainError {
  return fail("failed_precondition", "the assistant has no model configured on this Outpost; its operator sets OCELOT_MODEL_URL and OCELOT_MODEL (docs/chat.md)");
}

/**
 * One tool call: parsed, authorized by the gate, then run and completed, or stored `pending`
 * (returned) when a person must confirm it. Refusals and failures are stored as its result. The
 * emergency stop also settles the calls after it (`rest`) as not run, and ends the answer.
 */
async function handleCall(env: TurnEnv, call: ModelToolCall, overLimit: boolean, emit: Emit, rest: ModelToolCall[]): Promise<MessageRow | undefined> {
  const tool = chatTools.get(call.function.name);
  const base = { role: "tool" as const, toolCallId: call.id, toolName: call.function.name };
  const refuse = async (message: string) => {
    const row = await append(env, { ...base, toolStatus: "refused", content: resultContent("refused", message) });
    emit({ event: { case: "toolResult", value: messageToProto(row) } });
  };
  if (overLimit) return void (await refuse("not run: the limit of tool rounds for one answer is reached"));
  if (!tool) return void (await refuse(`there is no tool named "${call.function.name}"`));
  let parsed: ParsedCall;
  let authorization: Awaited<ReturnType<typeof authorizeToolAction>>;
  try {
    parsed = tool.parse(parseArguments(call.function.arguments), env.conversation.server_id);
    authorization = await entityManager(env.ctx).transactional(async (tx) => {
      const granted = await authorizeToolAction(env.deps.statements.db(tx), env.deps, env.caller, {
        organizationSlug: env.slug,
        tool: tool.gateTool,
        serverId: parsed.serverId,
        path: parsed.path,
        conversationId: env.conversation.id,
        argumentsSummary: parsed.summary.slice(0, 1000),
      });
      await tx.flush();
      return granted;
    });
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    await refuse(error.message);
    if (error.reason === "emergency_stop") {
      for (const other of rest)
        await append(env, {
          role: "tool",
          toolCallId: other.id,
          toolName: other.function.name,
          toolStatus: "refused",
          content: resultContent("refused", "not run: the emergency stop is on"),
        });
      throw error;
    }
    return undefined;
  }
  const previewed = await withPreview(env, tool, call.id, parsed, authorization.executionToken, emit);
  if (!previewed) return undefined;
  parsed = previewed;
  if (authorization.requiresConfirmation) {
    const server = parsed.serverId ? await entityManager(env.ctx).findOne(Server, { id: parsed.serverId }) : null;
    const pending: PendingContent = {
      server_id: parsed.serverId ?? "",
      server_name: server?.name ?? "",
      command: parsed.summary,
      ...(parsed.preview && { preview: parsed.preview }),
    };
    return append(env, { ...base, toolStatus: "pending", content: JSON.stringify({ status: "pending", pending }), executionToken: authorization.executionToken });
  }
  const row = await append(env, { ...base, ...(await runAuthorized(env, tool, parsed, authorization.executionToken)) });
  emit({ event: { case: "toolResult", value: messageToProto(row) } });
  return undefined;
}

/**
 * The call with what its person is shown besides its summary (a file edit's diff), found with the
 * caller's access once the gate allowed it; the call then runs bound to it. One that cannot be
 * shown (the file gone or binary, the change too large to show) is stored as failed and its token
 * released (its quota back): nothing was changed.
 */
async function withPreview(env: TurnEnv, tool: ChatTool, callId: string, parsed: ParsedCall, token: string, emit: Emit): Promise<ParsedCall | undefined> {
  if (!tool.preview) return parsed;
  try {
    return { ...parsed, preview: await tool.preview(toolEnv(env), parsed) };
  } catch (error) {
    await releaseToken(env, tool.gateTool, token);
    if (!(error instanceof DomainError)) throw error;
    const row = await append(env, { role: "tool", toolCallId: callId, toolName: tool.name, toolStatus: "failed", content: resultContent("failed", error.message) });
    emit({ event: { case: "toolResult", value: messageToProto(row) } });
    return undefined;
  }
}

/** What a tool runs with: the chat call's caller, context and database. */
const toolEnv = (env: TurnEnv): ToolEnv => ({ deps: env.deps, ctx: env.ctx, db: env.deps.statements.db(entityManager(env.ctx)), caller: env.caller, access: env.access });

function parseArguments(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text || "{}") as unknown;
    if (value && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Said below.
  }
  throw fail("invalid_argument", "the arguments are not a JSON object");
}

/**
 * Runs an authorized (and, if needed, confirmed) call and completes its token with the outcome;
 * returns the result to store. A tool's own refusal (an agent offline) is a failed result; a bug
 * gives the token back and is thrown. If the emergency stop was pressed while it ran, the gate
 * ends the token as stopped; what ran is still reported to the model.
 */
export async function runAuthorized(env: TurnEnv, tool: ChatTool, parsed: ParsedCall, token: string): Promise<{ toolStatus: "succeeded" | "failed"; content: string }> {
  let outcome: { toolStatus: "succeeded" | "failed"; content: string };
  try {
    const result = await tool.run(toolEnv(env), parsed);
    const failed = typeof result === "object" && result !== null && (result as { success?: boolean }).success === false;
    outcome = { toolStatus: failed ? "failed" : "succeeded", content: resultContent(failed ? "failed" : "succeeded", result) };
  } catch (error) {
    if (!(error instanceof DomainError)) {
      await releaseToken(env, tool.gateTool, token);
      throw error;
    }
    outcome = { toolStatus: "failed", content: resultContent("failed", error.message) };
  }
  try {
    const step = { kind: "complete" as const, tool: tool.gateTool, succeeded: outcome.toolStatus === "succeeded", resultSummary: outcome.content.slice(0, 1000) };
    await applyTokenStep(entityManager(env.ctx), env.deps.statements, env.caller, { organizationSlug: env.slug, executionToken: token }, step);
  } catch (error) {
    // Stopped or expired meanwhile: the action happened; its result is still the model's to see.
    if (!(error instanceof DomainError)) throw error;
  }
  return outcome;
}

/** Settles a pending call's stored message and tells the stream. */
export async function settle(env: TurnEnv, row: MessageRow, status: "succeeded" | "failed" | "refused" | "denied", content: string, emit: Emit): Promise<void> {
  const settled = await inConversation(env, (db) => settleToolMessage(db.query, row.id, status, content));
  emit({ event: { case: "toolResult", value: messageToProto(settled) } });
}
