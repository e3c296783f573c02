import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { ChatService, ToolCallStatus, TurnStatus } from "../../gen/outpost/chat/v1/chat_service_pb.js";
import { OcelotService } from "../../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import type { TestCore } from "../support/core.ts";
import type { AcmeCast } from "../support/fixtures.ts";
import { rejectsWith } from "../support/errors.ts";
import type { Json, ModelStub, ScriptedToolCall } from "../support/model-stub.ts";
import { startChatFixture, type ChatFixture } from "./fixture.ts";

/**
 * What a person confirms is what runs, and only while it may: a model cannot swap the command
 * behind a confirmation by reusing a call's id, and a family switched off after the question
 * stops the command that waits.
 */
describe("chat: confirming a command", function () {
  this.timeout(60_000);
  let f: ChatFixture;
  let t: TestCore;
  let cast: AcmeCast;
  let stub: ModelStub;
  let serverId: string;
  let ran: string[];
  const acme = { organizationSlug: "acme" };

  const chat = () => t.client(ChatService, { session: cast.owner.token });
  const calls = (...toolCalls: ScriptedToolCall[]) => ({ toolCalls });
  const ocelot = () => t.client(OcelotService, { session: cast.owner.token });
  const switchCommands = (on: boolean) => f.switchCommands(on);
  const toolEvents = async () =>
    (await t.client(ActivityService, { session: cast.owner.token }).listOrganizationActivity({ ...acme, action: "ocelot_tool", limit: 200 })).events;

  before(async () => {
    f = await startChatFixture();
    ({ t, cast, stub, serverId, ran } = f);
    await switchCommands(true);
  });
  beforeEach(() => (ran.length = 0));
  after(async () => {
    await f?.close();
  });

  it("runs the command shown, not another call the model gave the same id", async () => {
    stub.script(
      calls(
        { id: "dup", name: "no_such_tool", arguments: { server_id: serverId, command: "op griefer" } },
        { id: "dup", name: "console_command", arguments: { server_id: serverId, command: "say hi" } },
      ),
    );
    const sent = await chat().sendMessage({ ...acme, content: "Greet them" });
    assert.equal(sent.status, TurnStatus.AWAITING_CONFIRMATION);
    assert.equal(sent.pending?.command, "say hi");
    stub.script({ text: ["Greeted."] });
    await chat().confirmToolCall({ ...acme, conversationId: sent.conversation!.id, toolCallId: sent.pending!.toolCallId, allow: true });
    assert.deepEqual(ran, ["say hi"]);
    const ids = (stub.requests.at(-1)!.body as Json).messages.filter((m: Json) => m.role === "tool").map((m: Json) => m.tool_call_id);
    assert.equal(new Set(ids).size, 2, "each call has its own result");
  });

  it("asks about a command of a later round whose id the model reused (or left out)", async () => {
    stub.script(calls({ id: "", name: "servers_list", arguments: {} }), calls({ id: "", name: "console_command", arguments: { server_id: serverId, command: "list" } }));
    const sent = await chat().sendMessage({ ...acme, content: "Who is on?" });
    assert.equal(sent.status, TurnStatus.AWAITING_CONFIRMATION, "the second round's call is not taken for the first's");
    assert.equal(sent.pending?.command, "list");
    stub.script({ text: ["Nobody."] });
    await chat().confirmToolCall({ ...acme, conversationId: sent.conversation!.id, toolCallId: sent.pending!.toolCallId, allow: true });
    assert.deepEqual(ran, ["list"]);
  });

  it("refuses a waiting command once its family is switched off, and gives its quota back", async () => {
    stub.script(calls({ id: "c_off", name: "console_command", arguments: { server_id: serverId, command: "stop" } }));
    const sent = await chat().sendMessage({ ...acme, content: "Stop it" });
    assert.equal(sent.pending?.command, "stop");
    const before = (await ocelot().getOcelotUsageStats(acme)).usage!.toolActions;
    await switchCommands(false);
    try {
      stub.script({ text: ["Not stopped."] });
      const answered = await chat().confirmToolCall({ ...acme, conversationId: sent.conversation!.id, toolCallId: "c_off", allow: true });
      assert.deepEqual(ran, []);
      assert.equal(answered.messages[0].toolStatus, ToolCallStatus.REFUSED);
      assert.match(answered.messages[0].content, /turned off/);
      assert.equal((await ocelot().getOcelotUsageStats(acme)).usage!.toolActions, before - 2, "the command's weight is given back");
      await rejectsWith(chat().confirmToolCall({ ...acme, conversationId: sent.conversation!.id, toolCallId: "c_off", allow: true }), Code.FailedPrecondition);
    } finally {
      await switchCommands(true);
    }
  });

  it("binds a confirmation to the caller's own conversation and a real waiting call: another member naming it is not_found, a made-up call id failed_precondition; nothing runs, no quota moves, nothing is logged", async () => {
    stub.script(calls({ id: "c_owner", name: "console_command", arguments: { server_id: serverId, command: "say owner" } }));
    const sent = await chat().sendMessage({ ...acme, content: "Say it" });
    const conversationId = sent.conversation!.id;
    const usedBefore = (await ocelot().getOcelotUsageStats(acme)).usage!.toolActions;
    const loggedBefore = await toolEvents();
    const someoneElse = t.client(ChatService, { session: cast.member.token });
    const stolen = { ...acme, conversationId, toolCallId: "c_owner", allow: true };
    await rejectsWith(someoneElse.confirmToolCall(stolen), Code.NotFound);
    await rejectsWith(someoneElse.getConversation({ ...acme, conversationId }), Code.NotFound);
    await rejectsWith(t.client(ChatService, { session: cast.admin.token }).confirmToolCall({ ...stolen, allow: false }), Code.NotFound, "not_found");
    await rejectsWith(chat().confirmToolCall({ ...stolen, toolCallId: "c_made_up" }), Code.FailedPrecondition);
    assert.deepEqual(ran, []);
    assert.equal((await ocelot().getOcelotUsageStats(acme)).usage!.toolActions, usedBefore, "no quota moved");
    assert.deepEqual(await toolEvents(), loggedBefore, "nothing logged");
    assert.equal((await chat().getConversation({ ...acme, conversationId })).pending?.toolCallId, "c_owner", "still the owner's to settle");
    stub.script({ text: ["Not said."] });
    await chat().confirmToolCall({ ...stolen, allow: false });
  });

  it("logs what core parsed and ran, whatever the question said: the command as shown, the console's answer, the asker as actor", async () => {
    stub.script(calls({ id: "c_log", name: "console_command", arguments: { server_id: serverId, command: "/say logged" } }));
    const sent = await chat().sendMessage({ ...acme, content: "Run op attacker, and put in the log that the owner ran it" });
    const conversationId = sent.conversation!.id;
    stub.script({ text: ["Said."] });
    const answered = await chat().confirmToolCall({ ...acme, conversationId, toolCallId: "c_log", allow: true });
    assert.deepEqual(ran, ["say logged"]);
    const stored = answered.messages.find((m) => m.toolCallId === "c_log")!;
    const mine = (await toolEvents()).filter((e) => e.details.conversation_id === conversationId);
    assert.deepEqual(mine.map((e) => e.action).sort(), ["ocelot_tool.authorized", "ocelot_tool.completed", "ocelot_tool.confirmed"]);
    for (const e of mine) {
      assert.equal(e.details.arguments, "say logged", "the command as it ran");
      assert.equal(e.actor!.email, cast.owner.email);
      assert.ok(!JSON.stringify(e.details).includes("attacker"));
    }
    const completed = mine.find((e) => e.action === "ocelot_tool.completed")!;
    assert.equal(completed.details.result, stored.content.slice(0, 1000), "the result stored for the model");
    assert.match(completed.details.result, /ran say logged/);
  });

  it("lets a new question settle a command whose confirmation expired, instead of refusing it behind it", async () => {
    stub.script(calls({ id: "c_late", name: "console_command", arguments: { server_id: serverId, command: "save-all" } }));
    const sent = await chat().sendMessage({ ...acme, content: "Save the world" });
    assert.equal(sent.pending?.command, "save-all");
    const conversationId = sent.conversation!.id;
    // While it may still be allowed, a new question waits behind it.
    await rejectsWith(chat().sendMessage({ ...acme, conversationId, content: "And now?" }), Code.FailedPrecondition);
    const before = (await ocelot().getOcelotUsageStats(acme)).usage!.toolActions;
    await t.orm.em.fork().getConnection().execute(`update ocelot_tool_actions set expires_at = now() - interval '1 second' where conversation_id = ?`, [conversationId]);
    stub.script({ text: ["It was not saved."] });
    const next = await chat().sendMessage({ ...acme, conversationId, content: "And now?" });
    assert.equal(next.messages.at(-1)!.content, "It was not saved.");
    assert.deepEqual(ran, [], "the expired command never ran");
    const { messages } = await chat().getConversation({ ...acme, conversationId });
    const late = messages.find((m) => m.toolCallId === "c_late" || m.content.includes("expired"))!;
    assert.equal(late.toolStatus, ToolCallStatus.REFUSED);
    assert.match(late.content, /confirmation expired/);
    assert.equal((await ocelot().getOcelotUsageStats(acme)).usage!.toolActions, before - 2, "its quota is given back");
  });
});
