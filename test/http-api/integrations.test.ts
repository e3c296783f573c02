import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { scriptInOrganization, type HttpApi } from "../support/http-api.ts";
import { startHttpReceiver, verifyStandardWebhook, type HttpReceiver } from "../support/receivers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Integrations through the HTTP API, as a script drives them, on an Outpost set up for local development. */
describe("http api: integrations", () => {
  let t: TestOutpost;
  let api: HttpApi;
  let receiver: HttpReceiver;

  before(async () => {
    receiver = await startHttpReceiver();
    t = await startTestOutpost({ ALLOW_LOCAL_OUTBOUND: "true" });
    ({ api } = await scriptInOrganization(t));
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });

  it("createIntegration → listIntegrations (an array, no secret) → testIntegration (signed) → deleteIntegration", async () => {
    const created = await api("POST", "integrations/createIntegration", { organizationSlug: "acme", name: "Ops", webhook: { url: `${receiver.origin}/hook` } });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const { integration, secret } = created.body;
    assert.equal(integration.kind, "webhook");
    assert.match(secret, /^whsec_/);
    const listed = await api("GET", "integrations/listIntegrations?organizationSlug=acme");
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.map((i: Json) => i.id),
      [integration.id],
    );
    assert.ok(!JSON.stringify(listed.body).includes(secret));
    const tested = await api("POST", "integrations/testIntegration", { organizationSlug: "acme", integrationId: integration.id });
    assert.equal(tested.status, 200);
    assert.equal(tested.body.ok, true, tested.body.error);
    assert.ok(verifyStandardWebhook(secret, receiver.received[0].headers, receiver.received[0].body));
    assert.equal((await api("POST", "integrations/deleteIntegration", { organizationSlug: "acme", integrationId: integration.id })).status, 200);
  });

  it("400s a private address with the field named, and a bad email", async () => {
    const ssrf = await api("POST", "integrations/createIntegration", { organizationSlug: "acme", name: "x", webhook: { url: "http://169.254.169.254/" } });
    assert.equal(ssrf.status, 400);
    assert.match(ssrf.body.message, /webhook: url: must not point inside a private network: 169\.254\.169\.254 is a link-local address/);
    const email = await api("POST", "integrations/createIntegration", { organizationSlug: "acme", name: "x", email: { recipients: ["nope"] } });
    assert.equal(email.status, 400);
  });

  it("is in the OpenAPI document", async () => {
    const doc = (await (await fetch(`${t.baseUrl}/api/http/openapi.json`)).json()) as Json;
    for (const path of ["createIntegration", "listIntegrations", "updateIntegration", "deleteIntegration", "rotateIntegrationSecret", "testIntegration"]) {
      assert.ok(doc.paths[`/api/http/integrations/${path}`]?.[path === "listIntegrations" ? "get" : "post"], path);
    }
  });
});
