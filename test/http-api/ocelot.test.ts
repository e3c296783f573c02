import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { scriptInOrganization, type HttpApi } from "../support/http-api.ts";

/** The ocelot router through /api/http: settings, the version conflict, the gate's steps and its refusals as JSON errors. */
describe("http api: ocelot", () => {
  let t: TestOutpost;
  let api: HttpApi;

  const settings = { enabled: true, tools: { consoleRead: true, consoleCommand: true, players: true, knowledgeRead: true }, responseStyle: "detailed", customInstructions: "Answer in English." };

  before(async () => {
    t = await startTestOutpost({ PLANS: '{"free":{"servers":3,"gameOAuthClients":2,"assistantToolActionsPerDay":2}}' });
    ({ api } = await scriptInOrganization(t));
  });
  after(async () => {
    await t?.close();
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

  it("runs the gate: preflight, authorize, complete; the plan's limit and the emergency stop are 409 with their reasons", async () => {
    const pre = await api("GET", "ocelot/preflightToolAction?organizationSlug=acme&tool=knowledge.search");
    assert.deepEqual(pre.body, { allowed: true, refusal: "unspecified", message: "", quotaWeight: 1, requiresConfirmation: false });
    const first = await api("POST", "ocelot/authorizeToolAction", { organizationSlug: "acme", tool: "knowledge.search", conversationId: "c1", argumentsSummary: "whitelist" });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.match(first.body.executionToken, /^oet_/);
    const done = await api("POST", "ocelot/completeToolAction", { organizationSlug: "acme", tool: "knowledge.search", executionToken: first.body.executionToken, outcome: "succeeded", resultSummary: "2 notes" });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal((await api("POST", "ocelot/authorizeToolAction", { organizationSlug: "acme", tool: "knowledge.search" })).status, 200);
    const limited = await api("POST", "ocelot/authorizeToolAction", { organizationSlug: "acme", tool: "knowledge.search" });
    assert.equal(limited.status, 409);
    assert.equal(limited.body.reason, "plan_limit_reached");
    assert.match(limited.body.message, /daily limit of 2 assistant tool actions/);
    const usage = await api("GET", "ocelot/getOcelotUsageStats?organizationSlug=acme");
    assert.equal(usage.body.usage.toolActions, 2);
    assert.equal(usage.body.usage.toolActionLimit, 2);
    assert.equal((await api("POST", "ocelot/setOcelotEmergencyStop", { organizationSlug: "acme", on: true })).status, 200);
    const stopped = await api("GET", "ocelot/preflightToolAction?organizationSlug=acme&tool=knowledge.search");
    assert.equal(stopped.body.refusal, "emergency_stop");
    const refused = await api("POST", "ocelot/authorizeToolAction", { organizationSlug: "acme", tool: "knowledge.search" });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.reason, "emergency_stop");
    const unknownToken = await api("POST", "ocelot/releaseToolAction", { organizationSlug: "acme", tool: "knowledge.search", executionToken: "oet_" + "a".repeat(40) });
    assert.equal(unknownToken.status, 404);
    const badToken = await api("POST", "ocelot/releaseToolAction", { organizationSlug: "acme", tool: "knowledge.search", executionToken: "nope" });
    assert.equal(badToken.status, 400);
  });
});
