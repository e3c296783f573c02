/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0) at the Account OAuth issuer, with
 * openid-client building the end-session URL: the id_token_hint is verified, the
 * post_logout_redirect_uri must be one the client registered, and a browser is signed out only
 * when the hint names its user.
 */
import assert from "node:assert/strict";
import * as oidc from "openid-client";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { adminApiKey, apiPost, FormBrowser, hiddenField, registerApp, type RegisteredApp } from "../support/account-oauth.ts";
import { launchChromium } from "../support/browser.ts";

const redirectUri = "http://127.0.0.1:9/callback";
const logoutUri = "http://127.0.0.1:9/signed-out";
const password = "a long user password";

describe("Account OAuth RP-initiated logout", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let adminKey: string;
  let app: RegisteredApp;
  let config: oidc.Configuration;

  before(async () => {
    t = await startListeningOutpost();
    adminKey = await adminApiKey(t);
    app = await registerApp(t, adminKey, [redirectUri], { postLogoutRedirectUris: [logoutUri] });
    config = await oidc.discovery(new URL(`${t.baseUrl}/api/auth`), app.clientId, undefined, oidc.ClientSecretBasic(app.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
  });
  after(() => t?.close());

  async function signedIn(email: string) {
    const browser = new FormBrowser(t.baseUrl);
    await browser.signUp(email, password, "Logout User");
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: "openid", state });
    const visited = await browser.visit(url);
    const back = visited.left ?? (await browser.decide(visited, "allow")).left!;
    const tokens = await oidc.authorizationCodeGrant(config, back, { expectedState: state });
    return { browser, idToken: tokens.id_token! };
  }

  const isSignedIn = async (browser: FormBrowser) => (await browser.request("/api/http/auth/getSession")).status === 200;

  it("discovery lists the end_session_endpoint", async () => {
    assert.equal(config.serverMetadata().end_session_endpoint, `${t.baseUrl}/api/auth/oauth2/end-session`);
  });

  it("signs the hinted user out and returns to the registered URI with state", async () => {
    const { browser, idToken } = await signedIn("logout@example.com");
    assert.equal(await isSignedIn(browser), true);
    const url = oidc.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: logoutUri, state: "bye" });
    const res = await browser.request(url);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), `${logoutUri}?state=bye`);
    assert.equal(await isSignedIn(browser), false);
    // The same hint again, once signed out, still returns to the app (the hint's expiry is not checked either).
    const again = await browser.request(url);
    assert.equal(again.status, 303);
  });

  it("refuses an unregistered post_logout_redirect_uri, a forged hint and a mismatched client_id on a page, never redirecting", async () => {
    const { browser, idToken } = await signedIn("refused-logout@example.com");
    const other = await registerApp(t, adminKey, [redirectUri]);
    const [header, payload] = idToken.split(".");
    const forged = `${header}.${payload}.${"A".repeat(342)}`;
    const cases: Array<Record<string, string>> = [
      { id_token_hint: idToken, post_logout_redirect_uri: "http://127.0.0.1:9/elsewhere" },
      { id_token_hint: idToken, post_logout_redirect_uri: `${logoutUri}/` },
      { id_token_hint: forged, post_logout_redirect_uri: logoutUri },
      { id_token_hint: idToken, client_id: other.clientId, post_logout_redirect_uri: logoutUri },
      { post_logout_redirect_uri: logoutUri },
    ];
    for (const params of cases) {
      const url = new URL(`${t.baseUrl}/api/auth/oauth2/end-session?${new URLSearchParams(params)}`);
      const res = await browser.request(url);
      assert.equal(res.status, 400, JSON.stringify(params).slice(0, 80));
      assert.equal(res.headers.get("location"), null);
      assert.match(res.headers.get("content-type")!, /text\/html/);
    }
    assert.equal(await isSignedIn(browser), true, "nothing signed the user out");
  });

  it("sends no one back to a disabled app", async () => {
    const disabledApp = await registerApp(t, adminKey, [redirectUri], { postLogoutRedirectUris: [logoutUri] });
    const appConfig = await oidc.discovery(new URL(`${t.baseUrl}/api/auth`), disabledApp.clientId, undefined, oidc.ClientSecretBasic(disabledApp.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    const browser = new FormBrowser(t.baseUrl);
    await browser.signUp("disabled-logout@example.com", password, "Logout User");
    const state = oidc.randomState();
    const visited = await browser.visit(oidc.buildAuthorizationUrl(appConfig, { redirect_uri: redirectUri, scope: "openid", state }));
    const back = visited.left ?? (await browser.decide(visited, "allow")).left!;
    const idToken = (await oidc.authorizationCodeGrant(appConfig, back, { expectedState: state })).id_token!;
    const disabled = await fetch(`${t.baseUrl}/api/http/admin/updateAccountOAuthClient`, {
      method: "POST",
      headers: { "x-api-key": adminKey, "content-type": "application/json" },
      body: JSON.stringify({ clientId: disabledApp.clientId, disabled: true }),
    });
    assert.equal(disabled.status, 200, await disabled.text());
    const res = await browser.request(oidc.buildEndSessionUrl(appConfig, { id_token_hint: idToken, post_logout_redirect_uri: logoutUri }));
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("location"), null);
    assert.match(await res.text(), /this app is disabled/);
  });

  it("without a hint asks the user instead of signing them out; a hint for someone else signs no one out", async () => {
    const { browser } = await signedIn("ask@example.com");
    const { idToken: othersToken } = await signedIn("someone-else@example.com");
    const asked = await browser.request(`${t.baseUrl}/api/auth/oauth2/end-session`);
    assert.equal(asked.status, 200);
    assert.match(await asked.text(), /Sign out of Outpost\?/);
    assert.equal(await isSignedIn(browser), true);
    const foreign = await browser.request(oidc.buildEndSessionUrl(config, { id_token_hint: othersToken, post_logout_redirect_uri: logoutUri }));
    assert.equal(foreign.status, 303);
    assert.equal(await isSignedIn(browser), true, "the hint names another user");
  });

  it("asks without a hint and, once confirmed, signs out and returns to the app with its state", async () => {
    const { browser } = await signedIn("confirm@example.com");
    const url = oidc.buildEndSessionUrl(config, { post_logout_redirect_uri: logoutUri, state: "st-1" });
    const asked = await browser.request(url);
    assert.equal(asked.status, 200);
    const page = await asked.text();
    assert.equal(await isSignedIn(browser), true, "asking signs no one out");
    const fields = Object.fromEntries(["form_token", "client_id", "post_logout_redirect_uri", "state", "confirm"].map((name) => [name, hiddenField(page, name)]));
    assert.deepEqual([fields.client_id, fields.post_logout_redirect_uri, fields.state], [app.clientId, logoutUri, "st-1"]);
    // Without this browser's form token, the confirmation is refused.
    const forged = await browser.request("/api/auth/oauth2/end-session", { form: { ...fields, form_token: "x".repeat(43) } });
    assert.equal(forged.status, 403);
    assert.equal(await isSignedIn(browser), true);
    const done = await browser.request("/api/auth/oauth2/end-session", { form: fields });
    assert.equal(done.status, 303);
    assert.equal(done.headers.get("location"), `${logoutUri}?state=st-1`);
    assert.equal(await isSignedIn(browser), false);
  });

  it("answers an app's POST with a 303 to the same request as a GET, so the session cookie comes along", async () => {
    const { browser, idToken } = await signedIn("post-logout@example.com");
    const params = { id_token_hint: idToken, post_logout_redirect_uri: logoutUri, state: "p" };
    const res = await fetch(`${t.baseUrl}/api/auth/oauth2/end-session`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "cross-site" },
      body: new URLSearchParams(params),
    });
    assert.equal(res.status, 303);
    const location = new URL(res.headers.get("location")!, t.baseUrl);
    assert.equal(location.pathname, "/api/auth/oauth2/end-session");
    assert.deepEqual(Object.fromEntries(location.searchParams), params);
    assert.equal(await isSignedIn(browser), true, "the cookieless POST itself signs no one out");
    const followed = await browser.request(location);
    assert.equal(followed.headers.get("location"), `${logoutUri}?state=p`);
    assert.equal(await isSignedIn(browser), false);
  });

  it("answers an over-long or repeated parameter with an HTML error page, not JSON", async () => {
    const { browser } = await signedIn("long-logout@example.com");
    for (const query of [`client_id=${app.clientId}&state=${"s".repeat(3000)}`, `id_token_hint=${"h".repeat(9000)}`, "state=a&state=b"]) {
      const res = await browser.request(`${t.baseUrl}/api/auth/oauth2/end-session?${query}`);
      assert.equal(res.status, 400, query.slice(0, 40));
      assert.match(res.headers.get("content-type")!, /text\/html/);
      assert.match(await res.text(), /invalid_request/);
    }
    assert.equal(await isSignedIn(browser), true);
  });

  it("in Chromium: an app's cross-site form POST reaches the signed-in session, is confirmed, and returns with state", async () => {
    const browser = await launchChromium();
    const rp = createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><title>App</title><form method="post" action="${t.baseUrl}/api/auth/oauth2/end-session">
<input type="hidden" name="client_id" value="${app.clientId}"><input type="hidden" name="post_logout_redirect_uri" value="${logoutUri}">
<input type="hidden" name="state" value="xs-1"><button>Log out</button></form>`);
    });
    await new Promise<void>((resolve) => rp.listen(0, "127.0.0.1", resolve));
    try {
      const page = await (await browser.newContext()).newPage();
      page.setDefaultTimeout(10_000);
      await page.route(`${logoutUri}**`, (route) => route.fulfill({ status: 200, contentType: "text/html", body: "<title>Back at the app</title>" }));
      await page.goto(`${t.baseUrl}/sign-up`);
      await page.getByLabel("Name").fill("Chromium Logout");
      await page.getByLabel("Email").fill("chromium-logout@example.com");
      await page.getByLabel("Password").fill(password);
      await page.getByRole("button", { name: "Create account" }).click();
      await page.waitForURL((u) => !u.pathname.startsWith("/sign-up"));
      // The app is another site: localhost is not 127.0.0.1.
      await page.goto(`http://localhost:${(rp.address() as AddressInfo).port}/`);
      await page.getByRole("button", { name: "Log out" }).click();
      await page.getByRole("heading", { name: "Sign out of Outpost?" }).waitFor();
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.waitForURL((u) => u.href.startsWith(logoutUri));
      assert.equal(new URL(page.url()).searchParams.get("state"), "xs-1");
      const session = await page.request.get(`${t.baseUrl}/api/http/auth/getSession`);
      assert.equal(session.status(), 401);
    } finally {
      await browser.close();
      await new Promise((resolve) => rp.close(resolve));
    }
  });

  it("post_logout_redirect_uris are set and validated through the admin router", async () => {
    const updated = await apiPost(t, adminKey, "admin/updateAccountOAuthClient", {
      clientId: app.clientId,
      postLogoutRedirectUris: { uris: [logoutUri, "https://wiki.example/bye"] },
    });
    assert.deepEqual(updated.client.postLogoutRedirectUris, [logoutUri, "https://wiki.example/bye"]);
    const bad = await fetch(`${t.baseUrl}/api/http/admin/updateAccountOAuthClient`, {
      method: "POST",
      headers: { "x-api-key": adminKey, "content-type": "application/json" },
      body: JSON.stringify({ clientId: app.clientId, postLogoutRedirectUris: { uris: ["https://wiki.example/bye#x"] } }),
    });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { message: string }).message, /postLogoutRedirectUris\[0\]/);
  });
});
