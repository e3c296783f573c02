/** Account OAuth over real HTTP (see account-oauth.test.ts): requests the issuer refuses, and its token endpoint. */
import assert from "node:assert/strict";
import * as oidc from "openid-client";
import type { TestOutpost } from "../support/outpost.ts";
import { FormBrowser, type RegisteredApp } from "../support/account-oauth.ts";
import { authorization as authorizationWith, newUser as newUserOn, password, redirectUri, useAccountIssuer } from "./issuer-fixture.ts";
import { openHostedPage, seedGameOAuth } from "../support/game-oauth.ts";
import { signInInGame } from "../support/agent.ts";
import { apiPost, registerApp } from "../support/account-oauth.ts";

describe("Account OAuth issuer: refused requests and tokens", function () {
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
      assert.equal(
        signIn.headers.getSetCookie().some((c) => c.startsWith("outpost_session=")),
        false,
      );
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
      else {
        body.set("client_id", app.clientId);
        body.set("client_secret", app.clientSecret);
      }
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
      const events = ((await listed.json()) as { events: Array<{ action: string; kind: string; severity: string; targetId: string; details: Record<string, string> }> })
        .events;
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
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          redirect_uri: redirectUri,
          code_verifier: flow.verifier,
          client_id: app.clientId,
          client_secret: old,
        }),
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
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: "x",
          redirect_uri: redirectUri,
          client_id: seeded.clientId,
          client_secret: seeded.clientSecret,
        }),
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
});
