import assert from "node:assert/strict";
import { createOpenApiDocument } from "../../edge/http-api/openapi.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { startModelStub, type Json, type ModelStub } from "../support/model-stub.ts";

/** The chat router through /api/http: asking waits for the whole answer; the streams are not part of it. */
describe("http api: chat", () => {
  let t: TestOutpost;
  let stub: ModelStub;
  let key: string;

  const api = async (method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = { "x-api-key": key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  before(async () => {
    stub = await startModelStub();
    t = await startTestOutpost({ OCELOT_MODEL_URL: stub.url, OCELOT_MODEL: "stub-model" });
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
    await stub?.close();
  });

  it("sendMessage answers whole; the conversation lists, reads and deletes", async () => {
    stub.script({ text: ["Four", "."] });
    const sent = await api("POST", "chat/sendMessage", { organizationSlug: "acme", content: "2 + 2?" });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.equal(sent.body.status, "completed");
    assert.deepEqual(sent.body.messages.map((m: Json) => [m.role, m.content]), [["user", "2 + 2?"], ["assistant", "Four."]]);
    const id = sent.body.conversation.id;
    const list = await api("GET", "chat/listConversations?organizationSlug=acme");
    assert.deepEqual(list.body.conversations.map((c: Json) => c.title), ["2 + 2?"]);
    const got = await api("GET", `chat/getConversation?organizationSlug=acme&conversationId=${id}`);
    assert.equal(got.body.messages.length, 2);
    const bad = await api("POST", "chat/sendMessage", { organizationSlug: "acme", content: "" });
    assert.equal(bad.status, 400);
    assert.equal((await api("POST", "chat/deleteConversation", { organizationSlug: "acme", conversationId: id })).status, 200);
    assert.equal((await api("GET", `chat/getConversation?organizationSlug=acme&conversationId=${id}`)).status, 404);
  });

  it("a caller that goes away ends the model's request", async () => {
    stub.script({ silentMs: 3_000 });
    const asked = stub.requests.length;
    const gone = new AbortController();
    const sending = fetch(`${t.baseUrl}/api/http/chat/sendMessage`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ organizationSlug: "acme", content: "Think slowly" }),
      signal: gone.signal,
    });
    while (stub.requests.length === asked) await new Promise((resolve) => setTimeout(resolve, 20));
    gone.abort();
    await sending.catch(() => {});
    const started = Date.now();
    while (!stub.requests.at(-1)!.abandoned && Date.now() - started < 2_000) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(stub.requests.at(-1)!.abandoned, "the model's request was closed before it answered");
  });

  it("leaves the streaming methods out of /api/http and the OpenAPI document", async () => {
    assert.equal((await api("POST", "chat/streamMessage", { organizationSlug: "acme", content: "hi" })).status, 404);
    assert.equal((await api("POST", "chat/streamConfirmToolCall", {})).status, 404);
    const paths = Object.keys(createOpenApiDocument({ serverUrl: "http://localhost:3000", version: "test" }).paths);
    assert.ok(paths.includes("/chat/sendMessage") || paths.some((p) => p.endsWith("/chat/sendMessage")), paths.filter((p) => p.includes("chat")).join());
    assert.deepEqual(paths.filter((p) => /chat\/stream/.test(p)), []);
  });
});
