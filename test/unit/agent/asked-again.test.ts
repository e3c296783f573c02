/**
 * A player's command whose connection ends before Outpost answers (an instance restarting) is
 * asked again on the agent's next connection, within the same time limit: the player gets the
 * answer, not an error. Outpost here is a stand-in for the agent's stream (its own tests prove
 * the real one); what is under test is the agent library's side.
 */
import assert from "node:assert/strict";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { AgentService } from "../../../gen/outpost/agent/v1/agent_service_pb.js";
import { Game } from "../../../gen/outpost/servers/v1/resources_pb.js";
import { PlayerAuth, startAgent, type Agent } from "../../../agent/client.ts";

const steve = { name: "Steve", uuid: "069a79f4-44e9-4726-a5be-fca90e38aaf5" };

/** Outpost that ends the first `drops` connections as soon as a player's command arrives on them. */
function restartingOutpost(drops: number) {
  const seen: Array<{ connection: number; text: string }> = [];
  let connections = 0;
  const transport = createRouterTransport(({ service }) => {
    service(AgentService, {
      async *connect(requests) {
        const connection = ++connections;
        for await (const { message } of requests) {
          if (message.case === "hello") {
            yield { message: { case: "welcome", value: { serverId: "s1", serverName: "Survival", organizationSlug: "acme", heartbeatSeconds: 30 } } };
          } else if (message.case === "loginCommand") {
            seen.push({ connection, text: message.value.text });
            if (connection <= drops) throw new ConnectError("Outpost is shutting down; reconnect in a moment", Code.Unavailable);
            yield { message: { case: "loginReply", value: { requestId: message.value.requestId, accepted: true, message: "Signed in to Forum." } } };
          }
        }
      },
    });
  });
  return { transport, seen };
}

describe("agent: a question left unanswered by a dropped connection", () => {
  let agent: Agent | undefined;
  afterEach(() => agent?.stop());

  it("is asked again on the next connection, and the player gets Outpost's answer", async () => {
    const outpost = restartingOutpost(2);
    agent = startAgent({
      url: "http://outpost.test",
      key: "opa_x",
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      transport: outpost.transport,
      backoff: { initialMs: 10, maxMs: 20 },
    });
    const reply = await agent.playCommand(steve, "/outpost login ABCD-EFGH", 10_000);
    assert.deepEqual(reply, { accepted: true, message: "Signed in to Forum." });
    assert.deepEqual(
      outpost.seen,
      [1, 2, 3].map((connection) => ({ connection, text: "/outpost login ABCD-EFGH" })),
      "asked once on each connection until one answered",
    );
  });

  it("still fails once its time is up", async () => {
    const outpost = restartingOutpost(Infinity);
    agent = startAgent({
      url: "http://outpost.test",
      key: "opa_x",
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      transport: outpost.transport,
      backoff: { initialMs: 50, maxMs: 50 },
    });
    await assert.rejects(agent.playCommand(steve, "/outpost login ABCD-EFGH", 300), /dropped before it answered|did not answer|not connected/);
    assert.ok(outpost.seen.length >= 2, "it was asked again meanwhile");
  });
});
