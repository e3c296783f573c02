import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";
const newPassword = "a brand new password";

/**
 * Account → Security in headless Chromium: the sessions list, revoking one or all others, and
 * changing the password, which signs out every other browser; with and without script.
 */
describe("dashboard: password and sessions on the Security page", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;

  before(async () => {
    t = await startListeningOutpost();
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "sam@example.com", password, name: "Sam" });
    await identity.createUser({ email: "noscript@example.com", password, name: "No Script" });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  async function browserContext(options: { userAgent?: string; javaScriptEnabled?: boolean } = {}): Promise<BrowserContext> {
    const context = await browser.newContext({ viewport: desktop, ...options });
    context.setDefaultTimeout(10_000);
    return context;
  }

  async function signIn(context: BrowserContext, email: string, pw = password): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${t.baseUrl}/app/account/security`);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(pw);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === "/app/account/security");
    return page;
  }

  /** What the HTTP API answers to the context's session cookie. */
  async function apiStatus(context: BrowserContext): Promise<number> {
    const cookie = (await context.cookies()).find((c) => c.name === "outpost_session");
    if (!cookie) return 401;
    const res = await fetch(`${t.baseUrl}/api/http/auth/getSession`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
    return res.status;
  }

  async function check(page: Page, label: string): Promise<void> {
    await assertAccessible(page, label);
    await page.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(page, label);
    await page.setViewportSize(desktop);
  }

  it("lists the sessions, revokes one, and changes the password, ending the other browser's session but not this one", async () => {
    const laptop = await browserContext({ userAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0" });
    const phone = await browserContext({
      userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    });
    try {
      const page = await signIn(laptop, "sam@example.com");
      const phonePage = await signIn(phone, "sam@example.com");
      await page.reload();
      const sessions = page.getByRole("region", { name: "Your sessions" });
      await sessions.getByRole("row", { name: /Firefox on Linux.*This browser/ }).waitFor();
      const phoneRow = sessions.getByRole("row", { name: /Safari on iOS/ });
      await phoneRow.getByText("127.0.0.1").waitFor();
      await check(page, "security with sessions");

      // A wrong current password: the message next to the field, nothing changed.
      await page.getByLabel("Current password").fill("not my password");
      await page.getByLabel("New password").fill(newPassword);
      await page.getByRole("button", { name: "Change password" }).click();
      await page.locator("#f-currentPassword-error").filter({ hasText: "the current password is wrong" }).waitFor();
      assert.equal(await page.getByLabel("Current password").getAttribute("aria-invalid"), "true");
      assert.equal(await page.getByLabel("Current password").inputValue(), "", "a password is never sent back");
      await check(page, "password form error");
      assert.equal(await apiStatus(phone), 200);

      await page.getByLabel("Current password").fill(password);
      await page.getByLabel("New password").fill(newPassword);
      await page.getByRole("button", { name: "Change password" }).click();
      await page.getByRole("status").filter({ hasText: "Password changed." }).waitFor();
      assert.equal(await apiStatus(phone), 401, "the other browser's session ended");
      assert.equal(await apiStatus(laptop), 200, "this one did not");
      await phonePage.goto(`${t.baseUrl}/app/account/security`);
      assert.equal(new URL(phonePage.url()).pathname, "/sign-in");
      assert.equal(await sessions.getByRole("row", { name: /Safari on iOS/ }).count(), 0);
      const activity = page.getByRole("region", { name: "Recent activity of your account" });
      await activity
        .getByRole("row", { name: /user\.password_changed/ })
        .first()
        .waitFor();

      // The phone signs in again with the new password; the laptop revokes it (after the dialog).
      await phone.clearCookies();
      await signIn(phone, "sam@example.com", newPassword);
      await page.reload();
      await phoneRow.getByRole("button", { name: "Revoke session Safari on iOS at 127.0.0.1" }).click();
      await page.getByRole("dialog", { name: "Revoke the session of Safari on iOS?" }).getByRole("button", { name: "Revoke" }).click();
      await page.getByRole("status").filter({ hasText: "Session revoked" }).waitFor();
      assert.equal(await apiStatus(phone), 401);
      assert.equal(await apiStatus(laptop), 200);
      await activity
        .getByRole("row", { name: /session\.revoked/ })
        .first()
        .waitFor();
    } finally {
      await laptop.close();
      await phone.close();
    }
  });

  it("works without script: the password form, and revoking all other sessions after a confirmation page", async () => {
    const here = await browserContext({ javaScriptEnabled: false });
    const [other, another] = [await browserContext(), await browserContext()];
    try {
      const page = await signIn(here, "noscript@example.com");
      await signIn(other, "noscript@example.com");
      await signIn(another, "noscript@example.com");
      await page.reload();
      await page.getByRole("button", { name: "Revoke all other sessions" }).click();
      await page.getByRole("heading", { name: "Revoke every other session?" }).waitFor();
      // (The confirmation page is the dashboard's one for every action; axe needs script to run.)
      await page.getByRole("button", { name: "Revoke all other sessions" }).click();
      await page.getByRole("status").filter({ hasText: "Every other session is revoked" }).waitFor();
      assert.deepEqual([await apiStatus(other), await apiStatus(another), await apiStatus(here)], [401, 401, 200]);
      assert.equal(await page.getByRole("button", { name: "Revoke all other sessions" }).count(), 0, "no other session left");

      await page.getByLabel("Current password").fill(password);
      await page.getByLabel("New password").fill("short");
      await page.getByRole("button", { name: "Change password" }).click();
      await page.locator("#f-newPassword-error").waitFor();
      await page.getByLabel("Current password").fill(password);
      await page.getByLabel("New password").fill(newPassword);
      await page.getByRole("button", { name: "Change password" }).click();
      await page.getByRole("status").filter({ hasText: "Password changed." }).waitFor();

      // A forged form (no token) is refused and changes nothing.
      const forged = await here.request.post(`${t.baseUrl}/app/account/security/password`, { form: { currentPassword: newPassword, newPassword: "forged password!" } });
      assert.equal(forged.status(), 403);
      const signInAgain = await fetch(`${t.baseUrl}/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "noscript@example.com", password: newPassword }),
      });
      assert.equal(signInAgain.status, 200);
    } finally {
      await here.close();
      await other.close();
      await another.close();
    }
  });
});
