import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createLocalBus, type Bus } from "../../../core/bus.ts";
import { createConsoleFeed, type ConsoleEvent } from "../../../core/agents/console-feed.ts";
import type { AgentConnection } from "../../../core/agents/connections.ts";

/** One process's bus standing in for PostgreSQL's: every feed on it is another instance. */
function sharedBus(): Bus & { sent: Array<{ topic: string; message: Record<string, unknown> }> } {
  const local = createLocalBus();
  const sent: Array<{ topic: string; message: Record<string, unknown> }> = [];
  return {
    ...local,
    shared: true,
    sent,
    publish(topic, payload = "", options) {
      sent.push({ topic, message: JSON.parse(payload) });
      return local.publish(topic, payload, options);
    },
  };
}

function connection(id: string, recent: string[]): AgentConnection {
  return {
    id,
    serverId: "s1",
    holding: true,
    players: [],
    console: { recent: () => recent } as AgentConnection["console"],
    files: {} as AgentConnection["files"],
    lifecycle: {} as AgentConnection["lifecycle"],
    end() {},
    drain() {},
    finished: Promise.resolve(),
  };
}

/** The live console's feed between instances, on a bus that delivers within this process. */
describe("servers: the live console's feed between instances", () => {
  it("answers a remote watch with the recent lines once, not at each re-announcement", async () => {
    const bus = sharedBus();
    const holder = createConsoleFeed(bus);
    const watcher = createConsoleFeed(bus, { announceEveryMs: 20 });
    holder.attach(connection("c1", ["line 1", "line 2"]));
    const heard: ConsoleEvent[] = [];
    const watch = watcher.watch("s1", (event) => heard.push(event));
    const announcements = () => bus.sent.filter((s) => s.topic === "console-watch:s1").length;
    while (announcements() < 4) await sleep(20);
    watch.close();
    assert.deepEqual(heard, [{ kind: "lines", lines: ["line 1", "line 2"], dropped: 0 }]);
    assert.equal(bus.sent.filter((s) => s.message.kind === "recent").length, 1);
  });

  it("asks for the recent lines again when the agent comes back online", async () => {
    const bus = sharedBus();
    const holder = createConsoleFeed(bus);
    const watcher = createConsoleFeed(bus);
    const heard: ConsoleEvent[] = [];
    const watch = watcher.watch("s1", (event) => heard.push(event));
    holder.attach(connection("c1", ["back"]));
    watch.close();
    assert.deepEqual(heard, [
      { kind: "online", online: true },
      { kind: "lines", lines: ["back"], dropped: 0 },
    ]);
  });

  it("a superseded stream's detach leaves its successor's watchers, and only the successor answers", async () => {
    const bus = sharedBus();
    const holder = createConsoleFeed(bus);
    const watcher = createConsoleFeed(bus);
    const detachOld = holder.attach(connection("old", ["old line"]));
    holder.attach(connection("new", ["new line"]));
    const heard: ConsoleEvent[] = [];
    const watch = watcher.watch("s1", (event) => heard.push(event));
    detachOld();
    holder.printed("s1", ["printed after the old stream left"], 0);
    watch.close();
    assert.deepEqual(heard, [
      { kind: "lines", lines: ["new line"], dropped: 0 },
      { kind: "lines", lines: ["printed after the old stream left"], dropped: 0 },
    ]);
  });

  it("counts output the bus could not send in the next lines it sends", async () => {
    const bus = sharedBus();
    let refusing = true;
    const flaky: Bus = { ...bus, publish: async (topic, payload, options) => (options?.lossy && refusing ? false : bus.publish(topic, payload, options)) };
    const holder = createConsoleFeed(flaky);
    const watcher = createConsoleFeed(flaky);
    holder.attach(connection("c1", []));
    const heard: ConsoleEvent[] = [];
    const watch = watcher.watch("s1", (event) => heard.push(event));
    holder.printed("s1", ["lost 1", "lost 2"], 3);
    await sleep(0);
    refusing = false;
    holder.printed("s1", ["arrives"], 0);
    await sleep(0);
    watch.close();
    assert.deepEqual(heard, [{ kind: "lines", lines: ["arrives"], dropped: 5 }]);
  });
});
