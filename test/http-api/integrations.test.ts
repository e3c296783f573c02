import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { startHttpReceiver, verifyStandardWebhook, type HttpReceiver } from "../support/receivers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Integrations through the HTTP API, as a script drives them, on an Outpost set up for local development. */
describe("http api: integrations", () => {
  let t: TestOutpost;
  let key: string;
  let receiver: HttpReceiver;

  const api = async (method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = { "x-api-key": key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  before(async () => {
    receiver = await startHttpReceiver();
    t = await startTestOutpost({ ALLOW_LOCAL_OUTBOUND: "true" });
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://localhost:3000" },
      body: JSON.stringify({ email: "owner@example.com", password: "a long password", name: "owner" }),
    });
    const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie, origin: "http://localhost:3000" },
      body: JSON.stringify({ name: "script", expiresInDays: 30 }),
    });
    key = ((await created.json()) as Json).key;
    assert.equal((await api("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" })).status, 200);
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
    assert.deepEqual(listed.body.map((i: Json) => i.id), [integration.id]);
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
