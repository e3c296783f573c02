import assert from "node:assert/strict";
import { createOpenApiDocument } from "../../edge/http-api/openapi.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { scriptInOrganization, type HttpApi } from "../support/http-api.ts";
import { startModelStub, type Json, type ModelStub } from "../support/model-stub.ts";

/** The chat router through /api/http: asking waits for the whole answer; the streams are not part of it. */
describe("http api: chat", () => {
  let t: TestOutpost;
  let stub: ModelStub;
  let key: string;
  let api: HttpApi;

  before(async () => {
    stub = await startModelStub();
    t = await startTestOutpost({ OCELOT_MODEL_URL: stub.url, OCELOT_MODEL: "stub-model" });
    ({ key, api } = await scriptInOrganization(t));
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
    assert.deepEqual(
      sent.body.messages.map((m: Json) => [m.role, m.content]),
      [
        ["user", "2 + 2?"],
        ["assistant", "Four."],
      ],
    );
    const id = sent.body.conversation.id;
    const list = await api("GET", "chat/listConversations?organizationSlug=acme");
    assert.deepEqual(
      list.body.conversations.map((c: Json) => c.title),
      ["2 + 2?"],
    );
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
    assert.deepEqual(
      paths.filter((p) => /chat\/stream/.test(p)),
      [],
    );
  });
});
