import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { scriptInOrganization, type HttpApi } from "../support/http-api.ts";
import { startHttpReceiver, verifyStandardWebhook, type HttpReceiver } from "../support/receivers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Alert rules through the HTTP API, and the running server's own worker delivering what they match. */
describe("http api: alerts", () => {
  let t: TestOutpost;
  let api: HttpApi;
  let receiver: HttpReceiver;
  let hook: { id: string; secret: string };
  let otherHook: string;

  before(async () => {
    receiver = await startHttpReceiver();
    t = await startTestOutpost({ ALLOW_LOCAL_OUTBOUND: "true" });
    ({ api } = await scriptInOrganization(t));
    assert.equal((await api("POST", "organizations/createOrganization", { name: "Other", slug: "other" })).status, 200);
    const made = (await api("POST", "integrations/createIntegration", { organizationSlug: "acme", name: "Ops", webhook: { url: `${receiver.origin}/alerts` } })).body;
    hook = { id: made.integration.id, secret: made.secret };
    otherHook = (await api("POST", "integrations/createIntegration", { organizationSlug: "other", name: "Theirs", webhook: { url: `${receiver.origin}/other` } })).body
      .integration.id;
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });

  it("refuses bad rules with 400 naming the field", async () => {
    const create = (spec: object) =>
      api("POST", "alerts/createAlertRule", { organizationSlug: "acme", spec: { name: "R", enabled: true, integrationIds: [hook.id], ...spec } });
    for (const [spec, field] of [
      [{ quietHours: { start: "22:00", end: "07:00", timeZone: "Nowhere/Else" } }, /time_?zone/i],
      [{ quietHours: { start: "25:00", end: "07:00", timeZone: "UTC" } }, /start/],
      [{ integrationIds: [otherHook] }, /integration_?ids/i],
      [{ kinds: ["weather"] }, /kinds/],
    ] as const) {
      const res = await create(spec);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.code, "invalid_argument");
      assert.match(JSON.stringify(res.body), field);
    }
  });

  it("is in the OpenAPI document", async () => {
    const doc = (await (await fetch(`${t.baseUrl}/api/http/openapi.json`)).json()) as Json;
    for (const procedure of ["createAlertRule", "listAlertRules", "updateAlertRule", "deleteAlertRule", "listAlertDeliveries"]) {
      assert.ok(doc.paths[`/api/http/alerts/${procedure}`] ?? doc.paths[`/alerts/${procedure}`], procedure);
    }
  });

  it("delivers a matching event through the server's own worker, signed, and lists it delivered", async () => {
    const rule = await api("POST", "alerts/createAlertRule", {
      organizationSlug: "acme",
      spec: { name: "Servers", enabled: true, kinds: ["configuration"], severities: ["info"], integrationIds: [hook.id] },
    });
    assert.equal(rule.status, 200, JSON.stringify(rule.body));
    assert.deepEqual(rule.body.rule.spec.kinds, ["configuration"]);
    receiver.received.length = 0;
    assert.equal((await api("POST", "servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" })).status, 200);
    // The worker polls every second; wait for its send (bounded, not timed: the assertion is on what arrived).
    for (let i = 0; i < 200 && !receiver.received.some((r) => r.body.includes("server.created")); i++) await sleep(50);
    const request = receiver.received.find((r) => r.body.includes("server.created"));
    assert.ok(request, "the alert arrived");
    assert.ok(verifyStandardWebhook(hook.secret, request.headers, request.body));
    let listed: Json;
    for (let i = 0; i < 100; i++) {
      listed = await api("GET", `alerts/listAlertDeliveries?organizationSlug=acme&ruleId=${rule.body.rule.id}&status=delivered`);
      if (listed.body.deliveries.length) break;
      await sleep(50);
    }
    assert.equal(listed.status, 200);
    const [delivery] = listed.body.deliveries.filter((d: Json) => d.action === "server.created");
    assert.equal(delivery.status, "delivered");
    assert.equal(delivery.attempts, 1);
    assert.equal(request.headers["webhook-id"], delivery.id);
  });
});
