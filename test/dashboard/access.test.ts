import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";
import { acceptOnOutpost } from "../support/fixtures.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";

/**
 * Finer access in Chromium, under axe: a member without access to a server asks for it from the
 * server's page; an owner narrows and approves it on the organization's Access page, and denies
 * another with a reason; the member sees their grants and requests; a view-only grant shows no
 * console.
 */
describe("dashboard: access grants and requests", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;
  let ownerContext: BrowserContext;
  let memberContext: BrowserContext;
  let api: (path: string, body: unknown) => Promise<Json>;
  const servers: Record<string, string> = {};

  async function signIn(context: BrowserContext, email: string, path: string): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${t.baseUrl}${path}`);
    if (new URL(page.url()).pathname === path) return page;
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === path);
    return page;
  }

  async function check(page: Page, name: string): Promise<void> {
    await assertAccessible(page, name);
    await page.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(page, name);
    await page.setViewportSize(desktop);
  }

  before(async () => {
    t = await startListeningOutpost();
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "olive@example.com", password, name: "Olive Owner" });
    await identity.createUser({ email: "mo@example.com", password, name: "Mo Member" });
    const key = (await identity.issueApiKey({ email: "olive@example.com", name: "tests" })).key;
    api = async (path, body) => {
      const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as Json;
      assert.equal(res.status, 200, JSON.stringify(json));
      return json;
    };
    await api("organizations/createOrganization", { name: "Acme", slug: "acme" });
    const invited = await api("organizations/addMember", { organizationSlug: "acme", email: "mo@example.com", role: "member" });
    const moId = await acceptOnOutpost(t, "mo@example.com", invited.token);
    for (const name of ["Survival", "Lobby", "Files"])
      servers[name] = (await api("servers/createServer", { organizationSlug: "acme", name, game: "minecraft" })).server.id;
    await api("organizations/createAccessGrant", { organizationSlug: "acme", userId: moId, serverId: servers.Survival, actions: ["view"] });
    browser = await launchChromium();
    ownerContext = await browser.newContext({ viewport: desktop });
    memberContext = await browser.newContext({ viewport: desktop });
    ownerContext.setDefaultTimeout(10_000);
    memberContext.setDefaultTimeout(10_000);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it("a member asks for a server they cannot see; an owner narrows and approves it", async () => {
    const member = await signIn(memberContext, "mo@example.com", `/app/o/acme/servers/${servers.Lobby}`);
    await member.getByRole("heading", { name: "No access to this server", level: 1 }).waitFor();
    await member.getByText("you have no access to this server").waitFor();
    await check(member, "no-access");
    await member.getByRole("checkbox", { name: "Read the console" }).check();
    await member.getByLabel("Maximum uses (1 to 1,000,000)").fill("abc");
    await member.getByRole("button", { name: "Request access" }).click();
    await member.getByText("Limits must be positive numbers").waitFor();
    await check(member, "no-access-refused");
    await member.getByLabel("Maximum uses (1 to 1,000,000)").fill("5");
    await member.getByLabel(/^Why/).fill("to watch the lobby during the event");
    await member.getByRole("button", { name: "Request access" }).click();
    await member.waitForURL((u) => u.pathname === "/app/o/acme/access");
    await member.getByText("Access requested").waitFor();
    await member.getByRole("row", { name: /Lobby.*Pending/ }).waitFor();
    await check(member, "member-access");

    const owner = await signIn(ownerContext, "olive@example.com", "/app/o/acme/access");
    const request = owner.getByRole("article", { name: "mo@example.com asks for Lobby" });
    await request.waitFor();
    await check(owner, "manager-access");
    // Widening is refused with the reason; narrowing goes through.
    await request.getByLabel("Maximum uses (1 to 1,000,000)").fill("50");
    await request.getByRole("button", { name: /^Approve/ }).click();
    await owner.getByText(/an approval may only narrow a request: the request asked for at most 5 uses/).waitFor();
    await check(owner, "manager-access-refused");
    await owner.getByRole("article", { name: "mo@example.com asks for Lobby" }).getByLabel("Maximum uses (1 to 1,000,000)").fill("3");
    await owner
      .getByRole("article", { name: "mo@example.com asks for Lobby" })
      .getByRole("button", { name: /^Approve/ })
      .click();
    await owner.getByText("Request approved").waitFor();
    await owner
      .getByRole("row", { name: /mo@example\.com Lobby/ })
      .getByText(/at most 3 uses/)
      .waitFor();
    await owner.getByText("No request is waiting.").waitFor();

    await member.reload();
    await member.getByRole("row", { name: /Lobby.*Approved/ }).waitFor();
    await member.getByRole("listitem").filter({ hasText: "Lobby" }).getByText("Active").waitFor();
  });

  it("a view-only grant shows no console; the member asks for more and is denied with a reason", async () => {
    const member = await signIn(memberContext, "mo@example.com", `/app/o/acme/servers/${servers.Survival}`);
    await member.getByText("Your grant to this server does not include its console.").waitFor();
    await check(member, "view-only");
    await member.getByRole("link", { name: "Ask for more access" }).click();
    await member.getByRole("heading", { name: "Ask for access", level: 1 }).waitFor();
    await member.getByRole("checkbox", { name: "Run console commands" }).check();
    await member.getByRole("button", { name: "Request access" }).click();
    await member.waitForURL((u) => u.pathname === "/app/o/acme/access");

    const owner = await signIn(ownerContext, "olive@example.com", "/app/o/acme/access");
    const request = owner.getByRole("article", { name: "mo@example.com asks for Survival" });
    await request.getByLabel("Reason for denying").fill("not during the event");
    await request.getByRole("button", { name: /^Deny/ }).click();
    await owner.getByText("Request denied").waitFor();

    await member.reload();
    await member.getByRole("row", { name: /Survival.*Denied.*not during the event/ }).waitFor();
    await check(member, "member-access-decided");
  });

  it("an owner grants file actions within file paths, and a path that is not one is refused on the form", async () => {
    const owner = await signIn(ownerContext, "olive@example.com", `/app/o/acme/servers/${servers.Files}`);
    await owner.getByRole("checkbox", { name: "Change files" }).check();
    await owner.getByLabel(/^File paths/).fill("plugins/Essentials/\n/etc");
    await owner.getByRole("button", { name: "Grant access" }).click();
    await owner
      .getByText(/file_paths\[1\] "\/etc" must be relative to the server's directory/)
      .first()
      .waitFor();
    await check(owner, "server-access-files-refused");
    await owner.getByLabel(/^File paths/).fill("plugins/Essentials/\nplugins/*.jar");
    await owner.getByRole("button", { name: "Grant access" }).click();
    await owner.getByText("Access granted").waitFor();
    await owner.getByText(/read files, change files \(files: plugins\/Essentials, plugins\/\*\.jar;/).waitFor();
  });

  it("the server page shows each grant's actions, limits and state", async () => {
    const owner = await signIn(ownerContext, "olive@example.com", `/app/o/acme/servers/${servers.Survival}`);
    await owner.getByRole("heading", { name: "Member access" }).waitFor();
    await owner.getByText(/Mo Member \(mo@example\.com\)/).waitFor();
    await owner.getByText("no limits").first().waitFor();
    await check(owner, "server-access");
  });
});
