/**
 * The assistant's model: any OpenAI-compatible chat-completions endpoint (a local Ollama or
 * llama.cpp server, or a hosted one), asked with `stream: true`. The answer's text comes as it is
 * written; tool calls come in pieces (`delta.tool_calls[i]` by `index`) and are put together here.
 *
 * The endpoint is the operator's choice (OCELOT_MODEL_URL), not a user's, so it is called with
 * plain fetch, loopback and http allowed, not through core/outbound's SSRF-checked sender.
 * Silence longer than the timeout (before the first byte, or between two chunks), an answer
 * longer than five timeouts, a line longer than {@link maxLineChars}, a refused connection or an
 * error status: `unavailable`, saying so. An answer past {@link maxAnswerChars} is cut there.
 */
import type { AssistantModelConfig } from "../deps.ts";
import { DomainError, fail } from "../errors.ts";

/** A message as the chat-completions API takes it. */
export type ModelMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ModelToolCall[] }
  | { role: "tool"; content: string; tool_call_id: string };

export interface ModelToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A tool as offered: its name, what it does, and its arguments' JSON Schema. */
export interface ModelTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ModelAnswer {
  content: string;
  toolCalls: ModelToolCall[];
}

/** Where the endpoint's chat completions are: the base URL (…/v1) plus /chat/completions. */
export function completionsUrl(base: string): string {
  const trimmed = base.replace(/\/+$/, "");
  return trimmed.endsWith("/chat/completions") ? trimmed : `${trimmed}/chat/completions`;
}

/** The biggest answer read (text and tool calls together); the stream is closed there and the answer cut. */
export const maxAnswerChars = 64_000;
/** The longest line of the stream; a longer one (a runaway or broken endpoint) is `unavailable`. */
export const maxLineChars = 1_000_000;

const unavailable = (message: string) => new DomainError("model_unavailable", message);

/**
 * Asks the model and reads its streamed answer; `onDelta` hears each piece of text in order.
 * `signal` is the caller's (a caller going away ends the request). Throws `unavailable`.
 */
export async function askModel(
  model: AssistantModelConfig,
  request: { messages: ModelMessage[]; tools: ModelTool[] },
  onDelta: (text: string) => void,
  signal?: AbortSignal,
): Promise<ModelAnswer> {
  const abort = new AbortController();
  const silence = model.timeoutSeconds * 1000;
  let timedOut = "";
  let idle: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(() => ((timedOut = `the assistant's model did not answer in ${model.timeoutSeconds} s`), abort.abort()), silence);
  };
  const overall = setTimeout(() => ((timedOut = `the assistant's model took longer than ${model.timeoutSeconds * 5} s to answer`), abort.abort()), silence * 5);
  const gone = () => abort.abort();
  signal?.addEventListener("abort", gone, { once: true });
  arm();
  try {
    const res = await fetch(completionsUrl(model.url), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...(model.apiKey ? { authorization: `Bearer ${model.apiKey}` } : {}) },
      body: JSON.stringify({ model: model.model, messages: request.messages, stream: true, ...(request.tools.length ? { tools: request.tools } : {}) }),
      signal: abort.signal,
    });
    arm();
    if (!res.ok || !res.body) {
      const text = (await res.text().catch(() => "")).slice(0, 300).replace(/\s+/g, " ");
      throw unavailable(`the assistant's model answered HTTP ${res.status}${text ? `: ${text}` : ""}`);
    }
    return await readStream(res.body, onDelta, arm);
  } catch (error) {
    // What the endpoint says goes to members: never with the operator's key in it, if it echoes it.
    if (error instanceof DomainError)
      throw model.apiKey && error.message.includes(model.apiKey) ? new DomainError(error.reason, error.message.replaceAll(model.apiKey, "[the API key]")) : error;
    if (signal?.aborted) throw fail("cancelled", "the caller went away");
    if (timedOut) throw unavailable(timedOut);
    throw unavailable(`the assistant's model could not be reached (${describe(error)})`);
  } finally {
    clearTimeout(idle);
    clearTimeout(overall);
    signal?.removeEventListener("abort", gone);
  }
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

/** Tool calls read from one answer; more are left out. */
const maxToolCalls = 32;

interface Chunk {
  choices?: Array<{ delta?: { content?: string | null; tool_calls?: Array<{ index?: number; id?: string; function?: { name?: string; arguments?: string } }> } }>;
  error?: { message?: string };
}

/** Reads the server-sent events: `data: {json}` lines until `data: [DONE]` (or the end). */
async function readStream(body: ReadableStream<Uint8Array>, onDelta: (text: string) => void, heard: () => void): Promise<ModelAnswer> {
  const decoder = new TextDecoder();
  let buffer = "";
  let content = "";
  let size = 0;
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  const take = (line: string): boolean => {
    if (!line.startsWith("data:")) return false;
    const data = line.slice(5).trim();
    if (data === "[DONE]") return true;
    let chunk: Chunk;
    try {
      chunk = JSON.parse(data) as Chunk;
    } catch {
      throw unavailable("the assistant's model sent something that is not a chat-completions stream");
    }
    if (chunk.error) throw unavailable(`the assistant's model failed: ${String(chunk.error.message ?? "no reason given").slice(0, 300)}`);
    const delta = chunk.choices?.[0]?.delta;
    if (!delta) return false;
    // Everything kept counts against the cap: text, and tool calls' ids, names and arguments.
    const keep = (piece: unknown): string => {
      const text = typeof piece === "string" ? piece.slice(0, maxAnswerChars - size) : "";
      size += text.length;
      return text;
    };
    const text = keep(delta.content);
    if (text) {
      content += text;
      onDelta(text);
    }
    for (const piece of delta.tool_calls ?? []) {
      const index = piece.index ?? calls.length;
      if (!Number.isInteger(index) || index < 0 || index >= maxToolCalls) continue;
      const call = (calls[index] ??= { id: "", name: "", arguments: "" });
      if (piece.id) call.id = keep(piece.id);
      call.name += keep(piece.function?.name);
      call.arguments += keep(piece.function?.arguments);
    }
    return size >= maxAnswerChars;
  };
  const reader = body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    heard();
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end).replace(/\r$/, "");
      buffer = buffer.slice(end + 1);
      if (take(line)) {
        await reader.cancel().catch(() => {});
        return answer(content, calls);
      }
    }
    if (buffer.length > maxLineChars) {
      await reader.cancel().catch(() => {});
      throw unavailable(`the assistant's model sent a line longer than ${maxLineChars} characters`);
    }
  }
  if (buffer) take(buffer);
  return answer(content, calls);
}

function answer(content: string, calls: Array<{ id: string; name: string; arguments: string }>): ModelAnswer {
  const toolCalls = calls
    .filter((c) => c && c.name)
    .map((c, i) => ({ id: (c.id || `call_${i}`).slice(0, 200), type: "function" as const, function: { name: c.name.slice(0, 64), arguments: c.arguments || "{}" } }));
  return { content, toolCalls };
}
