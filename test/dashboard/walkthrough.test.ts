/* eslint-disable max-lines -- one walk through the dashboard: each step builds on what the one before made (the organization, its server, its client), so the scenario stays in one file */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { startAgentRun, type AgentProcess } from "../support/agent.ts";
import { assertAccessible, docsScreenshot, launchChromium } from "../support/browser.ts";
import { verifyEmail } from "../support/fixtures.ts";

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";

/**
 * The dashboard as its users go through it, in headless Chromium against a whole Outpost: sign up,
 * an organization, a server whose real agent turns it online on the open page, a Game OAuth client
 * and its secret rotation, an API key used and revoked, a member who sees only what is granted.
 * Every page passes axe-core (no serious or critical violation) at 1280 px and at 375 px.
 */
describe("dashboard: a walk through every area in headless Chromium", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;
  let owner: BrowserContext;
  let page: Page;
  let agent: AgentProcess | undefined;
  const errors: string[] = [];
  const state: { orgSlug?: string; serverId?: string; agentKey?: string; clientId?: string; secret?: string; apiKey?: string } = {};

  /** axe at both widths, no sideways scrolling, and (when named) a 1280×800 screenshot for the docs. */
  async function check(p: Page, name: string, screenshot = true): Promise<void> {
    await assertAccessible(p, name);
    if (screenshot) await docsScreenshot(p, name);
    await p.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(p, name);
    await p.setViewportSize(desktop);
  }

  async function newPage(context: BrowserContext): Promise<Page> {
    const p = await context.newPage();
    p.on("pageerror", (e) => errors.push(`page error: ${e}`));
    p.on("console", (m) => m.type() === "error" && !m.text().startsWith("Failed to load resource") && errors.push(`console: ${m.text()}`));
    // Scripts, styles and polls must load; pages themselves may answer 4xx on purpose (403, 400).
    p.on("response", (r) => {
      if (r.status() >= 400 && r.request().resourceType() !== "document" && new URL(r.url()).pathname !== "/favicon.ico") errors.push(`${r.status()} ${r.url()}`);
    });
    return p;
  }

  async function signUp(context: BrowserContext, name: string, email: string): Promise<Page> {
    const p = await newPage(context);
    await p.goto(`${t.baseUrl}/sign-up?return_to=%2Fapp`);
    await p.getByLabel("Name").fill(name);
    await p.getByLabel("Email").fill(email);
    await p.getByLabel("Password").fill(password);
    await p.getByRole("button", { name: "Create account" }).click();
    await p.waitForURL(/\/app\//);
    return p;
  }

  before(async () => {
    t = await startListeningOutpost();
    browser = await launchChromium();
    owner = await browser.newContext({ viewport: desktop });
    owner.setDefaultTimeout(10_000);
    await owner.grantPermissions(["clipboard-read", "clipboard-write"], { origin: t.baseUrl });
  });
  after(async () => {
    await agent?.stop();
    await browser?.close();
    await t?.close();
  });
  afterEach(function () {
    // A script error or a console error on any page fails the step it happened in.
    const seen = errors.splice(0);
    if (this.currentTest?.state === "passed") assert.deepEqual(seen, []);
  });

  it("sends a visitor to sign in and back, and a new account to create an organization", async () => {
    const p = await newPage(owner);
    const response = await p.goto(`${t.baseUrl}/app/account/security`);
    assert.equal(new URL(p.url()).pathname, "/sign-in");
    assert.equal(new URL(p.url()).searchParams.get("return_to"), "/app/account/security");
    assert.equal(response!.status(), 200);
    await p.close();

    page = await signUp(owner, "Olive Owner", "olive@example.com");
    assert.equal(new URL(page.url()).pathname, "/app/organizations");
    await page.getByRole("heading", { name: "Organizations", level: 1 }).waitFor();
    const headers = (await page.goto(page.url()))!.headers();
    assert.match(headers["content-security-policy"], /script-src 'self'/);
    assert.doesNotMatch(headers["content-security-policy"], /unsafe-inline/);
    await check(page, "organizations");
  });

  it("creates an organization: slug suggested from the name, the API's message next to the slug", async () => {
    await page.getByLabel("Name", { exact: true }).fill("Acme Games");
    assert.equal(await page.getByLabel("URL name (slug)").inputValue(), "acme-games", "the slug follows the name");
    await page.getByLabel("URL name (slug)").fill("no good!");
    await page.getByRole("button", { name: "Create organization" }).click();
    const slugError = page.locator("#f-slug-error");
    await slugError.waitFor();
    assert.match((await slugError.textContent())!, /lower-case letters and digits/, "the rule in words, not its regular expression");
    assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "Acme Games", "the entered name is kept");
    assert.equal(await page.getByLabel("URL name (slug)").getAttribute("aria-invalid"), "true");
    assert.equal(await page.getByLabel("URL name (slug)").getAttribute("aria-describedby"), "f-slug-hint f-slug-error");
    await check(page, "validation-error", true);

    await page.getByLabel("URL name (slug)").fill("acme-games");
    await page.getByRole("button", { name: "Create organization" }).click();
    await page.waitForURL(`${t.baseUrl}/app/o/acme-games?notice=org-created`);
    state.orgSlug = "acme-games";
    await page.getByRole("status").filter({ hasText: "Organization created." }).waitFor();
    await page.getByText("Servers 0/3").waitFor();
    await page.getByText("Game OAuth clients 0/2").waitFor();
    await page.getByText("Knowledge notes 0/50").waitFor();
    // The current organization is visible in the switcher.
    assert.equal(await page.getByLabel("Organization", { exact: true }).inputValue(), "acme-games");
    await check(page, "organization-overview");
  });

  it("creates a server and shows its agent key once, with the command, ready to copy", async () => {
    await page.getByRole("navigation", { name: "Acme Games" }).getByRole("link", { name: "Servers" }).click();
    await page.getByText("No servers yet").waitFor();
    await page.getByLabel("Server name").fill(" ");
    await page.getByRole("button", { name: "Create server" }).click();
    await page.locator("#f-name-error").waitFor();
    assert.equal(await page.getByRole("radio", { name: "Minecraft" }).isChecked(), true);

    await page.getByLabel("Server name").fill("Survival");
    await page.getByRole("radio", { name: "Minecraft" }).check();
    await page.getByRole("button", { name: "Create server" }).click();
    await page.getByRole("heading", { name: 'Server "Survival" created' }).waitFor();
    const key = await page.getByRole("textbox", { name: "Agent key" }).inputValue();
    assert.match(key, /^opa_[0-9A-Za-z]{40}$/);
    assert.match((await page.locator("#agent-key-warning").textContent())!, /shown only this once/);
    await page.locator('button[data-copy="agent-key"]').click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    assert.equal(await page.evaluate("navigator.clipboard.readText()"), key, "the copy button put the key on the clipboard");
    assert.equal(await page.getByLabel("Command to run the agent").inputValue(), `npx outpost-agent run --url ${t.baseUrl} --key ${key}`);
    state.agentKey = key;
    await check(page, "server-created");
  });

  it("turns the server online on the open page, with its players, when the real agent connects — no reload", async () => {
    await page.goto(`${t.baseUrl}/app/o/acme-games/servers`);
    const row = page.getByRole("row", { name: /Survival/ });
    await row.getByText("Offline", { exact: true }).waitFor();
    await page.evaluate("window.__sameDocument = true");

    agent = startAgentRun(["--url", t.baseUrl, "--key", state.agentKey!]);
    await row.getByText("Online", { exact: true }).waitFor({ timeout: 15_000 });
    agent.send(`players Steve:${randomUUID()},Alex:${randomUUID()}`);
    await row.locator('[data-field="players"]').filter({ hasText: /^2$/ }).waitFor({ timeout: 10_000 });
    assert.equal(await page.evaluate("window.__sameDocument"), true, "the page was not reloaded");
    assert.match((await page.locator("#announcer").textContent())!, /Survival/);
    await check(page, "servers");
    await page.setViewportSize({ width: 375, height: 800 });
    await docsScreenshot(page, "servers-mobile");
    await page.setViewportSize(desktop);

    // The status the page polls answers only the session's holder.
    const anonymous = await fetch(`${t.baseUrl}/app/o/acme-games/servers/status`);
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { code: string }).code, "unauthenticated");

    await agent.stop();
    agent = undefined;
    await row.getByText("Offline", { exact: true }).waitFor({ timeout: 15_000 });
    assert.equal(await page.evaluate("window.__sameDocument"), true);
    await page.goto(`${t.baseUrl}/app/o/acme-games`);
    await page.getByText("Servers 1/3").waitFor();
    // What the agent reported stays on the server's page.
    await page.goto(`${t.baseUrl}/app/o/acme-games/servers`);
    await page.getByRole("link", { name: "Survival" }).click();
    await page.locator("dl.facts").getByText("Verifies players (online mode)").waitFor();
    assert.match(await page.locator("dl.facts").innerText(), /outpost-agent \d+\.\d+/);
  });

  it("renames the server on its page and lists it under the new name", async () => {
    await page.goto(`${t.baseUrl}/app/o/acme-games/servers`);
    await page.getByRole("link", { name: "Survival" }).click();
    state.serverId = page.url().split("/").at(-1);
    await page.getByLabel("Server name").fill("Survival SMP");
    await page.getByRole("button", { name: "Save name" }).click();
    await page.getByRole("status").filter({ hasText: "Server renamed." }).waitFor();
    await page.getByRole("heading", { name: "Survival SMP", level: 1 }).waitFor();
    await check(page, "server");
  });

  it("creates a Game OAuth client with validation per redirect URI line and a server picker", async () => {
    await page.getByRole("link", { name: "Game OAuth" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Forum");
    await page.getByLabel("Redirect URIs").fill("https://forum.example.com/callback\nhttp://forum.example.com/insecure");
    await page.getByRole("radio", { name: "Only the servers selected below" }).check();
    await page.getByRole("checkbox", { name: "Survival SMP (Minecraft)" }).check();
    await page.getByRole("button", { name: "Create client" }).click();
    const uriError = page.locator("#f-redirectUris-error");
    await uriError.waitFor();
    assert.match((await uriError.textContent())!, /^⚠?\s*Line 2: .*https/i);
    assert.equal(await page.getByLabel("Redirect URIs").inputValue(), "https://forum.example.com/callback\nhttp://forum.example.com/insecure");
    assert.equal(await page.getByRole("checkbox", { name: "Survival SMP (Minecraft)" }).isChecked(), true, "the choices are kept");

    await page.getByLabel("Redirect URIs").fill("https://forum.example.com/callback");
    await page.getByRole("button", { name: "Create client" }).click();
    await page.getByRole("heading", { name: 'Client "Forum" created' }).waitFor();
    state.clientId = await page.getByRole("textbox", { name: "Client ID" }).inputValue();
    state.secret = await page.getByRole("textbox", { name: "Client secret" }).inputValue();
    assert.match(state.clientId, /^ogc_[0-9A-Za-z]{24}$/);
    assert.match(state.secret, /^ogs_[0-9A-Za-z]{40}$/);
    await check(page, "game-oauth-client-created", false);
    await page.getByRole("link", { name: "Go to the client" }).click();
    await page.getByRole("heading", { name: "Forum", level: 1 }).waitFor();
    assert.equal(await page.getByRole("textbox", { name: "Client ID" }).inputValue(), state.clientId);
    await page
      .getByText(`${state.secret.slice(0, 8)}`)
      .first()
      .waitFor();
    await page.getByText("Selected servers: Survival SMP").waitFor();
    await check(page, "game-oauth-client");
  });

  it("gives the client's issuer and discovery URLs of the running Game OAuth issuer", async () => {
    await page.goto(`${t.baseUrl}/app/o/acme-games/clients/${state.clientId}`);
    await page.getByRole("heading", { name: "Connect your app" }).waitFor();
    assert.equal(
      await page.getByText("issuer URL is not configured").count(),
      0,
      "the edge must pass GAME_ISSUER_URL to createDashboard (EdgeOptions.gameIssuerUrl, from server/compose.ts)",
    );
    assert.equal(await page.getByLabel("Issuer URL").inputValue(), t.gameIssuerUrl);
    const discovery = await page.getByLabel("Discovery URL").inputValue();
    assert.equal(discovery, `${t.gameIssuerUrl}/.well-known/openid-configuration`);
    const document = (await (await fetch(discovery)).json()) as { issuer: string };
    assert.equal(document.issuer, t.gameIssuerUrl);
  });

  it("rotates the client secret only after confirming in a dialog", async () => {
    await page.goto(`${t.baseUrl}/app/o/acme-games/clients/${state.clientId}`);
    await page.getByRole("button", { name: "Rotate secret" }).click();
    const dialog = page.getByRole("dialog", { name: "Rotate the secret of Forum?" });
    await dialog.waitFor();
    await check(page, "confirm-dialog", false);
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden" });
    assert.equal(new URL(page.url()).pathname, `/app/o/acme-games/clients/${state.clientId}`);

    await page.getByRole("button", { name: "Rotate secret" }).click();
    await dialog.getByRole("button", { name: "Rotate secret" }).click();
    await page.getByRole("heading", { name: 'New secret for "Forum"' }).waitFor();
    const rotated = await page.getByRole("textbox", { name: "Client secret" }).inputValue();
    assert.match(rotated, /^ogs_/);
    assert.notEqual(rotated, state.secret);
    // The old secret no longer authenticates at the token endpoint; the new one does (past client auth).
    const token = (secret: string) =>
      fetch(`${t.gameIssuerUrl}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: "nope",
          redirect_uri: "https://forum.example.com/callback",
          client_id: state.clientId!,
          client_secret: secret,
        }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error: string } }));
    assert.deepEqual((await token(state.secret!)).body.error, "invalid_client");
    assert.deepEqual((await token(rotated)).body.error, "invalid_grant");
  });

  it("edits the client, disables and enables it, and deletes it after confirmation", async () => {
    await page.goto(`${t.baseUrl}/app/o/acme-games/clients/${state.clientId}`);
    await page.getByLabel("Name", { exact: true }).fill("Forum (staging)");
    await page.getByRole("radio", { name: "Any server of the organization" }).check();
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByRole("status").filter({ hasText: "Client saved." }).waitFor();
    await page.getByRole("heading", { name: "Forum (staging)", level: 1 }).waitFor();
    await page.getByRole("definition").filter({ hasText: "Any server of the organization" }).waitFor();

    await page.getByRole("button", { name: "Disable client" }).click();
    await page.getByRole("dialog", { name: "Disable Forum (staging)?" }).getByRole("button", { name: "Disable client" }).click();
    await page.getByRole("status").filter({ hasText: "Client disabled" }).waitFor();
    await page.goto(`${t.baseUrl}/app/o/acme-games/clients`);
    await page
      .getByRole("row", { name: /Forum \(staging\)/ })
      .getByText("Disabled")
      .waitFor();
    await check(page, "game-oauth-clients");
    await page.getByRole("link", { name: "Forum (staging)" }).click();
    await page.getByRole("button", { name: "Enable client" }).click();
    await page.getByRole("status").filter({ hasText: "Client enabled." }).waitFor();

    await page.getByRole("button", { name: "Delete client" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete client" }).click();
    await page.getByRole("status").filter({ hasText: "Client deleted." }).waitFor();
    await page.getByText("No Game OAuth clients yet.").waitFor();
    const gone = await page.goto(`${t.baseUrl}/app/o/acme-games/clients/${state.clientId}`);
    assert.equal(gone!.status(), 404);
  });

  it("creates an API key that works against the HTTP API until it is revoked (after confirmation)", async () => {
    await page.getByRole("navigation", { name: "Account" }).getByRole("link", { name: "Security" }).click();
    await page.getByLabel("Key name").fill("deploy script");
    await page.getByLabel("Expires").selectOption("90");
    await page.getByRole("button", { name: "Create API key" }).click();
    await page.getByRole("heading", { name: 'API key "deploy script" created' }).waitFor();
    const key = await page.getByRole("textbox", { name: "API key" }).inputValue();
    assert.match(key, /^opk_[0-9A-Za-z]{40}$/);
    await page.locator('button[data-copy="api-key"]').click();
    assert.equal(await page.evaluate("navigator.clipboard.readText()"), key);
    await check(page, "api-key-created", false);

    const list = () => fetch(`${t.baseUrl}/api/http/servers/listServers?organizationSlug=acme-games`, { headers: { "X-API-Key": key } });
    const ok = await list();
    assert.equal(ok.status, 200);
    const servers = (await ok.json()) as Array<{ name: string }>;
    assert.deepEqual(
      servers.map((s) => s.name),
      ["Survival SMP"],
    );

    await page.getByRole("link", { name: "Done" }).click();
    const keys = page.getByRole("region", { name: "Your API keys" });
    const row = keys.getByRole("row", { name: /deploy script/ });
    await row.getByText(/^opk_/).waitFor();
    assert.doesNotMatch((await row.textContent())!, /Never.*Never/, "it has an expiry and was used");
    await check(page, "security");
    const myActivity = page.getByRole("region", { name: "Recent activity of your account" });
    await myActivity
      .getByRole("row", { name: /api_key\.created/ })
      .first()
      .waitFor();
    await row.getByRole("button", { name: "Revoke key deploy script" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
    await page.getByRole("status").filter({ hasText: "API key revoked." }).waitFor();
    assert.equal(await keys.getByRole("row", { name: /deploy script/ }).count(), 0);
    const refused = await list();
    assert.equal(refused.status, 401);
  });

  it("adds a member by email (an invitation for someone new; the API's message next to the field) who sees no server until granted", async () => {
    const memberContext = await browser.newContext({ viewport: desktop });
    memberContext.setDefaultTimeout(10_000);
    try {
      const member = await signUp(memberContext, "Max Member", "max@example.com");
      await page.goto(`${t.baseUrl}/app/o/acme-games/members`);
      await page.getByLabel("Email").fill("olive@example.com");
      await page.getByRole("button", { name: "Add member" }).click();
      await page
        .locator("#f-email-error")
        .filter({ hasText: /already a member/ })
        .waitFor();
      assert.equal(await page.getByLabel("Email").inputValue(), "olive@example.com");
      // Max shares no organization with the owner yet: added by invitation, as anyone new is.
      await page.getByLabel("Email").fill("max@example.com");
      await page.getByLabel("Role").selectOption("member");
      await page.getByRole("button", { name: "Add member" }).click();
      await page.getByRole("heading", { name: "Invitation link" }).waitFor();
      const link = new URL(await page.locator("#invitation-link").inputValue());
      // This Outpost has no SMTP: the operator confirms Max's address, and Max joins with the link.
      await verifyEmail(t, "max@example.com");
      await member.goto(`${t.baseUrl}${link.pathname}${link.search}`);
      await member.getByRole("button", { name: "Join Acme Games" }).click();
      await member.getByText("Welcome: you joined the organization.").waitFor();
      await page.goto(`${t.baseUrl}/app/o/acme-games/members`);
      await page.getByRole("row", { name: /max@example.com/ }).waitFor();
      await check(page, "members");

      await member.goto(`${t.baseUrl}/app`);
      await member.waitForURL(`${t.baseUrl}/app/o/acme-games/servers`);
      await member.getByText("No servers are shared with you yet").waitFor();
      assert.equal(await member.getByRole("row", { name: /Survival/ }).count(), 0);
      // Members see no management tabs and cannot reach the activity log or the admin area.
      assert.equal(await member.getByRole("link", { name: "Activity" }).count(), 0);
      assert.equal(await member.getByRole("link", { name: "Admin" }).count(), 0);
      assert.equal((await member.goto(`${t.baseUrl}/app/o/acme-games/activity`))!.status(), 403);
      assert.equal((await member.goto(`${t.baseUrl}/app/admin`))!.status(), 403);
      await member.getByRole("heading", { name: "Not allowed" }).waitFor();
      await check(member, "forbidden", false);
      // A form the member is not shown, posted anyway, is a 403 page saying why; nothing is created.
      await member.goto(`${t.baseUrl}/app/o/acme-games/servers`);
      const formToken = await member.locator("input[name=form_token]").first().inputValue();
      const refused = await member.request.post(`${t.baseUrl}/app/o/acme-games/servers`, {
        form: { form_token: formToken, name: "Sneaky", game: "minecraft" },
        headers: { origin: t.baseUrl },
      });
      assert.equal(refused.status(), 403);
      assert.match(await refused.text(), /only an owner or admin/);

      // The owner grants access on the server's page; the member then sees it.
      await page.goto(`${t.baseUrl}/app/o/acme-games/servers/${state.serverId}`);
      await page.getByLabel("Give access to").selectOption({ label: "Max Member (max@example.com)" });
      await page.getByRole("button", { name: "Grant access" }).click();
      await page.getByRole("status").filter({ hasText: "Access granted." }).waitFor();
      await member.goto(`${t.baseUrl}/app/o/acme-games/servers`);
      await member.getByRole("row", { name: /Survival SMP/ }).waitFor();
      await check(member, "member-servers", false);

      // The owner makes them an admin, then removes them (after confirming); they lose the organization.
      // The member waits on a page that does not poll the organization (its poll would be refused meanwhile).
      await member.goto(`${t.baseUrl}/app/account/security`);
      await page.goto(`${t.baseUrl}/app/o/acme-games/members`);
      await page.getByLabel("Role of max@example.com", { exact: true }).selectOption({ label: "Admin" });
      await page.getByRole("button", { name: "Save role of max@example.com" }).click();
      await page.getByRole("status").filter({ hasText: "Role changed." }).waitFor();
      assert.equal(await page.getByLabel("Role of max@example.com", { exact: true }).inputValue(), "2");
      await page.getByRole("button", { name: "Remove max@example.com" }).click();
      await page.getByRole("dialog", { name: "Remove max@example.com from Acme Games?" }).getByRole("button", { name: "Remove" }).click();
      await page.getByRole("status").filter({ hasText: "Member removed." }).waitFor();
      assert.equal(await page.getByRole("row", { name: /max@example.com/ }).count(), 0);
      assert.equal((await member.goto(`${t.baseUrl}/app/o/acme-games/servers`))!.status(), 404);
    } finally {
      await memberContext.close();
    }
  });

  it("shows the activity log to the owner with kinds and severities, filtered by kind and server; the owner acknowledges an event", async () => {
    await page.goto(`${t.baseUrl}/app/o/acme-games/activity`);
    await page.getByRole("cell", { name: "organization.created", exact: true }).waitFor();
    await page.getByRole("checkbox", { name: "Server status" }).check();
    await page.getByRole("checkbox", { name: "Configuration" }).check();
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByRole("cell", { name: "server.created", exact: true }).first().waitFor();
    assert.deepEqual(new URL(page.url()).searchParams.getAll("kind"), ["status", "configuration"]);
    const connected = page.getByRole("row", { name: /server\.agent_connected/ });
    assert.equal(await connected.count(), 1);
    assert.match(await connected.innerText(), /Info\s+Server status/);
    await page.getByLabel("Server", { exact: true }).selectOption({ label: "Survival SMP" });
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByRole("cell", { name: "server.renamed", exact: true }).waitFor();
    assert.equal(await page.getByRole("cell", { name: "organization.created", exact: true }).count(), 0);
    await connected.getByRole("button", { name: /^Acknowledge server\.agent_connected/ }).click();
    await page.getByRole("status").filter({ hasText: "Event acknowledged." }).waitFor();
    assert.deepEqual(new URL(page.url()).searchParams.getAll("kind"), ["status", "configuration"], "back to the same view");
    assert.match(await connected.innerText(), /olive@example\.com/);
    assert.equal(await connected.getByRole("button", { name: /^Acknowledge/ }).count(), 0);
    await check(page, "activity");
  });
});
