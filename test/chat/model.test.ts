import assert from "node:assert/strict";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { askModel, maxAnswerChars, maxLineChars } from "../../core/chat/model.ts";
import { DomainError } from "../../core/errors.ts";

/**
 * The model client against endpoints that misbehave: one that streams without end, fast, must not
 * hold the answer open for five timeouts nor grow its memory without bound.
 */
describe("chat: the model client against a runaway endpoint", function () {
  this.timeout(30_000);
  let server: Server;
  let url: string;
  let answer: (res: ServerResponse) => void;
  const open = new Set<ServerResponse>();

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        open.add(res);
        res.on("close", () => open.delete(res));
        res.writeHead(200, { "content-type": "text/event-stream" });
        answer(res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** Writes `piece()` whenever the socket takes more, until the client goes away. */
  const forever = (piece: () => string) => (res: ServerResponse) => {
    const pump = () => {
      while (!res.destroyed && res.write(piece()));
      if (!res.destroyed) res.once("drain", pump);
    };
    pump();
  };
  const ask = (onDelta: (text: string) => void = () => {}) =>
    askModel({ url, model: "m", timeoutSeconds: 2 }, { messages: [{ role: "user", content: "hi" }], tools: [] }, onDelta);

  it("refuses a line that never ends, at once rather than after five timeouts", async () => {
    answer = forever(() => "x".repeat(64 * 1024));
    const started = Date.now();
    await assert.rejects(
      ask(),
      (error: unknown) => error instanceof DomainError && error.reason === "model_unavailable" && new RegExp(`longer than ${maxLineChars}`).test(error.message),
    );
    assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(open.size, 0, "the request was closed");
  });

  it("cuts an answer that never ends at the cap and closes the stream", async () => {
    const chunk = `data: ${JSON.stringify({ choices: [{ delta: { content: "word ".repeat(200) } }] })}\n\n`;
    answer = forever(() => chunk);
    let heard = 0;
    const started = Date.now();
    const got = await ask((text) => (heard += text.length));
    assert.equal(got.content.length, maxAnswerChars);
    assert.equal(heard, maxAnswerChars);
    assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
  });

  it("counts tool calls' names against the cap too, and reads at most 32 calls", async () => {
    let sent = 0;
    answer = forever(() => {
      sent++;
      const calls = [{ index: sent % 40, id: `c${sent}`, function: { name: "n".repeat(1000), arguments: "" } }];
      return `data: ${JSON.stringify({ choices: [{ delta: { tool_calls: calls } }] })}\n\n`;
    });
    const got = await ask();
    assert.ok(got.toolCalls.length <= 32);
    assert.ok(got.toolCalls.every((c) => c.function.name.length <= 64));
  });

  it("never repeats the API key of an endpoint that echoes it in an error", async () => {
    answer = (res) => res.end(`data: ${JSON.stringify({ error: { message: "key sk-secret-123 is not valid" } })}\n\n`);
    const model = { url, model: "m", apiKey: "sk-secret-123", timeoutSeconds: 2 };
    await assert.rejects(
      askModel(model, { messages: [], tools: [] }, () => {}),
      (error: unknown) => {
        assert.ok(error instanceof DomainError);
        assert.equal(error.message, "the assistant's model failed: key [the API key] is not valid");
        return true;
      },
    );
  });
});
