/**
 * Account OAuth as a user goes through it: openid-client as the app (discovery from the issuer
 * with its /api/auth path), headless Chromium filling the sign-in form and clicking Allow, then
 * the token exchange, ID token validation and userinfo; a second authorization that skips the
 * consent page; and Deny, which returns access_denied. The pages pass axe at phone and desktop
 * widths.
 */
import assert from "node:assert/strict";
import * as oidc from "openid-client";
import type { Browser, Page } from "playwright-core";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { adminApiKey, FormBrowser, registerApp } from "../support/account-oauth.ts";
import { startCallbackServer, type CallbackServer } from "../support/game-oauth.ts";
import { assertAccessible, docsScreenshot, launchChromium } from "../support/browser.ts";

const password = "a long user password";

describe("Account OAuth in headless Chromium", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let callback: CallbackServer;
  let browser: Browser;
  let config: oidc.Configuration;
  let userId: string;

  before(async () => {
    t = await startListeningOutpost();
    callback = await startCallbackServer();
    const admin = await adminApiKey(t);
    const app = await registerApp(t, admin, [callback.redirectUri]);
    config = await oidc.discovery(new URL(`${t.baseUrl}/api/auth`), app.clientId, undefined, oidc.ClientSecretBasic(app.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    const signUp = new FormBrowser(t.baseUrl);
    await signUp.signUp("grace@example.com", password, "Grace Hopper");
    const session = await signUp.request("/api/http/auth/getSession");
    userId = ((await session.json()) as { user: { id: string } }).user.id;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await callback?.close();
    await t?.close();
  });

  async function start() {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: callback.redirectUri,
      scope: "openid profile email",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      nonce,
    });
    return { url, verifier, state, nonce };
  }

  async function backInApp(page: Page, since: number): Promise<URL> {
    const url = await callback.next(since);
    await page.waitForURL((u) => u.pathname === "/callback");
    return url;
  }

  it("signs in, asks consent, exchanges the code; the second time goes straight back; Deny returns access_denied", async () => {
    const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
    const page = await context.newPage();

    const flow = await start();
    await page.goto(flow.url.href);
    await page.waitForURL((u) => u.pathname === "/sign-in");
    await assertAccessible(page, "sign-in page");
    await page.getByLabel("Email").fill("grace@example.com");
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();

    await page.getByRole("heading", { name: /wants to sign you in/ }).waitFor();
    await assertAccessible(page, "consent page");
    await page.setViewportSize({ width: 1280, height: 800 });
    await assertAccessible(page, "consent page");
    await docsScreenshot(page, "account-oauth-consent");
    assert.match(await page.locator("main").innerText(), /Your email address/);
    const since = callback.requests.length;
    await page.getByRole("button", { name: "Allow" }).click();
    const returned = await backInApp(page, since);

    const tokens = await oidc.authorizationCodeGrant(config, returned, { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce });
    const claims = tokens.claims()!;
    assert.equal(claims.sub, userId);
    assert.equal(claims.email, "grace@example.com");
    assert.equal(claims.name, "Grace Hopper");
    const info = await oidc.fetchUserInfo(config, tokens.access_token, userId);
    assert.equal(info.email, "grace@example.com");

    // Consent remembered: straight back to the app, no page in between.
    const second = await start();
    const before = callback.requests.length;
    await page.goto(second.url.href);
    const again = await backInApp(page, before);
    const secondTokens = await oidc.authorizationCodeGrant(config, again, {
      pkceCodeVerifier: second.verifier,
      expectedState: second.state,
      expectedNonce: second.nonce,
    });
    assert.equal(secondTokens.claims()!.sub, userId);

    // A user who says no: another browser, another account.
    const other = await browser.newContext();
    const otherPage = await other.newPage();
    await otherPage.goto(`${t.baseUrl}/sign-up`);
    await assertAccessible(otherPage, "sign-up page");
    await otherPage.getByLabel("Name").fill("Alan Turing");
    await otherPage.getByLabel("Email").fill("alan@example.com");
    await otherPage.getByLabel("Password").fill(password);
    await otherPage.getByRole("button", { name: "Create account" }).click();
    await otherPage.waitForURL((u) => u.pathname.startsWith("/app"));
    const denied = await start();
    await otherPage.goto(denied.url.href);
    const beforeDeny = callback.requests.length;
    await otherPage.getByRole("button", { name: "Deny" }).click();
    const refused = await backInApp(otherPage, beforeDeny);
    assert.equal(refused.searchParams.get("error"), "access_denied");
    assert.equal(refused.searchParams.get("state"), denied.state);
    await assert.rejects(
      oidc.authorizationCodeGrant(config, refused, { pkceCodeVerifier: denied.verifier, expectedState: denied.state }),
      (error: { error?: string }) => error.error === "access_denied",
    );
    await other.close();
    await context.close();
  });

  it("shows a clear message for a wrong password, without saying whether the account exists", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const messages: string[] = [];
    for (const email of ["grace@example.com", "nobody@example.com"]) {
      await page.goto(`${t.baseUrl}/sign-in`);
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill("not the password");
      await page.getByRole("button", { name: "Sign in" }).click();
      messages.push(await page.getByRole("alert").innerText());
      assert.equal(await page.getByLabel("Email").inputValue(), email, "the email is kept");
    }
    assert.equal(messages[0], "Wrong email or password.");
    assert.equal(messages[1], messages[0]);
    await assertAccessible(page, "sign-in page with an error");

    // The sign-out page: a button, and the session ends.
    await page.getByLabel("Email").fill("grace@example.com");
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.goto(`${t.baseUrl}/sign-out`);
    assert.match(await page.locator("main").innerText(), /signed in as grace@example\.com/);
    await assertAccessible(page, "sign-out page");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL((u) => u.pathname === "/sign-in");
    assert.equal(
      (await context.cookies()).some((c) => c.name === "outpost_session"),
      false,
    );
    await context.close();
  });
});
