import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { shutdownEvent } from "../../edge/event-streams.ts";

const origin = "http://localhost:3000";

/**
 * The dashboard's live console (the other kind of server-sent event stream; the hosted page's is
 * in shutdown.test.ts with a real process): an Outpost that stops ends it with the reconnect hint.
 */
describe("a stopping Outpost and the dashboard's live console", function () {
  this.timeout(60_000);
  let t: TestOutpost | undefined;
  after(async () => {
    await t?.close();
  });

  it("ends the live console's stream with a reconnect hint", async () => {
    t = await startTestOutpost();
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email: "owner@example.com", password: "a long password", name: "Owner" }),
    });
    const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
    const api = async (path: string, body: unknown) => {
      const res = await fetch(`${t!.baseUrl}/api/http/${path}`, {
        method: "POST",
        headers: { cookie, origin, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 200);
      return (await res.json()) as { server: { id: string } };
    };
    await api("organizations/createOrganization", { name: "Acme", slug: "acme" });
    const { server } = await api("servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" });

    const events = await fetch(`${t.baseUrl}/app/o/acme/servers/${server.id}/console/events`, { headers: { cookie, accept: "text/event-stream" } });
    assert.equal(events.status, 200);
    const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("event: recent")) text += (await reader.read()).value;

    const stopped = t.outpost.stop();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += chunk.value;
    assert.ok(text.endsWith(shutdownEvent), text);
    await stopped;
  });
});
