import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { ConsoleCommandSchema } from "../../../gen/outpost/agent/v1/agent_service_pb.js";
import { answerConsoleCommand, consoleLimits, consoleLine, createConsoleOutlet, type ConsoleHandler } from "../../../agent/console.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Sent = { case: string; value: any };

function collector() {
  const sent: Sent[] = [];
  return { sent, send: (message: unknown) => void sent.push(message as Sent) };
}

const command = (text: string, timeoutMs = 5000) => create(ConsoleCommandSchema, { requestId: "r1", command: text, timeoutMs });

describe("agent: the console's side of the contract", () => {
  describe("answering a console command", () => {
    it("sends the handler's lines as one ConsoleResult with the request id", async () => {
      const { sent, send } = collector();
      const handler: ConsoleHandler = async (text) => ({ success: true, output: [`ran ${text}`, "second line\n"] });
      await answerConsoleCommand(handler, command("list"), new AbortController().signal, send);
      assert.deepEqual(sent, [{ case: "consoleResult", value: { requestId: "r1", success: true, output: ["ran list", "second line"], error: "" } }]);
    });

    it("says the agent has no console when it was given no handler", async () => {
      const { sent, send } = collector();
      await answerConsoleCommand(undefined, command("list"), new AbortController().signal, send);
      assert.equal(sent[0].value.success, false);
      assert.match(sent[0].value.error, /cannot reach the game server's console/);
    });

    it("turns a handler's exception into a failed result with its message", async () => {
      const { sent, send } = collector();
      await answerConsoleCommand(
        async () => {
          throw new Error("stdin is closed");
        },
        command("list"),
        new AbortController().signal,
        send,
      );
      assert.deepEqual(sent[0].value, { requestId: "r1", success: false, output: [], error: "stdin is closed" });
    });

    it("keeps within the contract: the last 200 lines, each at most 4,096 characters", async () => {
      const { sent, send } = collector();
      const lines = Array.from({ length: 250 }, (_, i) => `line ${i}`);
      lines[249] = "x".repeat(10_000);
      await answerConsoleCommand(async () => ({ success: true, output: lines }), command("spam"), new AbortController().signal, send);
      const { output } = sent[0].value;
      assert.equal(output.length, consoleLimits.linesPerMessage);
      assert.equal(output[0], "line 50");
      assert.equal(output[199].length, consoleLimits.lineChars);
    });

    it("aborts the handler before Outpost stops waiting, and sends what it collected", async () => {
      const { sent, send } = collector();
      let reason: unknown;
      const handler: ConsoleHandler = (_text, signal) =>
        new Promise((resolve) => signal.addEventListener("abort", () => ((reason = signal.reason), resolve({ success: true, output: ["partial"] }))));
      // The connection never drops: only the time Outpost waits can end the handler.
      await answerConsoleCommand(handler, command("slow", 400), new AbortController().signal, send);
      assert.equal((reason as Error).name, "TimeoutError");
      assert.deepEqual(sent[0].value.output, ["partial"]);
    });

    it("aborts the handler when the connection drops", async () => {
      const { send } = collector();
      const dropped = new AbortController();
      let aborted = false;
      const handler: ConsoleHandler = (_text, signal) =>
        new Promise((resolve) => signal.addEventListener("abort", () => ((aborted = true), resolve({ success: false, output: [] }))));
      const answering = answerConsoleCommand(handler, command("slow", 60_000), dropped.signal, send);
      dropped.abort();
      await answering;
      assert.equal(aborted, true);
    });
  });

  describe("live output", () => {
    it("batches lines written together into one ConsoleOutput", async () => {
      const { sent, send } = collector();
      const outlet = createConsoleOutlet();
      outlet.attach(send);
      outlet.write(["a"]);
      outlet.write(["b", "c\r\n"]);
      assert.equal(sent.length, 0, "waits to batch");
      await sleep(250);
      assert.deepEqual(sent, [{ case: "consoleOutput", value: { lines: ["a", "b", "c"], dropped: 0 } }]);
      outlet.close();
    });

    it("holds at most 1,000 lines, drops the oldest and says how many", async () => {
      const { sent, send } = collector();
      const outlet = createConsoleOutlet();
      outlet.attach(send);
      outlet.write(Array.from({ length: 1500 }, (_, i) => `l${i}`));
      await sleep(250);
      assert.equal(sent.length, 5, "200 lines a message");
      assert.equal(sent[0].value.dropped, 500);
      assert.equal(sent[0].value.lines[0], "l500");
      assert.ok(sent.slice(1).every((m) => m.value.dropped === 0));
      assert.equal(sent.flatMap((m) => m.value.lines).length, 1000);
      outlet.close();
    });

    it("has one ConsoleOutput on its way at a time: meanwhile lines wait, capped, and the next says how many were dropped", async () => {
      const sent: Sent[] = [];
      const taken: Array<() => void> = [];
      // A slow Outpost: the connection takes each message only when the test says so.
      const send = (message: unknown) => new Promise<void>((resolve) => (sent.push(message as Sent), taken.push(resolve)));
      const outlet = createConsoleOutlet();
      outlet.attach(send);
      outlet.write(["first"]);
      await sleep(250);
      outlet.write(Array.from({ length: 1500 }, (_, i) => `l${i}`));
      await sleep(250);
      assert.deepEqual(
        sent.map((m) => m.value.lines.length),
        [1],
        "the rest waits for the first to be taken",
      );
      for (let i = 0; i < 5; i++) {
        taken[i]();
        await sleep(0);
        assert.equal(sent.length, i + 2, "the next goes once the last was taken, not before");
      }
      assert.deepEqual([sent[1].value.dropped, sent[1].value.lines[0]], [500, "l500"]);
      assert.equal(sent.slice(1).flatMap((m) => m.value.lines).length, 1000);
      taken[5]();
      await sleep(250);
      assert.equal(sent.length, 6);
      outlet.close();
    });

    it("does not let a message the last connection never took hold back the next connection's", async () => {
      const { sent, send } = collector();
      const outlet = createConsoleOutlet();
      outlet.attach(() => new Promise(() => {}));
      outlet.write(["lost with the connection"]);
      await sleep(250);
      outlet.attach(undefined);
      outlet.attach(send);
      outlet.write(["after"]);
      await sleep(250);
      assert.deepEqual(
        sent.flatMap((m) => m.value.lines),
        ["after"],
      );
      outlet.close();
    });

    it("discards lines while not connected, and what was queued when the connection drops", async () => {
      const { sent, send } = collector();
      const outlet = createConsoleOutlet();
      outlet.write(["before connecting"]);
      outlet.attach(send);
      outlet.write(["queued"]);
      outlet.attach(undefined);
      await sleep(250);
      outlet.attach(send);
      outlet.write(["after"]);
      await sleep(250);
      assert.deepEqual(
        sent.flatMap((m) => m.value.lines),
        ["after"],
      );
      outlet.close();
    });

    it("trims line ends and shortens long lines with an ellipsis", () => {
      assert.equal(consoleLine("done\r\n"), "done");
      const long = consoleLine("y".repeat(5000));
      assert.equal(long.length, consoleLimits.lineChars);
      assert.ok(long.endsWith("…"));
    });
  });
});
