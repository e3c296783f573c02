/**
 * Account OAuth over real HTTP: openid-client as the app (discovery from the issuer with its
 * /api/auth path), a cookie-jar browser filling the sign-in and consent forms, a real Outpost on
 * a test database. The browser test (browser-flow.test.ts) does the same flow in Chromium.
 */
import assert from "node:assert/strict";
import { verifyEmail } from "../support/fixtures.ts";
import * as oidc from "openid-client";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { adminApiKey, apiPost, FormBrowser, hiddenField, registerApp, type RegisteredApp } from "../support/account-oauth.ts";
import { openHostedPage, seedGameOAuth } from "../support/game-oauth.ts";
import { signInInGame } from "../support/agent.ts";

const redirectUri = "http://127.0.0.1:9/callback";
const password = "a long user password";

describe("Account OAuth issuer", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let issuer: string;
  let adminKey: string;
  let app: RegisteredApp;
  let config: oidc.Configuration;

  before(async () => {
    t = await startListeningOutpost();
    issuer = `${t.baseUrl}/api/auth`;
    adminKey = await adminApiKey(t);
    app = await registerApp(t, adminKey, [redirectUri]);
    config = await oidc.discovery(new URL(issuer), app.clientId, undefined, oidc.ClientSecretBasic(app.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
  });
  after(() => t?.close());

  /** An authorization URL with PKCE S256, state and nonce, and what the app keeps to check the answer. */
  async function authorization(params: Record<string, string> = {}, cfg = config) {
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

  async function newUser(email: string, name = "Ada Lovelace"): Promise<FormBrowser> {
    const browser = new FormBrowser(t.baseUrl);
    await browser.signUp(email, password, name);
    return browser;
  }

  async function exchange(callback: URL, flow: { verifier: string; state: string; nonce: string }, cfg = config) {
    return oidc.authorizationCodeGrant(cfg, callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce });
  }

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
      assert.ok(account.keys.every((k) => k.alg === "RS256"));
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

    it("\"Not you?\" signs in as another account, which answers the same request for itself", async () => {
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
        pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce, maxAge: 0,
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

  describe("refused requests", () => {
    it("never redirects for an unknown client, an unsaved redirect URI, a disabled client or a repeated client_id", async () => {
      const browser = await newUser("refused@example.com");
      const good = (await authorization()).url;
      const cases: Array<[string, (u: URL) => void]> = [
        ["unknown client", (u) => u.searchParams.set("client_id", "oac_000000000000000000000000")],
        ["unsaved redirect", (u) => u.searchParams.set("redirect_uri", "http://127.0.0.1:9/elsewhere")],
        ["repeated client_id", (u) => u.searchParams.append("client_id", app.clientId)],
      ];
      for (const [name, change] of cases) {
        const url = new URL(good);
        change(url);
        const res = await browser.request(url);
        assert.equal(res.status, 400, name);
        assert.equal(res.headers.get("location"), null, name);
        assert.match(res.headers.get("content-type")!, /text\/html/, name);
      }
      const disabled = await registerApp(t, adminKey, [redirectUri], { disabled: true });
      const url = new URL(good);
      url.searchParams.set("client_id", disabled.clientId);
      const res = await browser.request(url);
      assert.equal(res.status, 400);
      assert.match(await res.text(), /unauthorized_client/);
    });

    it("redirects the other errors with error, state and iss: invalid_scope, unsupported_response_type, bad PKCE method", async () => {
      const browser = new FormBrowser(t.baseUrl);
      for (const [params, error] of [
        [{ scope: "openid admin" }, "invalid_scope"],
        [{ scope: "profile" }, "invalid_scope"],
        [{ response_type: "token" }, "unsupported_response_type"],
        [{ code_challenge_method: "S512" }, "invalid_request"],
        [{ prompt: "none login" }, "invalid_request"],
      ] as const) {
        const flow = await authorization(params);
        const res = await browser.request(flow.url);
        assert.equal(res.status, 303, JSON.stringify(params));
        const location = new URL(res.headers.get("location")!);
        assert.equal(location.searchParams.get("error"), error, JSON.stringify(params));
        assert.equal(location.searchParams.get("state"), flow.state);
        assert.equal(location.searchParams.get("iss"), issuer);
      }
    });

    it("a form without this browser's token is refused, and nothing happens", async () => {
      const browser = await newUser("forged@example.com");
      const consent = await browser.visit((await authorization()).url);
      const html = await consent.res.text();
      const request = /name="request" value="([^"]+)"/.exec(html)![1];
      const forged = await browser.request("/api/auth/oauth2/consent", { form: { request, decision: "allow", form_token: "x".repeat(43) } });
      assert.equal(forged.status, 403);
      assert.equal(forged.headers.get("location"), null);
      const signIn = await new FormBrowser(t.baseUrl).request("/sign-in", { form: { email: "forged@example.com", password } });
      assert.equal(signIn.status, 403);
      assert.equal(signIn.headers.getSetCookie().some((c) => c.startsWith("outpost_session=")), false);
    });

    it("returns after sign-in only to a path on this site (no open redirect)", async () => {
      const elsewhere = ["//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)", "/.//evil.example/x", "/a/..//evil.example/x"];
      for (const returnTo of [...elsewhere, "/app/servers?x=1"]) {
        const browser = new FormBrowser(t.baseUrl);
        const page = await browser.request(`/sign-in?return_to=${encodeURIComponent(returnTo)}`);
        const html = await page.text();
        if (returnTo.includes("evil")) assert.doesNotMatch(html, /evil\.example/, `the page does not carry ${returnTo} on`);
        const formToken = /name="form_token" value="([^"]+)"/.exec(html)![1];
        const res = await browser.request("/sign-in", { form: { form_token: formToken, email: "refused@example.com", password, return_to: returnTo } });
        assert.equal(res.status, 303, returnTo);
        assert.equal(res.headers.get("location"), returnTo === "/app/servers?x=1" ? returnTo : "/app", returnTo);
      }
    });
  });

  describe("tokens", () => {
    async function codeFor(browser: FormBrowser, params: Record<string, string> = {}) {
      const flow = await authorization(params);
      const visited = await browser.visit(flow.url);
      const back = visited.left ?? (await browser.decide(visited, "allow")).left!;
      return { flow, code: back.searchParams.get("code")!, callback: back };
    }

    async function token(form: Record<string, string>, auth: "basic" | "post" = "basic") {
      const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
      const body = new URLSearchParams({ grant_type: "authorization_code", redirect_uri: redirectUri, ...form });
      if (auth === "basic") headers.authorization = `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString("base64")}`;
      else body.set("client_id", app.clientId), body.set("client_secret", app.clientSecret);
      const res = await fetch(`${issuer}/oauth2/token`, { method: "POST", headers, body });
      return { res, json: (await res.json()) as Record<string, string> };
    }

    async function userinfoStatus(base: string, accessToken: string): Promise<number> {
      return (await fetch(`${base}/oauth2/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } })).status;
    }

    it("a reused code is invalid_grant and kills the tokens of its first use", async () => {
      const browser = await newUser("reuse@example.com");
      const { flow, code } = await codeFor(browser);
      const first = await token({ code, code_verifier: flow.verifier });
      assert.equal(first.res.status, 200);
      assert.equal(first.res.headers.get("cache-control"), "no-store");
      assert.equal(await userinfoStatus(issuer, first.json.access_token), 200);
      const second = await token({ code, code_verifier: flow.verifier }, "post");
      assert.equal(second.res.status, 400);
      assert.equal(second.json.error, "invalid_grant");
      const res = await fetch(`${issuer}/oauth2/userinfo`, { headers: { authorization: `Bearer ${first.json.access_token}` } });
      assert.equal(res.status, 401);
      assert.match(res.headers.get("www-authenticate")!, /error="invalid_token"/);
      assert.equal((await token({ code, code_verifier: flow.verifier })).json.error, "invalid_grant");
      // Platform activity records it once for the code, naming the app and the account.
      const listed = await fetch(`${t.baseUrl}/api/http/activity/listPlatformActivity`, { headers: { "x-api-key": adminKey } });
      const events = ((await listed.json()) as { events: Array<{ action: string; kind: string; severity: string; targetId: string; details: Record<string, string> }> }).events;
      const [user] = await t.outpost.runtime.orm.em.fork().getConnection().execute(`select id from users where email = 'reuse@example.com'`);
      const reused = events.filter((e) => e.action === "account_oauth.code_reused" && e.details.userId === user.id);
      assert.equal(reused.length, 1, `${listed.status} ${JSON.stringify(reused)}`);
      assert.deepEqual([reused[0].targetId, reused[0].details.presentedBy, reused[0].details.clientName], [app.clientId, app.clientId, "Wiki"]);
      assert.deepEqual([reused[0].kind, reused[0].severity], ["security", "error"], "a reused code is a security error");
    });

    it("a wrong redirect URI, a wrong or missing PKCE verifier: invalid_grant, and the code is then dead", async () => {
      const browser = await newUser("grant@example.com");
      for (const mistake of ["redirect", "verifier", "missing"] as const) {
        const { flow, code } = await codeFor(browser);
        const wrong = await token({
          code,
          ...(mistake === "redirect" ? { redirect_uri: `${redirectUri}/`, code_verifier: flow.verifier } : {}),
          ...(mistake === "verifier" ? { code_verifier: oidc.randomPKCECodeVerifier() } : {}),
        });
        assert.equal(wrong.json.error, "invalid_grant", mistake);
        const right = await token({ code, code_verifier: flow.verifier });
        assert.equal(right.json.error, "invalid_grant", `${mistake}: the code was consumed`);
      }
    });

    it("a wrong secret is invalid_client with WWW-Authenticate; after rotation the old one fails", async () => {
      const browser = await newUser("secret@example.com");
      const { flow, code } = await codeFor(browser);
      const wrong = await fetch(`${issuer}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${Buffer.from(`${app.clientId}:oas_wrong`).toString("base64")}` },
        body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: flow.verifier }),
      });
      assert.equal(wrong.status, 401);
      assert.match(wrong.headers.get("www-authenticate")!, /^Basic /);
      const rotated = await apiPost(t, adminKey, "admin/rotateAccountOAuthClientSecret", { clientId: app.clientId });
      const old = app.clientSecret;
      app = { clientId: app.clientId, clientSecret: rotated.clientSecret };
      config = await oidc.discovery(new URL(issuer), app.clientId, undefined, oidc.ClientSecretBasic(app.clientSecret), { execute: [oidc.allowInsecureRequests] });
      const stale = await fetch(`${issuer}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: flow.verifier, client_id: app.clientId, client_secret: old }),
      });
      assert.equal(stale.status, 401);
      assert.equal(((await stale.json()) as Record<string, string>).error, "invalid_client");
    });

    it("shares nothing with Game OAuth, and neither issuer's tokens open the HTTP API", async () => {
      const browser = await newUser("isolation@example.com");
      const { flow, code } = await codeFor(browser);
      const account = await token({ code, code_verifier: flow.verifier });
      assert.equal(account.res.status, 200);

      // A game client and a game access token, through the real game flow's storage path.
      const seeded = await seedGameOAuth(t.baseUrl, ["http://127.0.0.1:9/game-callback"], "game-owner@example.com", t.baseUrl);
      const gameToken = await mintGameToken(seeded);

      assert.equal(await userinfoStatus(issuer, gameToken), 401, "a game token at the account userinfo");
      assert.equal(await userinfoStatus(t.gameIssuerUrl, account.json.access_token), 401, "an account token at the game userinfo");
      const accountClientAtGame = await fetch(`${t.gameIssuerUrl}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code: "x", redirect_uri: redirectUri, client_id: app.clientId, client_secret: app.clientSecret }),
      });
      assert.equal(accountClientAtGame.status, 401);
      assert.equal(((await accountClientAtGame.json()) as Record<string, string>).error, "invalid_client");
      const gameClientHere = await fetch(`${issuer}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code: "x", redirect_uri: redirectUri, client_id: seeded.clientId, client_secret: seeded.clientSecret }),
      });
      assert.equal(((await gameClientHere.json()) as Record<string, string>).error, "invalid_client");

      for (const tokenValue of [account.json.access_token, gameToken, account.json.id_token]) {
        for (const headers of [{ authorization: `Bearer ${tokenValue}` }, { "x-api-key": tokenValue }]) {
          const res = await fetch(`${t.baseUrl}/api/http/auth/getSession`, { headers });
          assert.equal(res.status, 401, JSON.stringify(headers).slice(0, 40));
        }
      }
    });

    async function mintGameToken(seeded: Awaited<ReturnType<typeof seedGameOAuth>>): Promise<string> {
      const gameRedirect = "http://127.0.0.1:9/game-callback";
      const url = new URL(`${t.gameIssuerUrl}/oauth2/authorize`);
      url.search = new URLSearchParams({ response_type: "code", client_id: seeded.clientId, redirect_uri: gameRedirect, state: "s", scope: "openid profile" }).toString();
      const hosted = await openHostedPage(url);
      await hosted.opened;
      const played = await signInInGame(t.baseUrl, seeded.agentKey, { name: "Notch", uuid: "069a79f4-44e9-4726-a5be-fca90e38aaf5" }, hosted.command);
      assert.equal(played.code, 0, played.stdout + played.stderr);
      const code = (await hosted.redirect).searchParams.get("code")!;
      const res = await fetch(`${t.gameIssuerUrl}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: gameRedirect, client_id: seeded.clientId, client_secret: seeded.clientSecret }),
      });
      const json = (await res.json()) as Record<string, string>;
      assert.equal(res.status, 200, JSON.stringify(json));
      return json.access_token;
    }
  });

  /** JSON GET of the HTTP API with the browser's session cookie. */
  async function apiGet(browser: FormBrowser, path: string): Promise<unknown> {
    const res = await browser.request(`/api/http/${path}`);
    assert.equal(res.status, 200);
    return res.json();
  }

  async function apiGetSession(browser: FormBrowser) {
    return (await apiGet(browser, "auth/getSession")) as { user: { id: string } };
  }

  async function apiPostAs(browser: FormBrowser, path: string, body: unknown): Promise<unknown> {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method: "POST",
      headers: { cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join("; "), "content-type": "application/json", origin: t.baseUrl },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return res.json();
  }

  async function sql(statement: string): Promise<void> {
    await t.outpost.runtime.orm.em.fork().execute(statement, [], "run");
  }
});

describe("Account OAuth sign-in page: rate limits", function () {
  this.timeout(60_000);
  let t: TestOutpost;
  before(async () => {
    t = await startListeningOutpost({ SIGN_IN_ATTEMPTS_PER_15_MIN: "3", RATE_LIMIT_PER_MINUTE: "5" });
    await new FormBrowser(t.baseUrl).signUp("limited@example.com", password, "Limited");
  });
  after(() => t?.close());

  it("refuses further attempts with 429, Retry-After and a clear message, the same for an unknown email", async () => {
    for (const email of ["limited@example.com", "ghost@example.com"]) {
      const browser = new FormBrowser(t.baseUrl);
      const attempt = async (pw: string) => {
        const page = await browser.request("/sign-in");
        const formToken = hiddenField(await page.text(), "form_token");
        return browser.request("/sign-in", { form: { form_token: formToken, email, password: pw } });
      };
      for (let i = 0; i < 3; i++) assert.equal((await attempt("wrong password")).status, 401, `${email} attempt ${i + 1}`);
      const refused = await attempt(email === "limited@example.com" ? password : "wrong password");
      assert.equal(refused.status, 429, email);
      const retryAfter = Number(refused.headers.get("retry-after"));
      assert.ok(retryAfter > 0, "Retry-After in seconds");
      const html = await refused.text();
      assert.match(html, new RegExp(`Too many sign-in attempts. Wait ${retryAfter} seconds`));
      assert.equal(refused.headers.getSetCookie().some((c) => c.startsWith("outpost_session=")), false, "even the right password is refused now");
    }
  });

  it("a dashboard page over the session's limit is a 429 page with Retry-After", async () => {
    const browser = new FormBrowser(t.baseUrl);
    await browser.signUp("dashboard-limited@example.com", password, "Busy");
    let res: Response | undefined;
    for (let i = 0; i < 10 && res?.status !== 429; i++) res = await browser.request("/app/account/security");
    assert.equal(res!.status, 429, "the session's calls ran over RATE_LIMIT_PER_MINUTE=5");
    assert.ok(Number(res!.headers.get("retry-after")) > 0, "Retry-After in seconds");
    assert.match(res!.headers.get("ratelimit-policy")!, /^"default";q=5;w=60$/);
    assert.match(await res!.text(), /too many requests; try again in \d+ seconds?/);
  });

  it("limits authorization starts per address on both issuers: a 429 page with Retry-After", async () => {
    const params = new URLSearchParams({ response_type: "code", client_id: "oac_000000000000000000000000", redirect_uri: redirectUri, state: "s" });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await fetch(`${t.baseUrl}/api/auth/oauth2/authorize?${params}`, { redirect: "manual" })).status);
    assert.deepEqual(statuses, [400, 400, 400, 400, 400, 429], "an unknown client is a 400 page, until the address is over its limit");
    const refused = await fetch(`${t.baseUrl}/api/auth/oauth2/authorize?${params}`, { redirect: "manual" });
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get("retry-after")) > 0);
    assert.match(refused.headers.get("content-type")!, /text\/html/);
    assert.match(await refused.text(), /too many sign-ins started from your address/);
    const game = await fetch(`${t.gameIssuerUrl}/oauth2/authorize?${params}`, { redirect: "manual" });
    assert.equal(game.status, 429, "the game issuer counts the same address");
    assert.ok(Number(game.headers.get("retry-after")) > 0);
  });
});
