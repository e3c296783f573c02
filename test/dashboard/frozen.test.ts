import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import type { Browser, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, docsScreenshot, launchChromium } from "../support/browser.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";
const plans = JSON.stringify({ free: { servers: 3, gameOAuthClients: 2 }, small: { servers: 2, gameOAuthClients: 2 } });

/**
 * Frozen servers as their organization sees them: `frozen` and its reason in the HTTP API's
 * server records, and a "Frozen" badge with the reason and what to do on the dashboard's servers
 * list and the server's page (headless Chromium, axe), where the server can still be renamed.
 */
describe("dashboard and HTTP API: frozen servers", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;
  const keys: Record<string, string> = {};
  const ids: Record<string, string> = {};
  const errors: string[] = [];

  const api = async (who: string, method: "GET" | "POST", path: string, body?: unknown): Promise<Json> => {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": keys[who], ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(json));
    return json;
  };

  async function signedIn(path: string): Promise<Page> {
    const context = await browser.newContext({ viewport: desktop });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(`page error: ${e}`));
    await page.goto(`${t.baseUrl}${path}`);
    await page.getByLabel("Email").fill("olive@example.com");
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === path);
    return page;
  }

  async function check(page: Page, name: string): Promise<void> {
    await assertAccessible(page, name);
    await docsScreenshot(page, name);
    await page.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(page, name);
    await page.setViewportSize(desktop);
  }

  before(async () => {
    t = await startListeningOutpost({ PLANS: plans, DEFAULT_PLAN: "free" });
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "olive@example.com", password, name: "Olive Owner" });
    await identity.createUser({ email: "root@example.com", password, name: "Root", platformAdmin: true });
    keys.owner = (await identity.issueApiKey({ email: "olive@example.com", name: "tests" })).key;
    keys.root = (await identity.issueApiKey({ email: "root@example.com", name: "tests" })).key;
    await api("owner", "POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
    for (const name of ["Survival", "Creative", "Skyblock"]) {
      ids[name] = (await api("owner", "POST", "servers/createServer", { organizationSlug: "acme", name, game: "minecraft" })).server.id;
    }
    await api("root", "POST", "admin/setOrganizationPlan", { organizationSlug: "acme", plan: "small" });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });
  afterEach(function () {
    const seen = errors.splice(0);
    if (this.currentTest?.state === "passed") assert.deepEqual(seen, []);
  });

  it("servers/listServers and getServer say which servers are frozen and why", async () => {
    const list: Json[] = await api("owner", "GET", "servers/listServers?organizationSlug=acme");
    assert.deepEqual(
      list.map((s) => [s.name, s.frozen === true, s.frozenReason ?? ""]),
      [
        ["Survival", false, ""],
        ["Creative", false, ""],
        ["Skyblock", true, "this server is frozen: the organization's plan allows 2 servers; raise the plan or delete servers to unfreeze it"],
      ],
    );
    const { server } = await api("owner", "GET", `servers/getServer?serverId=${ids.Skyblock}`);
    assert.equal(server.frozen, true);
  });

  it("the servers list marks the frozen server and says what to do; its page gives the reason and it can still be renamed", async () => {
    const page = await signedIn("/app/o/acme/servers");
    const row = (name: string) => page.getByRole("row", { name: new RegExp(`^${name}`) });
    assert.equal(await row("Skyblock").locator('[data-field="frozen"]').textContent(), "Frozen");
    assert.equal(await row("Survival").locator('[data-field="frozen"]').count(), 0);
    const note = page.getByRole("note");
    await note.getByRole("heading", { name: "1 server is frozen" }).waitFor();
    assert.match(await note.innerText(), /Raise the plan \(ask a platform admin\) or delete servers/);
    await check(page, "servers with a frozen one");

    await page.getByRole("link", { name: "Skyblock" }).click();
    const reason = page.locator('[data-field="frozen-reason"]');
    await reason.getByRole("heading", { name: /This server is frozen/ }).waitFor();
    assert.match(await reason.innerText(), /This server is frozen: the organization's plan allows 2 servers; raise the plan or delete servers to unfreeze it\./);
    assert.equal(await page.getByRole("heading", { name: "Console" }).count(), 0, "no console on a frozen server");
    await check(page, "a frozen server");

    await page.getByLabel("Server name").fill("Skyblock 2");
    await page.getByRole("button", { name: "Save name" }).click();
    await page.getByRole("heading", { name: "Skyblock 2", level: 1 }).waitFor();
    await page.locator('[data-field="frozen-reason"]').waitFor();
    await page.context().close();
  });
});
