/**
 * The shop example (examples/shop) against a real Outpost and a game server run by the real
 * `outpost-agent wrap` around the stand-in server: a purchase reaches the game server as one
 * `give`, however often it is submitted (a double click's two concurrent POSTs, then the payment
 * provider's retried webhook), because the shop passes its purchase id as the idempotency key; a
 * new purchase gives again; a bad player name never leaves the shop. What reached the game server
 * is read from the stand-in's own echo of its stdin ("stdin> <line>"), not from Outpost's answers.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { createShop, type Shop } from "../../examples/shop/app.ts";
import { hiddenField } from "../support/account-oauth.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { startWrappedServer, type WrappedDirectory } from "../support/wrapped-server.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe("examples: the shop delivers each purchase once", () => {
  let t: TestOutpost;
  let wrapped: WrappedDirectory;
  let shop: Shop;
  const origin = "http://localhost:3000";

  /** POST /api/http/<path> as the signed-in shop owner; asserts 200. */
  const asOwner = async (cookie: string, path: string, body: unknown): Promise<Json> => {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method: "POST",
      headers: { cookie, origin, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = await res.json();
    assert.equal(res.status, 200, `${path}: ${JSON.stringify(json)}`);
    return json;
  };

  before(async () => {
    t = await startTestOutpost();
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email: "shopkeeper@example.com", password: "a long password", name: "Shopkeeper" }),
    });
    assert.equal(signUp.status, 201);
    const session = signUp.headers.get("set-cookie")!.split(";")[0];
    await asOwner(session, "organizations/createOrganization", { name: "Block Shop", slug: "blockshop" });
    const server = await asOwner(session, "servers/createServer", { organizationSlug: "blockshop", name: "Survival", game: "minecraft" });
    // Organization API keys are made from a signed-in session only (the dashboard's organization page).
    const { key } = await asOwner(session, "organizations/createOrganizationApiKey", { organizationSlug: "blockshop", name: "shop", expiresInDays: 30 });
    wrapped = await startWrappedServer(t.baseUrl, server.agentKey, {});
    shop = await createShop({ outpostUrl: t.baseUrl, apiKey: key, serverId: server.server.id, port: 0 });
  });
  after(async () => {
    await shop?.close();
    await wrapped?.agent.stop();
    if (wrapped) rmSync(wrapped.base, { recursive: true, force: true });
    await t?.close();
  });

  /** How many times the game server's console read `line`. */
  const ran = (line: string) =>
    wrapped.agent
      .output()
      .split("\n")
      .filter((l) => l === `stdin> ${line}`).length;

  /** A fresh shop page's purchase id, as a browser gets it. */
  async function newPurchase(): Promise<string> {
    const res = await fetch(shop.url);
    assert.equal(res.status, 200);
    return hiddenField(await res.text(), "purchaseId");
  }

  async function buy(purchaseId: string, player: string, productId = "diamonds-64"): Promise<{ status: number; html: string; outcome?: string; requestId?: string }> {
    const res = await fetch(`${shop.url}/buy`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ purchaseId, productId, player }).toString(),
    });
    const html = await res.text();
    return { status: res.status, html, outcome: /data-outcome="([^"]+)"/.exec(html)?.[1], requestId: /id="request-id">([^<]+)</.exec(html)?.[1] };
  }

  async function paymentWebhook(body: unknown): Promise<{ status: number; body: Json }> {
    const res = await fetch(`${shop.url}/webhooks/payment`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: res.status, body: await res.json() };
  }

  it("refuses a name that is not a Minecraft player name, says why, and sends nothing", async () => {
    const purchaseId = await newPurchase();
    for (const player of ["St", "Steve op", "ThisNameIsFarTooLong", "Stéve"]) {
      const refused = await buy(purchaseId, player);
      assert.equal(refused.status, 400, player);
      assert.match(refused.html, /A Minecraft player name is 3 to 16 characters: letters A–Z, digits and underscores\./);
      // The form again, for the same purchase: fixing the name still buys once.
      assert.equal(hiddenField(refused.html, "purchaseId"), purchaseId);
    }
    const hook = await paymentWebhook({ purchaseId, player: "x y", productId: "diamonds-64" });
    assert.equal(hook.status, 400);
    assert.match(hook.body.error, /3 to 16 characters/);
    assert.doesNotMatch(wrapped.agent.output(), /stdin> give/);
  });

  it("gives a double-clicked purchase once, and its retried webhook gives nothing more", async () => {
    const purchaseId = await newPurchase();
    // A double click: the same form posted twice at once.
    const clicks = await Promise.all([buy(purchaseId, "Steve"), buy(purchaseId, "Steve")]);
    for (const click of clicks) assert.equal(click.status, 200, click.html);
    assert.deepEqual(clicks.map((c) => c.outcome).sort(), ["already_delivered", "delivered"]);
    assert.equal(clicks[0].requestId, clicks[1].requestId, "both answered by the one Outpost request that ran");
    // What the stand-in printed for the give comes back as the console's output.
    assert.match(clicks[0].html, /<pre id="output">[^<]*Unknown or incomplete command/);

    const retried = await paymentWebhook({ purchaseId, player: "Steve", productId: "diamonds-64" });
    assert.equal(retried.status, 200);
    assert.equal(retried.body.outcome, "already_delivered");
    assert.equal(retried.body.requestId, clicks[0].requestId);

    await wrapped.agent.waitFor(/stdin> give Steve diamond 64\n/);
    assert.equal(ran("give Steve diamond 64"), 1);
  });

  it("refuses a purchase id reused for another order, and nothing runs", async () => {
    const purchaseId = await newPurchase();
    assert.equal((await buy(purchaseId, "Alex", "elytra")).outcome, "delivered");
    const other = await buy(purchaseId, "Alex", "golden-apples-16");
    assert.equal(other.status, 409);
    assert.equal(other.outcome, "conflict");
    assert.match(other.html, /already used for a different order/);
    await wrapped.agent.waitFor(/stdin> give Alex elytra 1\n/);
    assert.equal(ran("give Alex golden_apple 16"), 0);
  });

  it("gives a second purchase of the same thing again", async () => {
    const second = await paymentWebhook({ purchaseId: await newPurchase(), player: "Steve", productId: "diamonds-64" });
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.equal(second.body.outcome, "delivered");
    // The console reads its lines in order: once this give's echo is in, any repeat of the first purchase's would be too.
    await wrapped.agent.waitFor(/stdin> give Steve diamond 64\n[^]*stdin> give Steve diamond 64\n/);
    assert.equal(ran("give Steve diamond 64"), 2);
    assert.equal(ran("give Alex elytra 1"), 1);
  });
});
