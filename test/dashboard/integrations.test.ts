import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";
import { startHttpReceiver, verifyStandardWebhook, type HttpReceiver } from "../support/receivers.ts";

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";

/** The integrations page in Chromium, under axe: add with the secret shown once, test, edit, rotate, disable, delete. */
describe("dashboard: integrations", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let receiver: HttpReceiver;

  async function check(): Promise<void> {
    await assertAccessible(page, page.url());
    await page.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(page, page.url());
    await page.setViewportSize(desktop);
  }

  before(async () => {
    receiver = await startHttpReceiver();
    t = await startListeningOutpost({ ALLOW_LOCAL_OUTBOUND: "true" });
    await createClient(IdentityService, t.outpost.runtime.core.transport()).createUser({ email: "owner@example.com", password, name: "Owner" });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: desktop });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    await page.goto(`${t.baseUrl}/app`);
    await page.getByLabel("Email").fill("owner@example.com");
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === "/app/organizations");
    await page.getByLabel("Name", { exact: true }).fill("Acme");
    await page.getByLabel("URL name (slug)").fill("acme");
    await page.getByRole("button", { name: "Create organization" }).click();
    await page.waitForURL((u) => u.pathname === "/app/o/acme");
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    await t?.close();
    await receiver?.close();
  });

  it("adds a webhook (a refused URL comes back next to its field) and shows its secret once", async () => {
    await page.getByRole("navigation", { name: "Acme" }).getByRole("link", { name: "Integrations" }).click();
    await page.getByRole("heading", { name: "Integrations", level: 1 }).waitFor();
    await page.getByText("No integrations yet.").waitFor();
    await check();
    await page.getByLabel("Name", { exact: true }).fill("Ops hook");
    await page.getByLabel("Kind").selectOption("webhook");
    await page.getByLabel("URL").fill("http://169.254.169.254/latest/meta-data/");
    await page.getByRole("button", { name: "Add integration" }).click();
    await page.locator("#f-url-error").waitFor();
    assert.match((await page.locator("#f-url-error").textContent())!, /link-local address/);
    assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "Ops hook", "the entered name is kept");
    await check();

    await page.getByLabel("URL").fill(`${receiver.origin}/hook?key=Q-s3cret`);
    await page.getByRole("button", { name: "Add integration" }).click();
    await page.getByRole("heading", { name: 'Webhook "Ops hook" added' }).waitFor();
    const secret = await page.getByRole("textbox", { name: "Signing secret" }).inputValue();
    assert.match(secret, /^whsec_/);
    await check();
    await page.getByRole("link", { name: "Back to integrations" }).click();
    assert.ok(!(await page.content()).includes(secret), "the list never shows the secret");
    await page.getByText(`${receiver.origin}/…hook`).waitFor();
    assert.ok(!(await page.content()).includes("s3cret"), "nor the URL's token: only its redacted form");

    await page.getByRole("button", { name: "Send test to Ops hook" }).click();
    await page.getByRole("heading", { name: "Test of Ops hook: delivered" }).waitFor();
    assert.ok(verifyStandardWebhook(secret, receiver.received[0].headers, receiver.received[0].body));
    await check();
  });

  it("edits an integration: a new name keeps the URL when its field is left empty; a bad new URL comes back; a good one is used", async () => {
    await page.getByRole("link", { name: "Edit Ops hook" }).click();
    await page.getByRole("heading", { name: "Edit Ops hook", level: 1 }).waitFor();
    assert.equal(await page.getByLabel("New URL").inputValue(), "", "the URL is never shown whole");
    assert.ok(!(await page.content()).includes("s3cret"));
    await check();
    await page.getByLabel("Name", { exact: true }).fill("Ops webhook");
    await page.getByRole("button", { name: "Save integration" }).click();
    await page.getByRole("status").filter({ hasText: "Integration saved." }).waitFor();
    const before = receiver.received.length;
    await page.getByRole("button", { name: "Send test to Ops webhook" }).click();
    await page.getByRole("heading", { name: "Test of Ops webhook: delivered" }).waitFor();
    assert.equal(receiver.received.at(-1)!.path, "/hook?key=Q-s3cret", "the URL stayed");

    await page.getByRole("link", { name: "Edit Ops webhook" }).click();
    await page.getByLabel("New URL").fill("http://10.0.0.1/hook");
    await page.getByRole("button", { name: "Save integration" }).click();
    await page.locator("#f-url-error").waitFor();
    assert.match((await page.locator("#f-url-error").textContent())!, /private/);
    await check();
    await page.getByLabel("New URL").fill(`${receiver.origin}/moved`);
    await page.getByLabel("Name", { exact: true }).fill("Ops hook");
    await page.getByRole("button", { name: "Save integration" }).click();
    await page.getByRole("status").filter({ hasText: "Integration saved." }).waitFor();
    await page.getByRole("button", { name: "Send test to Ops hook" }).click();
    await page.getByRole("heading", { name: "Test of Ops hook: delivered" }).waitFor();
    assert.equal(receiver.received.length, before + 2);
    assert.equal(receiver.received.at(-1)!.path, "/moved");
  });

  it("reports a failed test, rotates the secret (asking first), disables and deletes", async () => {
    receiver.behaviour = { status: 500 };
    await page.getByRole("button", { name: "Send test to Ops hook" }).click();
    await page.getByRole("heading", { name: "Test of Ops hook: failed" }).waitFor();
    await page.getByText("answered 500").waitFor();
    receiver.behaviour = { status: 204 };

    await page.getByRole("button", { name: "Rotate secret of Ops hook" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click();
    await page.getByRole("heading", { name: 'New secret for "Ops hook"' }).waitFor();
    const rotated = await page.getByRole("textbox", { name: "Signing secret" }).inputValue();
    assert.match(rotated, /^whsec_/);
    await page.getByRole("link", { name: "Back to integrations" }).click();

    await page.getByRole("button", { name: "Disable Ops hook" }).click();
    await page.getByRole("status").filter({ hasText: "Integration disabled" }).waitFor();
    await page.getByRole("button", { name: "Delete Ops hook" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await page.getByRole("status").filter({ hasText: "Integration deleted." }).waitFor();
    await page.getByText("No integrations yet.").waitFor();
  });
});
