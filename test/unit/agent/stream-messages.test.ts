import assert from "node:assert/strict";
import type { EntityManager } from "@mikro-orm/postgresql";
import { pino } from "pino";
import { Game, PlayerAuth } from "../../../gen/outpost/servers/v1/resources_pb.js";
import { createMessageHandler, type AgentStreamDeps, type StreamSession } from "../../../core/agents/stream-messages.ts";
import type { AgentConnection } from "../../../core/agents/connections.ts";

/** The agent stream's handling of Hello when the stream ends while Hello is recorded. */
describe("agent stream: a Hello that outlasts its stream", () => {
  it("records the Hello (so the end is recorded too) but neither holds the server nor attaches to the consoles", async () => {
    const calls: string[] = [];
    const sent: unknown[] = [];
    // markConnected's transaction, answered as if the row was updated.
    const em = { fork: () => ({ transactional: async () => true }) } as unknown as EntityManager;
    const deps = {
      clock: { now: () => new Date() },
      logger: pino({ level: "silent" }),
      agents: { hold: () => void calls.push("hold") },
      consoles: { attach: () => (calls.push("attach"), () => calls.push("detach")) },
      // Whether the server is frozen: no row, so it is not.
      config: { plans: {} },
      statements: { on: () => ({ rows: async () => [], one: async () => undefined, run: async () => 0 }) },
    } as unknown as AgentStreamDeps;
    const session: StreamSession = {
      agent: { kind: "agent", server: { id: "s1", organizationId: "o1", organizationSlug: "acme", name: "Survival", game: "minecraft" }, keyHash: "h" },
      em,
      connection: { id: "c1", serverId: "s1", holding: false } as AgentConnection,
      send: (message) => void sent.push(message),
      // The agent went away while Hello was being recorded.
      ended: () => true,
    };
    const handle = createMessageHandler(deps, session);
    await handle({ message: { case: "hello", value: { game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE, console: true } } } as never);
    assert.equal(session.playerAuth, "online", "so the stream's end marks the server offline");
    assert.deepEqual([calls, sent, session.detach, session.connection.holding], [[], [], undefined, false]);
  });
});
