import assert from "node:assert/strict";
import { ChatService, MessageRole, ToolCallStatus, TurnStatus, type ChatMessage } from "../../gen/outpost/chat/v1/chat_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { OcelotService } from "../../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { GameState } from "../../gen/outpost/servers/v1/resources_pb.js";
import { insertSamples } from "../../core/stats/ingest.ts";
import { ensurePartitions } from "../../core/stats/partitions.ts";
import type { Json, ScriptedToolCall } from "../support/model-stub.ts";
import { startFilesChatFixture, type FilesChatFixture, type WrappedServer } from "./files-fixture.ts";

/**
 * The assistant's server tools against a stand-in model and a server run by the real `outpost-agent
 * wrap`: server_stats reads what was kept and sums it up for the model, and restart_server waits
 * for a person's Allow, then restarts the process through servers/restartServer's own path.
 */
describe("chat: the server tools", function () {
  this.timeout(120_000);
  let f: FilesChatFixture;
  let server: WrappedServer;
  const acme = { organizationSlug: "acme" };
  const chat = () => f.client(ChatService);
  const call = (id: string, name: string, args: Record<string, unknown>): ScriptedToolCall => ({ id, name, arguments: { server_id: server.id, ...args } });
  const toolResult = (messages: ChatMessage[]): Json => JSON.parse(messages.find((m) => m.role === MessageRole.TOOL)!.content).result;

  before(async () => {
    f = await startFilesChatFixture();
    server = await f.wrapped("Laggy", {});
  });
  after(async () => {
    await f?.close();
  });

  it("server_stats sums up a range for the model: average, worst and latest of each metric, and the points", async () => {
    const runtime = f.t.outpost.runtime;
    const query = runtime.deps.statements.on(runtime.orm.em.fork());
    const base = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 30 * 60_000);
    await ensurePartitions(query, base);
    // Half an hour: TPS 20, then 8 for the last ten minutes; memory rising.
    const rows = Array.from({ length: 180 }, (_, i) => ({
      serverId: server.id,
      at: new Date(base.getTime() + i * 10_000),
      cpu: 50,
      memory: String(1_000_000 + i * 1_000),
      players: 3,
      tps: i >= 120 ? 8 : 20,
      mspt: i >= 120 ? 120 : 10,
      disk: null,
    }));
    await insertSamples(query, rows);
    const from = base.toISOString();
    const to = new Date(base.getTime() + 30 * 60_000).toISOString();
    f.stub.script({ toolCalls: [call("s1", "server_stats", { from, to })] }, { text: ["It lags since ten minutes ago."] });
    const sent = await chat().sendMessage({ ...acme, content: "Why is it lagging?" });
    assert.equal(sent.status, TurnStatus.COMPLETED);
    const stats = toolResult(sent.messages);
    assert.equal(stats.server, "Laggy", JSON.stringify(stats));
    assert.equal(stats.step_seconds, 60, "at most 30 points");
    assert.deepEqual([stats.metrics.tps.worst, stats.metrics.tps.latest, stats.metrics.mspt.worst], [8, 8, 120]);
    assert.equal(Math.round(stats.metrics.tps.average), 16, "two thirds at 20, a third at 8");
    assert.equal(stats.metrics.players.latest, 3);
    assert.equal(stats.metrics.tps.points.length, 30);
    assert.deepEqual(stats.metrics.tps.points[19].slice(1), [20, 20]);
    assert.deepEqual(stats.metrics.tps.points[20], [new Date(base.getTime() + 20 * 60_000).toISOString().slice(5, 16).replace("T", " "), 8, 8], "the drop, at its time");
    assert.equal(stats.metrics.disk.reported, false);

    f.stub.script({ toolCalls: [call("s2", "server_stats", { from: "yesterday" })] }, { text: ["Sorry."] });
    const wrong = await chat().sendMessage({ ...acme, content: "And yesterday?" });
    const refused = wrong.messages.find((m) => m.role === MessageRole.TOOL)!;
    assert.equal(refused.toolStatus, ToolCallStatus.REFUSED, "wrong arguments: it did not run");
    assert.match(refused.content, /from: an ISO 8601 time with its zone is needed/);
  });

  it("restart_server is off until its family is on, waits for Allow, then restarts the server through its own path", async () => {
    f.stub.script({ toolCalls: [call("r0", "restart_server", { reason: "lag" })] }, { text: ["Cannot."] });
    const off = await chat().sendMessage({ ...acme, content: "Restart it" });
    assert.equal(off.messages.find((m) => m.role === MessageRole.TOOL)?.toolStatus, ToolCallStatus.REFUSED, "the server_lifecycle family is off by default");

    const ocelot = f.client(OcelotService);
    const { config } = await ocelot.getOcelotConfig(acme);
    const settings = config!.settings!;
    await ocelot.updateOcelotConfig({ ...acme, version: config!.version, settings: { ...settings, tools: { ...settings.tools!, serverLifecycle: true } } });
    f.stub.script({ toolCalls: [call("r1", "restart_server", { reason: "TPS at 8 for ten minutes" })] });
    const sent = await chat().sendMessage({ ...acme, content: "Restart it" });
    assert.equal(sent.status, TurnStatus.AWAITING_CONFIRMATION);
    assert.equal(sent.pending!.command, "restart: TPS at 8 for ten minutes");

    f.stub.script({ text: ["Restarted."] });
    const allowed = await chat().confirmToolCall({ ...acme, conversationId: sent.conversation!.id, toolCallId: "r1", allow: true });
    assert.equal(allowed.status, TurnStatus.COMPLETED);
    assert.equal(allowed.messages[0].toolStatus, ToolCallStatus.SUCCEEDED);
    const answer = JSON.parse(allowed.messages[0].content).result;
    assert.equal(answer.changed, true);
    for (let i = 0; ; i++) {
      const { server: now } = await f.client(ServersService).getServer({ serverId: server.id });
      if (now!.gameState === GameState.RUNNING && i > 0) break;
      assert.ok(i < 100, "running again");
      await new Promise((r) => setTimeout(r, 100));
    }
    const { events } = await f.client(ActivityService).listOrganizationActivity({ ...acme, serverId: server.id, limit: 50 });
    const lifecycle = events.find((e) => e.action === "server.lifecycle");
    assert.deepEqual([lifecycle?.details.action, lifecycle?.details.reason, lifecycle?.details.outcome], ["restart", "TPS at 8 for ten minutes", "ok"]);
  });
});
