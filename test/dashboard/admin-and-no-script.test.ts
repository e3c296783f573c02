import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import * as oidc from "openid-client";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, docsScreenshot, launchChromium } from "../support/browser.ts";
import { registerApp } from "../support/account-oauth.ts";
import { startCallbackServer } from "../support/game-oauth.ts";

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";

/**
 * The platform admin's area (Account OAuth clients), and the dashboard in a browser that runs no
 * script: destructive actions still ask first (a confirmation page), secrets are still shown once.
 */
describe("dashboard: the admin area, and confirmation without JavaScript", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;

  async function signIn(context: BrowserContext, email: string, returnTo = "/app"): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${t.baseUrl}${returnTo}`);
    assert.equal(new URL(page.url()).pathname, "/sign-in");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname.startsWith(returnTo));
    return page;
  }

  async function check(page: Page, name?: string): Promise<void> {
    await assertAccessible(page, name ?? page.url());
    if (name) await docsScreenshot(page, name);
    await page.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(page, name ?? page.url());
    await page.setViewportSize(desktop);
  }

  before(async () => {
    t = await startListeningOutpost();
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "ada@example.com", password, name: "Ada Admin", platformAdmin: true });
    await identity.createUser({ email: "nora@example.com", password, name: "Nora" });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it("lets a platform admin create, edit, rotate, disable, enable and delete an Account OAuth client", async () => {
    const context = await browser.newContext({ viewport: desktop });
    context.setDefaultTimeout(10_000);
    try {
      const page = await signIn(context, "ada@example.com", "/app/admin");
      await page.getByRole("heading", { name: "Admin", level: 1 }).waitFor();
      assert.equal(await page.getByRole("navigation", { name: "Account" }).getByRole("link", { name: "Admin" }).getAttribute("aria-current"), "page");
      await page.getByText("No Account OAuth clients yet.").waitFor();

      await page.getByLabel("App name").fill("Wiki");
      await page.getByLabel("Redirect URIs").fill("wiki.example.com/callback");
      await page.getByRole("button", { name: "Create client" }).click();
      await page.locator("#f-redirectUris-error").waitFor();
      assert.equal(await page.getByLabel("App name").inputValue(), "Wiki");
      await page.getByLabel("Redirect URIs").fill("https://wiki.example.com/callback");
      await page.getByRole("button", { name: "Create client" }).click();
      await page.getByRole("heading", { name: 'Client "Wiki" created' }).waitFor();
      const clientId = await page.getByRole("textbox", { name: "Client ID" }).inputValue();
      const secret = await page.getByRole("textbox", { name: "Client secret" }).inputValue();
      assert.match(clientId, /^oac_[0-9A-Za-z]{24}$/);
      assert.match(secret, /^oas_/);

      await page.getByRole("link", { name: "Go to the client" }).click();
      await page.getByLabel("App name").fill("Team wiki");
      // The client's options: scopes, authentication, PKCE, home page, logout return addresses.
      await page.getByLabel("offline_access: refresh tokens (stay connected)").check();
      await page.getByLabel("email: the account's email address").uncheck();
      await page.getByLabel("Client authentication").selectOption("client_secret_basic");
      await page.getByLabel("Require PKCE (S256) on every sign-in").check();
      await page.getByLabel("Home page").fill("https://wiki.example.com/");
      await page.getByLabel("Return URLs after logout").fill("https://wiki.example.com/bye");
      await page.getByRole("button", { name: "Save changes" }).click();
      await page.getByRole("status").filter({ hasText: "Client saved." }).waitFor();
      await page.getByRole("heading", { name: "Team wiki", level: 1 }).waitFor();
      assert.equal(await page.getByLabel("offline_access: refresh tokens (stay connected)").isChecked(), true);
      assert.equal(await page.getByLabel("email: the account's email address").isChecked(), false);
      assert.equal(await page.getByLabel("Client authentication").inputValue(), "client_secret_basic");
      assert.equal(await page.getByLabel("Require PKCE (S256) on every sign-in").isChecked(), true);
      assert.equal(await page.getByLabel("Home page").inputValue(), "https://wiki.example.com/");
      assert.equal(await page.getByLabel("Return URLs after logout").inputValue(), "https://wiki.example.com/bye");
      await page.getByText("openid profile offline_access").waitFor();
      // A bad home page is shown next to its field.
      await page.getByLabel("Home page").fill("http://wiki.example.com/");
      await page.getByRole("button", { name: "Save changes" }).click();
      await page.locator("#f-uri-error").waitFor();
      await page.getByLabel("Home page").fill("https://wiki.example.com/");
      await page.getByRole("button", { name: "Save changes" }).click();
      await page.getByRole("status").filter({ hasText: "Client saved." }).waitFor();
      await check(page, "admin-client");

      await page.getByRole("button", { name: "Rotate secret" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click();
      await page.getByRole("heading", { name: 'New secret for "Team wiki"' }).waitFor();
      assert.notEqual(await page.getByRole("textbox", { name: "Client secret" }).inputValue(), secret);

      await page.getByRole("link", { name: "Go to the client" }).click();
      await page.getByRole("button", { name: "Disable client" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Disable client" }).click();
      await page.getByRole("status").filter({ hasText: "Client disabled" }).waitFor();
      await page.getByRole("button", { name: "Enable client" }).click();
      await page.getByRole("status").filter({ hasText: "Client enabled." }).waitFor();

      await page.goto(`${t.baseUrl}/app/admin`);
      await page
        .getByRole("region", { name: "Account OAuth clients" })
        .getByRole("row", { name: /Team wiki/ })
        .waitFor();
      await check(page, "admin");
      const platform = page.getByRole("region", { name: "Platform activity" });
      for (const action of ["oauth_provider_client.created", "oauth_provider_client.secret_rotated", "oauth_provider_client.disabled"]) {
        await platform
          .getByRole("row", { name: new RegExp(action.replace(".", "\\.")) })
          .first()
          .waitFor();
      }
      // A public client: no secret to show.
      await page.getByLabel("App name").fill("Phone app");
      await page.getByLabel("Redirect URIs").fill("https://phone.example.com/cb");
      await page.getByLabel("Client authentication").selectOption("none");
      await page.getByRole("button", { name: "Create client" }).click();
      await page.getByText("A public client has no secret").waitFor();
      await check(page);
      await page.getByRole("link", { name: "Go to the client" }).click();
      await page.getByText("None: a public client", { exact: true }).waitFor();
      await page.goto(`${t.baseUrl}/app/admin`);
      await page.getByRole("link", { name: "Team wiki" }).click();
      // The form posted without the dialog (as without script) gets the confirmation page.
      await page.evaluate(`HTMLFormElement.prototype.submit.call(document.querySelector('form[action$="/delete"]'))`);
      await page.getByRole("heading", { name: "Delete this client?" }).waitFor();
      await check(page, "confirm-page");
      await page.getByRole("button", { name: "Delete client" }).click();
      await page.getByRole("status").filter({ hasText: "Client deleted." }).waitFor();
      await page
        .getByRole("region", { name: "Account OAuth clients" })
        .getByRole("row", { name: /Phone app/ })
        .waitFor();
    } finally {
      await context.close();
    }
  });

  it("keeps a non-admin out of the admin area: no link, and 403 at the address", async () => {
    const context = await browser.newContext({ viewport: desktop });
    context.setDefaultTimeout(10_000);
    try {
      const page = await signIn(context, "nora@example.com");
      assert.equal(await page.getByRole("link", { name: "Admin" }).count(), 0);
      const response = await page.goto(`${t.baseUrl}/app/admin`);
      assert.equal(response!.status(), 403);
      await page.getByText("The admin area is for platform admins.").waitFor();
      assert.equal(await page.getByLabel("App name").count(), 0);
      // Posting to an admin action with a valid form token is refused too, and creates nothing.
      const posted = await page.evaluate<number>(
        `fetch("/app/admin/clients", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ form_token: document.querySelector("input[name=form_token]").value, name: "Sneaky", redirectUris: "https://sneaky.example.com/cb" }) }).then((r) => r.status)`,
      );
      assert.equal(posted, 403);
    } finally {
      await context.close();
    }
  });

  it("lists the Account OAuth apps a person consented to, and revokes a consent after confirmation", async () => {
    const callback = await startCallbackServer();
    const context = await browser.newContext({ viewport: desktop });
    context.setDefaultTimeout(10_000);
    try {
      const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
      const adminKey = (await identity.issueApiKey({ email: "ada@example.com", name: "tests" })).key;
      const app = await registerApp(t, adminKey, [callback.redirectUri]);
      const config = await oidc.discovery(new URL(`${t.baseUrl}/api/auth`), app.clientId, undefined, oidc.ClientSecretBasic(app.clientSecret), {
        execute: [oidc.allowInsecureRequests],
      });
      const authorize = oidc.buildAuthorizationUrl(config, {
        redirect_uri: callback.redirectUri,
        scope: "openid profile email",
        code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
        code_challenge_method: "S256",
        state: oidc.randomState(),
      });
      const page = await signIn(context, "nora@example.com");
      await page.goto(`${t.baseUrl}/app/account/security`);
      await page.getByText("You have not let any app sign you in with Outpost.").waitFor();
      await page.goto(authorize.href);
      const since = callback.requests.length;
      await page.getByRole("button", { name: "Allow" }).click();
      await callback.next(since);

      await page.goto(`${t.baseUrl}/app/account/security`);
      const apps = page.getByRole("region", { name: "Apps you let sign you in" });
      const row = apps.getByRole("row", { name: /Wiki/ });
      await row.getByText(/email/).waitFor();
      await row.getByRole("button", { name: "Revoke consent for Wiki" }).click();
      await page.getByRole("dialog", { name: "Revoke your consent to Wiki?" }).getByRole("button", { name: "Revoke" }).click();
      await page.getByRole("status").filter({ hasText: "Consent revoked." }).waitFor();
      assert.equal(await apps.getByRole("row", { name: /Wiki/ }).count(), 0);
    } finally {
      await context.close();
      await callback.close();
    }
  });

  it("asks for confirmation on a page of its own when the browser runs no script", async () => {
    const context = await browser.newContext({ viewport: desktop, javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    try {
      const page = await signIn(context, "nora@example.com");
      assert.equal(new URL(page.url()).pathname, "/app/organizations");
      // No script: the slug is derived from the name by the server when left empty.
      await page.getByLabel("Name", { exact: true }).fill("Nora's Realm");
      await page.getByRole("button", { name: "Create organization" }).click();
      await page.waitForURL(/\/app\/o\/noras-realm/);
      await page.goto(`${t.baseUrl}/app/o/noras-realm/servers`);
      await page.getByLabel("Server name").fill("Creative");
      await page.getByRole("radio", { name: "Hytale" }).check();
      await page.getByRole("button", { name: "Create server" }).click();
      const key = await page.getByRole("textbox", { name: "Agent key" }).inputValue();
      assert.match(await page.getByLabel("Command to run the agent").inputValue(), new RegExp(`--key ${key} --game hytale$`));

      await page.getByRole("link", { name: "Go to the server" }).click();
      const serverUrl = page.url();
      await page.getByRole("button", { name: "Regenerate agent key" }).click();
      await page.getByRole("heading", { name: "Regenerate the agent key?" }).waitFor();
      await page.getByRole("link", { name: "Cancel" }).click();
      assert.equal(page.url(), serverUrl);
      await page.getByRole("button", { name: "Regenerate agent key" }).click();
      await page.getByRole("button", { name: "Regenerate agent key" }).click();
      await page.getByRole("heading", { name: 'New agent key for "Creative"' }).waitFor();
      assert.notEqual(await page.getByRole("textbox", { name: "Agent key" }).inputValue(), key);

      await page.goto(serverUrl);
      await page.getByRole("button", { name: "Delete server" }).click();
      await page.getByRole("heading", { name: "Delete this server?" }).waitFor();
      await page.getByRole("button", { name: "Delete server" }).click();
      await page.getByRole("status").filter({ hasText: "Server deleted." }).waitFor();
      await page.getByText("No servers yet").waitFor();

      // A forged form (no token) is refused.
      const forged = await context.request.post(`${t.baseUrl}/app/o/noras-realm/servers`, { form: { name: "Sneaky", game: "minecraft" } });
      assert.equal(forged.status(), 403);

      await page.getByRole("button", { name: "Sign out" }).click();
      await page.waitForURL(/\/sign-in/);
      await page.goto(`${t.baseUrl}/app/o/noras-realm`);
      assert.equal(new URL(page.url()).pathname, "/sign-in");
    } finally {
      await context.close();
    }
  });
});
