/**
 * The Account OAuth suites' shared set-up: a real Outpost listening on HTTP, an admin's API key, a
 * registered app, openid-client configured from the issuer's discovery (with its /api/auth path),
 * and the steps the suites take as the app, the browser and a script.
 */
import assert from "node:assert/strict";
import * as oidc from "openid-client";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { adminApiKey, FormBrowser, registerApp, type RegisteredApp } from "../support/account-oauth.ts";

export const redirectUri = "http://127.0.0.1:9/callback";
export const password = "a long user password";

/** What a suite reads once its `before` ran. */
export interface AccountIssuer {
  t: TestOutpost;
  issuer: string;
  adminKey: string;
  app: RegisteredApp;
  config: oidc.Configuration;
}

/** Registers the suite's before and after hooks; the values are set when its tests run. */
export function useAccountIssuer(): AccountIssuer {
  const suite = {} as AccountIssuer;
  before(async () => {
    suite.t = await startListeningOutpost();
    suite.issuer = `${suite.t.baseUrl}/api/auth`;
    suite.adminKey = await adminApiKey(suite.t);
    suite.app = await registerApp(suite.t, suite.adminKey, [redirectUri]);
    suite.config = await oidc.discovery(new URL(suite.issuer), suite.app.clientId, undefined, oidc.ClientSecretBasic(suite.app.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
  });
  after(() => suite.t?.close());
  return suite;
}

/** An authorization URL with PKCE S256, state and nonce, and what the app keeps to check the answer. */
export async function authorization(cfg: oidc.Configuration, params: Record<string, string> = {}) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(cfg, {
    redirect_uri: redirectUri,
    scope: "openid profile email",
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
    nonce,
    ...params,
  });
  return { url, verifier, state, nonce };
}

/** A new account, signed up and signed in in a cookie-jar browser. */
export async function newUser(t: TestOutpost, email: string, name = "Ada Lovelace"): Promise<FormBrowser> {
  const browser = new FormBrowser(t.baseUrl);
  await browser.signUp(email, password, name);
  return browser;
}

/** The app's code exchange, checking state and nonce as the app would. */
export function exchange(cfg: oidc.Configuration, callback: URL, flow: { verifier: string; state: string; nonce: string }) {
  return oidc.authorizationCodeGrant(cfg, callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce });
}

/** JSON GET of the HTTP API with the browser's session cookie. */
export async function apiGet(browser: FormBrowser, path: string): Promise<unknown> {
  const res = await browser.request(`/api/http/${path}`);
  assert.equal(res.status, 200);
  return res.json();
}

export async function apiGetSession(browser: FormBrowser) {
  return (await apiGet(browser, "auth/getSession")) as { user: { id: string } };
}

/** JSON POST of the HTTP API with the browser's session cookie (and its origin, as a page's form would). */
export async function apiPostAs(t: TestOutpost, browser: FormBrowser, path: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
    method: "POST",
    headers: { cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join("; "), "content-type": "application/json", origin: t.baseUrl },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

/** Runs a statement on the Outpost's database (to age a session or a code). */
export async function sql(t: TestOutpost, statement: string): Promise<void> {
  await t.outpost.runtime.orm.em.fork().execute(statement, [], "run");
}
