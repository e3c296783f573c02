import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";
import { acceptOnOutpost } from "../support/fixtures.ts";

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";

/** The assistant's settings page in Chromium, under axe: owners change settings and press the emergency stop; members read. */
describe("dashboard: assistant", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  async function check(on: Page = page): Promise<void> {
    await assertAccessible(on, on.url());
    await on.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(on, on.url());
    await on.setViewportSize(desktop);
  }

  async function signIn(into: BrowserContext, email: string): Promise<Page> {
    const p = await into.newPage();
    await p.goto(`${t.baseUrl}/app`);
    await p.getByLabel("Email").fill(email);
    await p.getByLabel("Password").fill(password);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.waitForURL((u) => u.pathname.startsWith("/app/o") || u.pathname === "/app/organizations");
    return p;
  }

  before(async () => {
    t = await startListeningOutpost({});
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "owner@example.com", password, name: "Owner" });
    await identity.createUser({ email: "max@example.com", password, name: "Max" });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: desktop });
    context.setDefaultTimeout(10_000);
    page = await signIn(context, "owner@example.com");
    await page.getByLabel("Name", { exact: true }).fill("Acme");
    await page.getByLabel("URL name (slug)").fill("acme");
    await page.getByRole("button", { name: "Create organization" }).click();
    await page.waitForURL((u) => u.pathname === "/app/o/acme");
    // Max joins by invitation (no SMTP here: the operator confirms Max's address).
    const orgs = (key: string) => (path: string, body: unknown) =>
      fetch(`${t.baseUrl}/api/http/organizations/${path}`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<{ token: string }>);
    const ownerKey = (await identity.issueApiKey({ email: "owner@example.com", name: "tests" })).key;
    const { token } = await orgs(ownerKey)("inviteMember", { organizationSlug: "acme", email: "max@example.com", role: "member" });
    await acceptOnOutpost(t, "max@example.com", token);
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    await t?.close();
  });

  it("shows usage, saves settings (a cap above the plan's comes back with its message), presses and releases the emergency stop", async () => {
    await page.getByRole("navigation", { name: "Acme" }).getByRole("link", { name: "Assistant" }).click();
    await page.getByRole("link", { name: "Settings and usage" }).click();
    await page.getByRole("heading", { name: "Assistant", level: 1 }).waitFor();
    await page.getByText("0 of 50").first().waitFor();
    await check();
    await page.getByLabel("Questions per day for the organization").fill("51");
    await page.getByLabel("Custom instructions").fill("Say which server you mean.");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText(/at most 50 questions per day/).waitFor();
    assert.equal(await page.getByLabel("Custom instructions").inputValue(), "Say which server you mean.", "what was typed is kept");
    await check();
    await page.getByLabel("Questions per day for the organization").fill("20");
    await page.getByRole("checkbox", { name: /Run console commands/ }).check();
    await page.getByLabel("Answers").selectOption("detailed");
    await page.getByRole("checkbox", { name: "Turn on" }).check();
    await page.getByLabel("Break-glass lasts (minutes)").fill("15");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Assistant settings saved.").waitFor();
    await page.getByText("0 of 20").first().waitFor();
    assert.equal(await page.getByRole("checkbox", { name: /Run console commands/ }).isChecked(), true);
    assert.equal(await page.getByRole("checkbox", { name: /^On until/ }).isChecked(), true);
    await check();
    await page.getByRole("button", { name: "Emergency stop" }).click();
    await page.getByText(/Emergency stop on:/).waitFor();
    await page.getByText(/Stopped by owner@example.com/).waitFor();
    await check();
    await page.getByRole("button", { name: "Release the emergency stop" }).click();
    await page.getByText("Emergency stop released.").waitFor();
  });

  it("shows a member the settings read-only, without the custom instructions or the stop button", async () => {
    const memberContext = await browser.newContext({ viewport: desktop });
    memberContext.setDefaultTimeout(10_000);
    try {
      const member = await signIn(memberContext, "max@example.com");
      await member.goto(`${t.baseUrl}/app/o/acme/assistant/settings`);
      await member.getByRole("heading", { name: "Assistant", level: 1 }).waitFor();
      await member.getByText("Only owners and admins change these settings").waitFor();
      assert.equal(await member.getByRole("button", { name: "Emergency stop" }).count(), 0);
      assert.equal(await member.getByRole("button", { name: "Save settings" }).count(), 0);
      assert.equal(await member.getByText("Say which server you mean.").count(), 0);
      await member.getByText(/Run console commands/).waitFor();
      await check(member);
      // With the page's own form token, so the refusal is the role's, not the token's.
      const token = await member.locator('input[name="form_token"]').first().inputValue();
      const refused = await member.request.post(`${t.baseUrl}/app/o/acme/assistant/emergency-stop`, { form: { on: "yes", form_token: token } });
      assert.equal(refused.status(), 403);
      assert.match(await refused.text(), /Only owners and admins/);
    } finally {
      await memberContext.close();
    }
  });
});
