import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { httpApi, scriptInOrganization, type HttpApi } from "../support/http-api.ts";
import { startModelStub, type ModelStub } from "../support/model-stub.ts";

/**
 * The ocelot router through /api/http: settings, the version conflict, the gate's dry run and its
 * refusals; and that the gate's other steps are not served, so no client can spend the quota or
 * write a tool action into the log (only a tool call core runs does).
 */
describe("http api: ocelot", () => {
  let t: TestOutpost;
  let api: HttpApi;
  let stub: ModelStub;

  const settings = {
    enabled: true,
    tools: { consoleRead: true, consoleCommand: true, players: true, knowledgeRead: true },
    responseStyle: "detailed",
    customInstructions: "Answer in English.",
  };

  before(async () => {
    stub = await startModelStub();
    t = await startTestOutpost({
      PLANS: '{"free":{"servers":3,"gameOAuthClients":2,"assistantToolActionsPerDay":2}}',
      OCELOT_MODEL_URL: stub.url,
      OCELOT_MODEL: "stub-model",
    });
    ({ api } = await scriptInOrganization(t));
  });
  after(async () => {
    await t?.close();
    await stub?.close();
  });

  it("reads and replaces the settings; a stale version is 409 version_conflict, bad input 400", async () => {
    const read = await api("GET", "ocelot/getOcelotConfig?organizationSlug=acme");
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.config.version, 0);
    assert.equal(read.body.config.settings.responseStyle, "concise");
    const updated = await api("POST", "ocelot/updateOcelotConfig", { organizationSlug: "acme", version: 0, settings });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.config.settings.responseStyle, "detailed");
    assert.equal(updated.body.config.settings.tools.knowledgeWrite, false);
    const stale = await api("POST", "ocelot/updateOcelotConfig", { organizationSlug: "acme", version: 0, settings });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.reason, "version_conflict");
    const bad = await api("POST", "ocelot/updateOcelotConfig", { organizationSlug: "acme", version: 1, settings: { ...settings, responseStyle: "shouty" } });
    assert.equal(bad.status, 400);
    const missing = await api("GET", "ocelot/getOcelotConfig?organizationSlug=nope");
    assert.equal(missing.status, 404);
  });

  it("serves no way to authorize, confirm, complete or release a tool action: a member naming the owner's conversation is 404 (/api/http and /api/rpc), spending nothing and logging nothing", async () => {
    stub.script({ text: ["Hello."] });
    const asked = await api("POST", "chat/sendMessage", { organizationSlug: "acme", content: "Hi" });
    const ownersConversation = asked.body.conversation.id;
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "mallory@example.com", password: "a long password", name: "Mallory" });
    const malloryKey = (await identity.issueApiKey({ email: "mallory@example.com", name: "script" })).key;
    const mallory = httpApi(t, malloryKey);
    assert.equal((await api("POST", "organizations/addMember", { organizationSlug: "acme", email: "mallory@example.com", role: "member" })).status, 200);
    const forged = {
      authorizeToolAction: { organizationSlug: "acme", tool: "knowledge.search", conversationId: ownersConversation, argumentsSummary: "op attacker" },
      confirmToolAction: { organizationSlug: "acme", executionToken: `oet_${"a".repeat(40)}`, allow: true },
      completeToolAction: {
        organizationSlug: "acme",
        tool: "knowledge.search",
        executionToken: `oet_${"a".repeat(40)}`,
        outcome: "succeeded",
        resultSummary: "owner ran: op attacker",
      },
      releaseToolAction: { organizationSlug: "acme", tool: "knowledge.search", executionToken: `oet_${"a".repeat(40)}` },
    };
    const toolActions = async () => (await api("GET", "ocelot/getOcelotUsageStats?organizationSlug=acme")).body.usage.toolActions;
    const logged = async () => (await api("GET", "activity/listOrganizationActivity?organizationSlug=acme&action=ocelot_tool")).body.events;
    const [usedBefore, loggedBefore] = [await toolActions(), await logged()];
    for (const [procedure, body] of Object.entries(forged)) {
      const overHttp = await mallory("POST", `ocelot/${procedure}`, body);
      assert.equal(overHttp.status, 404, `${procedure}: ${JSON.stringify(overHttp.body)}`);
      const method = procedure[0].toUpperCase() + procedure.slice(1);
      const overRpc = await fetch(`${t.baseUrl}/api/rpc/outpost.ocelot.v1.OcelotService/${method}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": malloryKey },
        body: JSON.stringify(body),
      });
      assert.equal(overRpc.status, 404, `${method} over /api/rpc`);
    }
    assert.equal(await toolActions(), usedBefore, "no quota spent");
    assert.deepEqual(await logged(), loggedBefore, "no tool action logged, for anyone");
  });

  it("runs the gate's dry run: preflight; quota is spent only by a tool call core runs, and the plan's limit and the emergency stop are refusals with their reasons", async () => {
    const pre = await api("GET", "ocelot/preflightToolAction?organizationSlug=acme&tool=knowledge.search");
    assert.deepEqual(pre.body, { allowed: true, refusal: "unspecified", message: "", quotaWeight: 1, requiresConfirmation: false });
    const search = (id: string) => ({ id, name: "knowledge_search", arguments: { query: "whitelist" } });
    stub.script({ toolCalls: [search("s1"), search("s2")] }, { text: ["No notes about it."] });
    assert.equal((await api("POST", "chat/sendMessage", { organizationSlug: "acme", content: "How do I whitelist someone?" })).status, 200);
    const usage = await api("GET", "ocelot/getOcelotUsageStats?organizationSlug=acme");
    assert.deepEqual([usage.body.usage.toolActions, usage.body.usage.toolActionLimit], [2, 2]);
    const limited = await api("GET", "ocelot/preflightToolAction?organizationSlug=acme&tool=knowledge.search");
    assert.equal(limited.body.refusal, "plan_limit_reached");
    assert.match(limited.body.message, /daily limit of 2 assistant tool actions/);
    assert.equal((await api("POST", "ocelot/setOcelotEmergencyStop", { organizationSlug: "acme", on: true })).status, 200);
    const stopped = await api("GET", "ocelot/preflightToolAction?organizationSlug=acme&tool=knowledge.search");
    assert.equal(stopped.body.refusal, "emergency_stop");
    assert.equal((await api("POST", "ocelot/setOcelotEmergencyStop", { organizationSlug: "acme", on: false })).status, 200);
    const bad = await api("GET", "ocelot/preflightToolAction?organizationSlug=acme&tool=knowledge");
    assert.equal(bad.status, 400);
  });
});
