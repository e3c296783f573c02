import assert from "node:assert/strict";
import { createConsoleMemory, rememberedCommands, rememberedResults, resentWithinMs } from "../../../agent/console-memory.ts";
import type { AgentMessage } from "../../../agent/requests.ts";

describe("agent: the console commands it remembers", () => {
  const collect = () => {
    const sent: AgentMessage[] = [];
    return { sent, send: (message: AgentMessage) => void sent.push(message) };
  };
  const result = (requestId: string) => ({ requestId, success: true, output: [requestId], error: "" });

  it("sends a result on the connection live when it ends, and on a new one the recent results again, then every id it got", () => {
    const memory = createConsoleMemory("00000000-0000-4000-8000-000000000001");
    const first = collect();
    memory.attach(first.send);
    memory.received("a");
    memory.attach(undefined);
    memory.answered(result("a"));
    memory.received("b");
    assert.deepEqual(
      first.sent.map((m) => m?.case),
      ["consoleReceived"],
      "nothing after the connection ended",
    );
    const second = collect();
    memory.attach(second.send);
    memory.answered(result("b"));
    assert.deepEqual(
      second.sent.map((m) =>
        m?.case === "consoleResult"
          ? `result ${m.value.requestId}`
          : m?.case === "consoleReceived"
            ? `received ${m.value.requestIds?.join()} complete=${m.value.complete}`
            : m?.case,
      ),
      ["result a", "received a,b complete=true", "result b"],
    );
  });

  it("keeps the last 1,000 ids and the last 100 results of 10 minutes, and says when it forgot some", () => {
    let now = 0;
    const memory = createConsoleMemory(undefined, () => now);
    for (let i = 0; i < rememberedCommands + 5; i++) memory.received(`c${i}`);
    for (let i = 0; i < rememberedResults + 5; i++) memory.answered(result(`c${i}`));
    const connection = collect();
    memory.attach(connection.send);
    const results = connection.sent.filter((m) => m?.case === "consoleResult");
    assert.equal(results.length, rememberedResults);
    assert.equal(results[0]?.case === "consoleResult" && results[0].value.requestId, "c5");
    const report = connection.sent.at(-1);
    assert.ok(report?.case === "consoleReceived");
    assert.equal(report.value.requestIds?.length, rememberedCommands);
    assert.equal(report.value.requestIds?.[0], "c5");
    assert.equal(report.value.complete, false);
    now += resentWithinMs + 1;
    const later = collect();
    memory.attach(later.send);
    assert.deepEqual(
      later.sent.map((m) => m?.case),
      ["consoleReceived"],
      "results past 10 minutes are not sent again",
    );
  });
});
