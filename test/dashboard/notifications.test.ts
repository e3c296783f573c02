import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import type { Browser, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const password = "correct horse battery staple";

/**
 * The bell and the notifications page in headless Chromium against a whole Outpost: the count in
 * the top bar changes live when someone adds the person to an organization (over the HTTP API, with
 * an API key), the page lists it, marks it read, and keeps the preferences; and the same
 * notifications through /api/http.
 */
describe("dashboard: notifications and the bell", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;
  let page: Page;
  let ownerApi: (path: string, body?: unknown) => Promise<Json>;
  let memberApi: (path: string, body?: unknown) => Promise<Json>;
  const errors: string[] = [];

  before(async () => {
    t = await startListeningOutpost();
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "olive@example.com", password, name: "Olive Owner" });
    await identity.createUser({ email: "mo@example.com", password, name: "Mo Member" });
    const apiAs = (key: string) => async (path: string, body?: unknown) => {
      const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { "x-api-key": key, ...(body !== undefined && { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as Json;
      assert.equal(res.status, 200, JSON.stringify(json));
      return json;
    };
    ownerApi = apiAs((await identity.issueApiKey({ email: "olive@example.com", name: "tests" })).key);
    memberApi = apiAs((await identity.issueApiKey({ email: "mo@example.com", name: "tests" })).key);
    await ownerApi("organizations/createOrganization", { name: "Acme", slug: "acme" });
    // Mo is a verified colleague of Olive's (her lobby), so she adds Mo to Acme at once, which tells Mo.
    await ownerApi("organizations/createOrganization", { name: "Lobby", slug: "lobby" });
    await identity.markEmailVerified({ email: "mo@example.com" });
    await memberApi("organizations/acceptInvitation", {
      token: (await ownerApi("organizations/inviteMember", { organizationSlug: "lobby", email: "mo@example.com", role: "member" })).token,
    });
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    page.on("pageerror", (e) => errors.push(`page error: ${e}`));
    await page.goto(`${t.baseUrl}/app/notifications`);
    await page.getByLabel("Email").fill("mo@example.com");
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === "/app/notifications");
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it("shows an empty list and a bell with nothing unread, accessibly", async () => {
    await page.getByText("Nothing yet.").waitFor();
    assert.equal(await page.locator("[data-unread]").isHidden(), true);
    await assertAccessible(page, "notifications (empty)");
  });

  it("counts a new notification in the bell without a reload, and lists it", async () => {
    await ownerApi("organizations/addMember", { organizationSlug: "acme", email: "mo@example.com", role: "member" });
    const badge = page.locator("[data-unread]");
    await badge.waitFor({ state: "visible" });
    assert.equal(await badge.textContent(), "1");
    assert.equal(await page.locator("[data-unread-words]").textContent(), ", 1 unread");
    await page.reload();
    const item = page.locator(".notification.unread");
    assert.match((await item.textContent()) ?? "", /You were added to Acme/);
    assert.equal(await item.getByRole("link", { name: "You were added to Acme" }).getAttribute("href"), "/app/o/acme");
    await assertAccessible(page, "notifications (one unread)");
  });

  it("marks it read from the page, and the API agrees", async () => {
    await page.getByRole("button", { name: /^Mark read\s*: You were added to Acme$/ }).click();
    await page.waitForURL((u) => u.pathname === "/app/notifications");
    assert.equal(await page.locator(".notification.unread").count(), 0);
    assert.equal(await page.locator("[data-unread]").isHidden(), true);
    assert.equal((await memberApi("notifications/getUnreadCount")).unread ?? 0, 0);
    const listed = await memberApi("notifications/listNotifications");
    assert.equal(listed.notifications.length, 1);
    assert.ok(listed.notifications[0].readAt, "read at is set");
    assert.equal(listed.notifications[0].kind, "membership");
  });

  it("keeps the preferences the form sets, and then keeps nothing of a kind turned off", async () => {
    const prefs = page.locator("#pref-show");
    await prefs.getByLabel("Your organizations: added, removed, a role changed").uncheck();
    await page.locator("#pref-push").getByLabel("Your API keys: one expires within a week").check();
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Notification preferences saved.").waitFor();
    const { preferences } = await memberApi("notifications/getNotificationPreferences");
    assert.deepEqual(
      preferences.map((p: Json) => [p.kind, p.inApp ?? false, p.push ?? false]),
      [
        ["membership", false, false],
        ["api_key", true, true],
        ["alert", true, false],
        ["access_request", true, false],
      ],
    );
    await ownerApi("organizations/updateMemberRole", { organizationSlug: "acme", userId: (await memberApi("auth/getSession")).user.id, role: "admin" });
    assert.equal((await memberApi("notifications/getUnreadCount")).unread ?? 0, 0);
    await assertAccessible(page, "notifications (preferences saved)");
    assert.deepEqual(errors, []);
  });
});
