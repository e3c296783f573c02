import assert from "node:assert/strict";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";
import { startSmtpReceiver, verificationLinkTo, type SmtpReceiver } from "../support/receivers.ts";

const password = "correct horse battery staple";

/**
 * Invitations and organization API keys in headless Chromium against a whole Outpost: an owner
 * invites an address that has no account and copies the link shown once; a signed-out browser
 * opens it, is sent to sign in, creates the account there and comes back to the invitation, which
 * asks it to confirm its address first; it opens the link mailed at sign-up, confirms, comes back
 * to "Join … as member", joins, and the owner sees the new member. The owner makes an organization API key on the
 * overview page. Every page passes axe-core.
 */
describe("dashboard: invitations and organization API keys", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let smtp: SmtpReceiver;
  let browser: Browser;
  let ownerContext: BrowserContext;
  let owner: Page;
  let link = "";
  const errors: string[] = [];

  async function newPage(context: BrowserContext): Promise<Page> {
    const p = await context.newPage();
    p.on("pageerror", (e) => errors.push(`page error: ${e}`));
    return p;
  }

  before(async () => {
    smtp = await startSmtpReceiver();
    t = await startListeningOutpost({ SMTP_URL: smtp.url });
    browser = await launchChromium();
    ownerContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    ownerContext.setDefaultTimeout(10_000);
    owner = await newPage(ownerContext);
    await owner.goto(`${t.baseUrl}/sign-up?return_to=%2Fapp`);
    await owner.getByLabel("Name").fill("Olive Owner");
    await owner.getByLabel("Email").fill("olive@example.com");
    await owner.getByLabel("Password").fill(password);
    await owner.getByRole("button", { name: "Create account" }).click();
    await owner.waitForURL(/\/app\//);
    await owner.goto(`${t.baseUrl}/app/organizations`);
    await owner.getByLabel("Name", { exact: true }).fill("Acme Games");
    await owner.getByRole("button", { name: "Create organization" }).click();
    await owner.waitForURL((u) => u.pathname === "/app/o/acme-games");
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await smtp?.close();
  });

  it("invites an address without an account and shows the link once", async () => {
    await owner.goto(`${t.baseUrl}/app/o/acme-games/members`);
    await owner.getByText("No pending invitations.").waitFor();
    // The owner's own address is not confirmed yet: said beside it, with a way to get a new link.
    const ownRow = owner.getByRole("row", { name: /olive@example\.com/ });
    assert.match((await ownRow.textContent()) ?? "", /unverified/);
    assert.equal(await ownRow.getByRole("button", { name: "Verify" }).count(), 1);
    await assertAccessible(owner, "members with the invite form");
    await owner.locator("#f-invite-email").fill("newbie@example.com");
    await owner.getByRole("button", { name: "Send invitation" }).click();
    await owner.getByRole("heading", { name: "Invitation link" }).waitFor();
    link = await owner.locator("#invitation-link").inputValue();
    assert.match(link, /\/app\/invitations\/accept\?token=opi_[0-9A-Za-z]{40}$/);
    await assertAccessible(owner, "invitation link");
    await owner.getByRole("link", { name: "Done" }).click();
    const row = owner.getByRole("row", { name: /newbie@example\.com/ });
    await row.waitFor();
    assert.match((await row.textContent()) ?? "", /Member/);
    assert.equal(await owner.getByRole("button", { name: "Revoke the invitation of newbie@example.com" }).count(), 1);
    await assertAccessible(owner, "members with a pending invitation");
  });

  it("takes a signed-out person through sign-up back to the invitation, and joins", async () => {
    const context = await browser.newContext({ viewport: { width: 375, height: 800 } });
    context.setDefaultTimeout(10_000);
    const p = await newPage(context);
    const target = new URL(link);
    assert.equal(target.origin, t.baseUrl, "the link is on ACCOUNT_BASE_URL");
    await p.goto(link);
    await p.waitForURL((u) => u.pathname === "/sign-in");
    assert.equal(new URL(p.url()).searchParams.get("return_to"), `${target.pathname}${target.search}`);
    await p.getByRole("link", { name: "Create one" }).click();
    await p.waitForURL((u) => u.pathname === "/sign-up");
    await p.getByLabel("Name").fill("Nia Newbie");
    await p.getByLabel("Email").fill("newbie@example.com");
    await p.getByLabel("Password").fill(password);
    await p.getByRole("button", { name: "Create account" }).click();
    await p.waitForURL((u) => u.pathname === "/app/invitations/accept");
    // Not yet: the address must be confirmed first, and a new link is one button away.
    await p.getByText(/Confirm your address newbie@example\.com before you join/).waitFor();
    assert.equal(await p.getByRole("button", { name: /^Join/ }).count(), 0);
    assert.equal(await p.getByRole("button", { name: "Mail me a new link" }).count(), 1);
    await assertAccessible(p, "an invitation for an unverified address");
    const invitationPage = p.url();
    await p.goto(verificationLinkTo(smtp, "newbie@example.com")!.link);
    await p.getByRole("button", { name: "Confirm my address" }).click();
    await p.getByText("newbie@example.com is verified", { exact: false }).waitFor();
    await assertAccessible(p, "address confirmed");
    await p.goto(invitationPage);
    await p.getByRole("heading", { name: "Join Acme Games as member" }).waitFor();
    assert.match((await p.locator("main").textContent()) ?? "", /Olive Owner \(olive@example\.com\) invited you/);
    await assertAccessible(p, "accept an invitation");
    await p.getByRole("button", { name: "Join Acme Games" }).click();
    await p.waitForURL((u) => u.pathname === "/app/o/acme-games");
    await p.getByText("Welcome: you joined the organization.").waitFor();
    await assertAccessible(p, "joined");
    // Used once: the link now says so, with no button.
    await p.goto(`${t.baseUrl}${target.pathname}${target.search}`);
    await p.getByText("This invitation has already been used.").waitFor();
    assert.equal(await p.getByRole("button", { name: "Join Acme Games" }).count(), 0);
    await context.close();

    await owner.reload();
    await owner.getByText("No pending invitations.").waitFor();
    assert.match((await owner.getByRole("row", { name: /newbie@example\.com/ }).textContent()) ?? "", /Member/);
  });

  it("tells a person signed in with another address that the invitation is not theirs", async () => {
    await owner.goto(`${t.baseUrl}/app/o/acme-games/members`);
    await owner.locator("#f-invite-email").fill("someone-else@example.com");
    await owner.getByRole("button", { name: "Send invitation" }).click();
    const other = await owner.locator("#invitation-link").inputValue();
    const url = new URL(other);
    await owner.goto(`${t.baseUrl}${url.pathname}${url.search}`);
    await owner.getByText(/This invitation is for another email address/).waitFor();
    assert.equal(await owner.getByRole("button", { name: /^Join/ }).count(), 0);
    await assertAccessible(owner, "an invitation for someone else");
  });

  it("creates an organization API key on the overview page, shown once, listed and revocable", async () => {
    await owner.goto(`${t.baseUrl}/app/o/acme-games`);
    await owner.getByText("No organization API keys.").waitFor();
    await assertAccessible(owner, "overview with organization keys");
    await owner.getByLabel("Key name").fill("CI deploy");
    await owner.getByRole("button", { name: "Create organization API key" }).click();
    const key = await owner.getByLabel("API key").inputValue();
    assert.match(key, /^opk_/);
    await assertAccessible(owner, "organization key created");
    const res = await fetch(`${t.baseUrl}/api/http/organizations/listOrganizations`, { headers: { "x-api-key": key } });
    assert.equal(res.status, 200);
    await owner.getByRole("link", { name: "Done" }).click();
    await owner.getByRole("row", { name: /CI deploy/ }).waitFor();
    await owner.getByRole("button", { name: "Revoke organization key CI deploy" }).click();
    await owner.getByRole("dialog", { name: 'Revoke the organization API key "CI deploy"?' }).getByRole("button", { name: "Revoke" }).click();
    await owner.getByText("Organization API key revoked. It stops working at once.").waitFor();
    await owner.getByText("No organization API keys.").waitFor();
    assert.equal((await fetch(`${t.baseUrl}/api/http/organizations/listOrganizations`, { headers: { "x-api-key": key } })).status, 401);
    assert.deepEqual(errors, []);
  });
});
