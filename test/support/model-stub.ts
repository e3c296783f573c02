/**
 * A stand-in for an OpenAI-compatible chat-completions endpoint (node:http): it streams scripted
 * answers as server-sent events, text and tool calls each split across chunks as real servers
 * send them, and records every request Outpost sent.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

export interface ScriptedToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export type Scripted =
  | { text: string[]; toolCalls?: ScriptedToolCall[] }
  | { toolCalls: ScriptedToolCall[]; text?: string[] }
  /** Answers nothing for this long (a model too slow). */
  | { silentMs: number }
  | { status: number; body: string };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface ModelStub {
  /** The base URL, as OCELOT_MODEL_URL takes it (…/v1). */
  url: string;
  /** Every request's path, headers and JSON body, in order. */
  requests: Array<{ path: string; headers: IncomingHttpHeaders; body: Json; /** Outpost closed the request before the answer ended. */ abandoned: boolean }>;
  /** Queues the next answers. */
  script(...answers: Scripted[]): void;
  /** Answers still queued. */
  pending(): number;
  close(): Promise<void>;
}

const chunk = (delta: Json) =>
  `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "stub", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;

export async function startModelStub(): Promise<ModelStub> {
  const queue: Scripted[] = [];
  const requests: ModelStub["requests"] = [];
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (piece: Buffer) => (raw += piece.toString()));
    req.on("end", async () => {
      const entry = { path: req.url ?? "", headers: req.headers, body: JSON.parse(raw || "null"), abandoned: false };
      requests.push(entry);
      res.on("close", () => (entry.abandoned ||= !res.writableEnded));
      const answer = queue.shift() ?? { text: ["(no scripted answer)"] };
      if ("status" in answer) {
        res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body);
        return;
      }
      if ("silentMs" in answer) {
        await sleep(answer.silentMs);
        if (!res.destroyed) res.writeHead(200, { "content-type": "text/event-stream" }).end(`${chunk({ content: "too late" })}data: [DONE]\n\n`);
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunk({ role: "assistant", content: "" }));
      for (const piece of answer.text ?? []) {
        res.write(chunk({ content: piece }));
        await sleep(5);
      }
      for (const [index, call] of (answer.toolCalls ?? []).entries()) {
        const args = JSON.stringify(call.arguments);
        const half = Math.floor(args.length / 2);
        res.write(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }));
        res.write(chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }));
        res.write(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
      }
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...answers) => queue.push(...answers),
    pending: () => queue.length,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The names of the tools a request offered. */
export function offeredTools(body: Json): string[] {
  return ((body.tools ?? []) as Json[]).map((t) => t.function.name as string).sort();
}
