/**
 * Account OAuth over real HTTP: openid-client as the app (discovery from the issuer with its
 * /api/auth path), a cookie-jar browser filling the sign-in and consent forms, a real Outpost on
 * a test database. The browser test (browser-flow.test.ts) does the same flow in Chromium. This
 * file: discovery, the flow, prompt and max_age; account-oauth-requests.test.ts: refused requests
 * and tokens; account-oauth-limits.test.ts: rate limits.
 */
import assert from "node:assert/strict";
import * as oidc from "openid-client";
import type { TestOutpost } from "../support/outpost.ts";
import { FormBrowser, type RegisteredApp } from "../support/account-oauth.ts";
import {
  apiGet,
  apiGetSession,
  apiPostAs as apiPostOn,
  authorization as authorizationWith,
  exchange as exchangeWith,
  newUser as newUserOn,
  password,
  redirectUri,
  sql as sqlOn,
  useAccountIssuer,
} from "./issuer-fixture.ts";
import { verifyEmail } from "../support/fixtures.ts";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { hiddenField, registerApp } from "../support/account-oauth.ts";

describe("Account OAuth issuer", function () {
  this.timeout(120_000);
  const suite = useAccountIssuer();
  let t: TestOutpost;
  let issuer: string;
  let adminKey: string;
  let app: RegisteredApp;
  let config: oidc.Configuration;
  before(() => ({ t, issuer, adminKey, app, config } = suite));
  const authorization = (params: Record<string, string> = {}, cfg = config) => authorizationWith(cfg, params);
  const newUser = (email: string, name?: string): Promise<FormBrowser> => newUserOn(t, email, name);
  const exchange = (callback: URL, flow: { verifier: string; state: string; nonce: string }, cfg = config) => exchangeWith(cfg, callback, flow);
  const apiPostAs = (browser: FormBrowser, path: string, body: unknown) => apiPostOn(t, browser, path, body);
  const sql = (statement: string) => sqlOn(t, statement);

  describe("discovery", () => {
    it("serves one document at the OIDC, root and RFC 8414 addresses, all naming the /api/auth issuer", async () => {
      for (const path of ["/api/auth/.well-known/openid-configuration", "/.well-known/openid-configuration", "/.well-known/oauth-authorization-server/api/auth"]) {
        const res = await fetch(t.baseUrl + path);
        assert.equal(res.status, 200, path);
        const doc = (await res.json()) as Record<string, unknown>;
        assert.equal(doc.issuer, issuer, path);
        assert.equal(doc.authorization_endpoint, `${issuer}/oauth2/authorize`);
        assert.equal(doc.token_endpoint, `${issuer}/oauth2/token`);
        assert.equal(doc.userinfo_endpoint, `${issuer}/oauth2/userinfo`);
        assert.equal(doc.jwks_uri, `${issuer}/jwks`);
        assert.deepEqual(doc.scopes_supported, ["openid", "profile", "email", "offline_access"]);
        assert.deepEqual(doc.code_challenge_methods_supported, ["S256", "plain"]);
        assert.deepEqual(doc.token_endpoint_auth_methods_supported, ["client_secret_basic", "client_secret_post", "none"]);
        assert.deepEqual(doc.grant_types_supported, ["authorization_code", "refresh_token"]);
        assert.equal(doc.revocation_endpoint, `${issuer}/oauth2/revoke`);
        assert.equal(doc.introspection_endpoint, `${issuer}/oauth2/introspect`);
        assert.deepEqual(doc.introspection_endpoint_auth_methods_supported, ["client_secret_basic", "client_secret_post"]);
      }
    });

    it("publishes its own keys, none of them the game issuer's", async () => {
      const account = (await (await fetch(`${issuer}/jwks`)).json()) as { keys: Array<{ kid: string; alg: string }> };
      const game = (await (await fetch(`${t.gameIssuerUrl}/oauth2/jwks`)).json()) as { keys: Array<{ kid: string }> };
      assert.equal(account.keys.length >= 2, true);
      assert.deepEqual(
        account.keys.map((k) => k.alg),
        ["RS256", "RS256", "ES256", "ES256", "EdDSA", "EdDSA"],
      );
      const gameKids = new Set(game.keys.map((k) => k.kid));
      assert.ok(account.keys.every((k) => !gameKids.has(k.kid)));
    });
  });

  describe("the flow", () => {
    it("signs a user in: sign-in page, consent, code, ID token, userinfo; then again without the consent page", async () => {
      const browser = new FormBrowser(t.baseUrl);
      await browser.signUp("ada@example.com", password, "Ada Lovelace");
      await browser.request("/sign-out", { form: { form_token: browser.cookies.get("outpost_form")! } });
      assert.equal(browser.cookies.has("outpost_session"), false);

      const flow = await authorization();
      const signIn = await browser.visit(flow.url);
      assert.equal(signIn.url.pathname, "/sign-in");
      assert.match(signIn.url.searchParams.get("return_to")!, /^\/api\/auth\/oauth2\/continue\?request=oar_/);
      const consent = await browser.signInOn(signIn, "ada@example.com", password);
      assert.equal(consent.res.status, 200);
      const html = await consent.res.clone().text();
      assert.match(html, /Wiki<\/span> wants to sign you in/);
      assert.match(html, /Your email address/);
      const policy = consent.res.headers.get("content-security-policy")!;
      assert.match(policy, /frame-ancestors 'none'/);
      assert.match(policy, /script-src 'self'/);
      assert.equal(consent.res.headers.get("x-frame-options"), "DENY");
      // "Not you?" signs in as someone else and comes back to the same request.
      const notYou = /<a href="([^"]+)">Not you\?<\/a>/.exec(html)![1].replace(/&amp;/g, "&");
      assert.match(notYou, /^\/sign-in\?return_to=%2Fapi%2Fauth%2Foauth2%2Fcontinue%3Frequest%3Doar_/);
      const back = await browser.decide(consent, "allow");
      assert.ok(back.left, "Allow sends the browser back to the app");
      assert.equal(back.left.searchParams.get("iss"), issuer);

      const tokens = await exchange(back.left, flow);
      assert.equal(tokens.token_type.toLowerCase(), "bearer");
      assert.equal(tokens.expires_in, 900);
      assert.equal(tokens.scope, "openid profile email");
      assert.equal(tokens.refresh_token, undefined);
      const claims = tokens.claims()!;
      const me = (await apiGetSession(browser)).user;
      assert.equal(claims.sub, me.id);
      assert.equal(claims.aud, app.clientId);
      assert.equal(claims.iss, issuer);
      assert.equal(claims.name, "Ada Lovelace");
      assert.equal(claims.email, "ada@example.com");
      assert.equal(claims.email_verified, false);
      assert.equal(claims.nonce, flow.nonce);
      assert.equal((claims.exp as number) - (claims.iat as number), 600);
      assert.equal(typeof claims.auth_time, "number");
      // Signed by a key of this issuer's JWKS (and not verifiable as the game issuer's).
      const jwks = createLocalJWKSet((await (await fetch(`${issuer}/jwks`)).json()) as never);
      await jwtVerify(tokens.id_token!, jwks, { issuer, audience: app.clientId });
      assert.equal(decodeProtectedHeader(tokens.id_token!).alg, "RS256");

      const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
      assert.deepEqual(info, { sub: me.id, name: "Ada Lovelace", email: "ada@example.com", email_verified: false });

      // Consent is remembered: the next authorization goes straight back to the app.
      const again = await authorization();
      const direct = await browser.visit(again.url);
      assert.ok(direct.left, "no page the second time");
      const second = await exchange(direct.left, again);
      assert.equal(second.claims()!.sub, me.id);

      // Once Ada confirms her address, the ID token and userinfo say so.
      await verifyEmail(t, "ada@example.com");
      const third = await authorization();
      const verified = await exchange((await browser.visit(third.url)).left!, third);
      assert.equal(verified.claims()!.email_verified, true);
      assert.equal((await oidc.fetchUserInfo(config, verified.access_token, me.id)).email_verified, true);
    });

    it('"Not you?" signs in as another account, which answers the same request for itself', async () => {
      await newUser("second@example.com", "Second Person");
      const browser = await newUser("first@example.com", "First Person");
      const flow = await authorization();
      const consent = await browser.visit(flow.url);
      const html = await consent.res.text();
      assert.match(html, /First Person/);
      const notYou = /<a href="([^"]+)">Not you\?<\/a>/.exec(html)![1].replace(/&amp;/g, "&");
      const signIn = await browser.visit(notYou);
      const second = await browser.signInOn(signIn, "second@example.com", password);
      assert.match(await second.res.clone().text(), /Second Person/, "the consent page now asks the second account");
      const back = await browser.decide(second, "allow");
      const tokens = await exchange(back.left!, flow);
      assert.equal(tokens.claims()!.email, "second@example.com");
    });

    it("Deny sends access_denied with state and iss; nothing is remembered", async () => {
      const browser = await newUser("deny@example.com");
      const flow = await authorization();
      const consent = await browser.visit(flow.url);
      const request = hiddenField(await consent.res.clone().text(), "request");
      const back = await browser.decide(consent, "deny");
      assert.ok(back.left);
      assert.equal(back.left.searchParams.get("error"), "access_denied");
      assert.equal(back.left.searchParams.get("state"), flow.state);
      assert.equal(back.left.searchParams.get("iss"), issuer);
      assert.equal(back.left.searchParams.get("code"), null);
      // The request is finished: answering it again (even Allow) issues nothing.
      const replay = await browser.request("/api/auth/oauth2/consent", { form: { form_token: browser.cookies.get("outpost_form")!, request, decision: "allow" } });
      assert.equal(replay.status, 400);
      assert.equal(replay.headers.get("location"), null);
      const { consents } = (await apiGet(browser, "auth/listConsents")) as { consents: unknown[] };
      assert.deepEqual(consents, []);
    });

    it("asks again when the scopes grow, and after the consent is revoked", async () => {
      const browser = await newUser("grow@example.com");
      const first = await authorization({ scope: "openid" });
      const consent = await browser.visit(first.url);
      assert.doesNotMatch(await consent.res.clone().text(), /Your email address/);
      assert.ok((await browser.decide(consent, "allow")).left);

      const grown = await authorization({ scope: "openid email" });
      const again = await browser.visit(grown.url);
      assert.equal(again.res.status, 200, "a consent page for the new scope");
      const html = await again.res.clone().text();
      assert.match(html, /Your email address<span class="new">new<\/span>/);
      const back = await browser.decide(again, "allow");
      const tokens = await exchange(back.left!, grown);
      assert.equal(tokens.scope, "openid email");
      assert.equal(tokens.claims()!.name, undefined, "no profile scope, no name");
      const [remembered] = ((await apiGet(browser, "auth/listConsents")) as { consents: Array<{ clientId: string; scopes: string[] }> }).consents;
      assert.equal(remembered.clientId, app.clientId);
      assert.deepEqual([...remembered.scopes].sort(), ["email", "openid"]);

      const before = await fetch(`${issuer}/oauth2/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      assert.equal(before.status, 200);
      const pending = await authorization({ scope: "openid email" });
      const unexchanged = (await browser.visit(pending.url)).left!; // consent given: straight back with a code

      await apiPostAs(browser, "auth/revokeConsent", { clientId: app.clientId });
      const after = await fetch(`${issuer}/oauth2/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      assert.equal(after.status, 401, "the app's access token ends with the consent");
      assert.match(after.headers.get("www-authenticate") ?? "", /invalid_token/);
      await assert.rejects(
        exchange(unexchanged, pending),
        (e: { error?: string }) => e.error === "invalid_grant",
        "a code issued before the revocation is not exchanged after it",
      );
      const afterRevoke = await browser.visit((await authorization({ scope: "openid" })).url);
      assert.equal(afterRevoke.res.status, 200);
      assert.match(await afterRevoke.res.text(), /wants to sign you in/);
    });

    it("prompt=consent asks even when consent was given; a skipConsent app never asks", async () => {
      const browser = await newUser("prompt-consent@example.com");
      assert.ok((await browser.decide(await browser.visit((await authorization()).url), "allow")).left);
      const forced = await browser.visit((await authorization({ prompt: "consent" })).url);
      assert.equal(forced.res.status, 200);
      assert.match(await forced.res.text(), /wants to sign you in/);

      const firstParty = await registerApp(t, adminKey, [redirectUri], { skipConsent: true });
      const cfg = await oidc.discovery(new URL(issuer), firstParty.clientId, undefined, oidc.ClientSecretPost(firstParty.clientSecret), {
        execute: [oidc.allowInsecureRequests],
      });
      const flow = await authorization({}, cfg);
      const direct = await browser.visit(flow.url);
      assert.ok(direct.left, "no consent page for a first-party app");
      const tokens = await exchange(direct.left, flow, cfg);
      assert.equal(tokens.claims()!.aud, firstParty.clientId);
    });
  });

  describe("prompt and max_age", () => {
    it("prompt=none without a session → login_required; without consent → consent_required", async () => {
      const anonymous = new FormBrowser(t.baseUrl);
      const flow = await authorization({ prompt: "none" });
      const back = await anonymous.visit(flow.url);
      assert.equal(back.left?.searchParams.get("error"), "login_required");
      assert.equal(back.left?.searchParams.get("state"), flow.state);

      const browser = await newUser("prompt-none@example.com");
      const noConsent = await browser.visit((await authorization({ prompt: "none" })).url);
      assert.equal(noConsent.left?.searchParams.get("error"), "consent_required");
      assert.ok((await browser.decide(await browser.visit((await authorization()).url), "allow")).left);
      const silent = await authorization({ prompt: "none" });
      const ok = await browser.visit(silent.url);
      assert.ok(ok.left?.searchParams.get("code"), "prompt=none succeeds silently once signed in and consented");
    });

    it("prompt=login asks for a fresh sign-in, and auth_time moves", async () => {
      const browser = await newUser("prompt-login@example.com");
      assert.ok((await browser.decide(await browser.visit((await authorization()).url), "allow")).left);
      await sql(`update sessions set created_at = created_at - interval '1 hour'`);
      const first = await authorization();
      const before = await exchange((await browser.visit(first.url)).left!, first);
      const flow = await authorization({ prompt: "login" });
      const signIn = await browser.visit(flow.url);
      assert.equal(signIn.url.pathname, "/sign-in", "signed in, but asked again");
      assert.equal(signIn.url.searchParams.get("reason"), "login");
      assert.match(await signIn.res.clone().text(), /sign in again/);
      const back = await browser.signInOn(signIn, "prompt-login@example.com", password);
      assert.ok(back.left);
      const tokens = await exchange(back.left, flow);
      assert.ok((tokens.claims()!.auth_time as number) > (before.claims()!.auth_time as number));
    });

    it("max_age: an older sign-in goes to the sign-in page (or login_required with prompt=none)", async () => {
      const browser = await newUser("max-age@example.com");
      assert.ok((await browser.decide(await browser.visit((await authorization()).url), "allow")).left);
      await sql(`update sessions set created_at = created_at - interval '10 minutes' where user_id = (select id from users where email = 'max-age@example.com')`);
      const fresh = await browser.visit((await authorization({ max_age: "3600" })).url);
      assert.ok(fresh.left?.searchParams.get("code"), "within max_age");
      const stale = await browser.visit((await authorization({ max_age: "60" })).url);
      assert.equal(stale.url.pathname, "/sign-in");
      assert.equal(stale.url.searchParams.get("reason"), "max_age");
      const none = await browser.visit((await authorization({ max_age: "60", prompt: "none" })).url);
      assert.equal(none.left?.searchParams.get("error"), "login_required");
      const bad = await browser.visit((await authorization({ max_age: "soon" })).url);
      assert.equal(bad.left?.searchParams.get("error"), "invalid_request");
    });

    it("max_age=0 asks for a sign-in once, as prompt=login, then returns a code with a fresh auth_time (no loop)", async () => {
      const browser = await newUser("max-age-zero@example.com");
      assert.ok((await browser.decide(await browser.visit((await authorization()).url), "allow")).left);
      const flow = await authorization({ max_age: "0" });
      const started = Math.floor(Date.now() / 1000);
      const signIn = await browser.visit(flow.url);
      assert.equal(signIn.url.pathname, "/sign-in", "signed in, but asked again");
      assert.ok(["login", "max_age"].includes(signIn.url.searchParams.get("reason")!));
      const back = await browser.signInOn(signIn, "max-age-zero@example.com", password);
      assert.equal(back.url.pathname === "/sign-in", false, "not sent back to the sign-in page");
      assert.ok(back.left?.searchParams.get("code"), "back to the app with a code");
      const tokens = await oidc.authorizationCodeGrant(config, back.left!, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        maxAge: 0,
      });
      assert.ok((tokens.claims()!.auth_time as number) >= started, "auth_time is the sign-in just made");
    });

    it("a session unused for longer than SESSION_IDLE_HOURS signs no one in: prompt=none → login_required", async () => {
      const browser = await newUser("idle@example.com");
      assert.ok((await browser.decide(await browser.visit((await authorization()).url), "allow")).left);
      await sql(`update sessions set last_used_at = now() - interval '73 hours' where user_id = (select id from users where email = 'idle@example.com')`);
      const none = await browser.visit((await authorization({ prompt: "none" })).url);
      assert.equal(none.left?.searchParams.get("error"), "login_required");
      assert.equal((await browser.visit((await authorization()).url)).url.pathname, "/sign-in");
    });
  });
});
