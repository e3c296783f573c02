import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { solveChallenge } from "altcha-lib/v1";
import * as oidc from "openid-client";
import { Issuer, KeysService } from "../../gen/outpost/keys/v1/keys_service_pb.js";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { signInInGame } from "../support/agent.ts";
import { adminApiKey, apiPost } from "../support/account-oauth.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const redirectUri = "http://127.0.0.1:9/callback";

/**
 * The Game OAuth issuer as an app and a player use it, on a whole Outpost: openid-client as the
 * app (discovery, PKCE S256, state, nonce), the hosted page driven without a browser (its cookie,
 * its challenge solved here, its live status read as server-sent events), and the real
 * `outpost-agent simulate` as the game server.
 */
describe("game issuer: discovery, JWKS and the whole sign-in on a running Outpost", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let apiKey: string;
  let agentKey: string;
  let serverId: string;
  let clientId: string;
  let clientSecret: string;

  const api = async (method: "GET" | "POST", path: string, body?: unknown): Promise<Json> => {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": apiKey, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(json));
    return json;
  };

  before(async () => {
    t = await startTestOutpost();
    const origin = "http://localhost:3000";
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email: "owner@example.com", password: "a long password", name: "Owner" }),
    });
    const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { cookie, origin, "content-type": "application/json" },
      body: JSON.stringify({ name: "tests", expiresInDays: 30 }),
    });
    apiKey = ((await created.json()) as Json as Json).key;
    await api("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
    const server = await api("POST", "servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" });
    serverId = server.server.id;
    agentKey = server.agentKey;
    const client = await api("POST", "organizations/createGameOAuthClient", {
      organizationSlug: "acme",
      name: "Forum",
      redirectUris: [redirectUri],
      verifierPolicy: "any_server",
    });
    clientId = client.client.clientId;
    clientSecret = client.clientSecret;
  });
  after(async () => {
    await t?.close();
  });

  it("serves the discovery document on GAME_ISSUER_URL, its issuer without a trailing slash", async () => {
    assert.equal(t.outpost.gamePort, Number(new URL(t.gameIssuerUrl).port));
    const res = await fetch(`${t.gameIssuerUrl}/.well-known/openid-configuration`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("cache-control")!, /max-age=\d+/);
    const doc = (await res.json()) as Json;
    const issuer = t.gameIssuerUrl;
    assert.ok(!issuer.endsWith("/"));
    assert.equal(doc.issuer, issuer);
    assert.equal(doc.authorization_endpoint, `${issuer}/oauth2/authorize`);
    assert.equal(doc.token_endpoint, `${issuer}/oauth2/token`);
    assert.equal(doc.userinfo_endpoint, `${issuer}/oauth2/userinfo`);
    assert.equal(doc.jwks_uri, `${issuer}/oauth2/jwks`);
    assert.deepEqual(doc.response_types_supported, ["code"]);
    assert.deepEqual(doc.grant_types_supported, ["authorization_code"]);
    assert.deepEqual(doc.scopes_supported, ["openid", "profile"]);
    assert.deepEqual(doc.code_challenge_methods_supported, ["S256", "plain"]);
    assert.deepEqual(doc.token_endpoint_auth_methods_supported, ["client_secret_basic", "client_secret_post"]);
    assert.deepEqual(doc.id_token_signing_alg_values_supported, ["RS256", "ES256", "EdDSA"]);
    assert.deepEqual(doc.subject_types_supported, ["public"]);
    assert.deepEqual(doc.claims_supported, [
      "sub",
      "iss",
      "aud",
      "exp",
      "iat",
      "auth_time",
      "nonce",
      "at_hash",
      "preferred_username",
      "game",
      "game_account_name",
      "game_account_id",
      "organization_id",
      "verified_by_server_id",
    ]);
    assert.equal(doc.authorization_response_iss_parameter_supported, true);
    // Not on the account host.
    assert.equal((await fetch(`${t.baseUrl}/oauth2/jwks`)).status, 404);
  });

  it("serves exactly KeysService's game keys as the JWKS, cacheable briefly", async () => {
    const res = await fetch(`${t.gameIssuerUrl}/oauth2/jwks`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("cache-control"), "public, max-age=300");
    const jwks = (await res.json()) as Json;
    const keys = createClient(KeysService, t.outpost.runtime.core.transport());
    const expected = await keys.getJwks({ issuer: Issuer.GAME });
    assert.deepEqual(
      expected.keys.map((key) => key.alg),
      ["RS256", "RS256", "ES256", "ES256", "EdDSA", "EdDSA"],
    );
    // Each key with the members of its kind only (RFC 7517, RFC 8037).
    const members = (key: (typeof expected.keys)[number]) =>
      key.kty === "RSA" ? { n: key.n, e: key.e } : key.kty === "EC" ? { crv: key.crv, x: key.x, y: key.y } : { crv: key.crv, x: key.x };
    assert.deepEqual(jwks, { keys: expected.keys.map((key) => ({ kty: key.kty, ...members(key), kid: key.kid, use: key.use, alg: key.alg })) });
  });

  /** One sign-in, as openid-client and a player see it; returns the callback URL. */
  async function signIn(config: oidc.Configuration, params: Record<string, string>, player: { name: string; uuid: string }): Promise<URL> {
    const url = oidc.buildAuthorizationUrl(config, params);
    assert.equal(url.origin, t.gameIssuerUrl);
    const page = await fetch(url, { redirect: "manual" });
    assert.equal(page.status, 200, await page.clone().text());
    const cookie = page.headers.get("set-cookie")!.split(";")[0];
    const html = await page.text();
    const decode = (s: string) =>
      s
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&lt;/g, "<")
        .replace(/&gt;/g, ">")
        .replace(/&amp;/g, "&");
    const session = /data-session="([^"]+)"/.exec(html)![1];
    const challenge = JSON.parse(decode(/data-challenge="([^"]+)"/.exec(html)![1]));
    assert.match(html, /Forum/);

    // The browser check, as the page's script solves it.
    const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
    const payload = Buffer.from(JSON.stringify({ ...challenge, number: solution!.number })).toString("base64");
    const verified = await fetch(`${t.gameIssuerUrl}/oauth2/authorize/verify-challenge`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ session, payload }),
    });
    assert.equal(verified.status, 200);
    const { login_code: loginCode, command } = (await verified.json()) as Json;
    assert.match(loginCode, /^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    assert.equal(command, `/outpost login ${loginCode}`);

    // The live status, then the player's command on the game server.
    const events = await fetch(`${t.gameIssuerUrl}/oauth2/authorize/events?session=${session}`, { headers: { cookie } });
    assert.equal(events.status, 200);
    const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("\n\n")) text += (await reader.read()).value;
    assert.match(text, /"status":"pending"/);
    const played = await signInInGame(t.baseUrl, agentKey, player, command.toLowerCase());
    assert.equal(played.code, 0, played.stdout + played.stderr);
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += chunk.value;
    }
    const last = JSON.parse(text.trim().split("\n\n").at(-1)!.split("\ndata: ")[1]);
    assert.equal(last.status, "completed");
    return new URL(last.redirect_url);
  }

  for (const method of ["client_secret_basic", "client_secret_post"] as const) {
    it(`signs a player in end to end with openid-client (${method}, PKCE S256, state, nonce), then userinfo`, async () => {
      const auth = method === "client_secret_basic" ? oidc.ClientSecretBasic(clientSecret) : oidc.ClientSecretPost(clientSecret);
      const config = await oidc.discovery(new URL(t.gameIssuerUrl), clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const player = { name: "Steve", uuid: randomUUID() };
      const callback = await signIn(
        config,
        {
          redirect_uri: redirectUri,
          scope: "openid profile",
          code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
          code_challenge_method: "S256",
          state,
          nonce,
        },
        player,
      );
      assert.equal(callback.searchParams.get("iss"), t.gameIssuerUrl);
      const tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
        idTokenExpected: true,
      });
      assert.equal(tokens.token_type.toLowerCase(), "bearer");
      assert.equal(tokens.expires_in, 900);
      assert.equal(tokens.scope, "openid profile");
      const claims = tokens.claims()!;
      assert.equal(claims.iss, t.gameIssuerUrl);
      assert.equal(claims.aud, clientId);
      assert.equal(claims.nonce, nonce);
      assert.equal(claims.game, "minecraft");
      assert.equal(claims.game_account_id, player.uuid);
      assert.equal(claims.verified_by_server_id, serverId);
      const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
      assert.equal(info.sub, claims.sub);
      assert.equal(info.preferred_username, "Steve");
      assert.equal(info.game_account_name, "Steve");

      // The code is single-use: a second exchange is invalid_grant.
      const again = await fetch(`${t.gameIssuerUrl}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: callback.searchParams.get("code")!,
          redirect_uri: redirectUri,
          code_verifier: verifier,
          client_id: clientId,
          client_secret: clientSecret,
        }),
      });
      assert.equal(again.status, 400);
      assert.equal(((await again.json()) as Json).error, "invalid_grant");
    });
  }

  it("renders an error page, not a redirect, for an unsaved redirect URI", async () => {
    const base = { response_type: "code", client_id: clientId, state: "s1" };
    const unsaved = await fetch(`${t.gameIssuerUrl}/oauth2/authorize?${new URLSearchParams({ ...base, redirect_uri: "http://127.0.0.1:9/other" })}`, {
      redirect: "manual",
    });
    assert.equal(unsaved.status, 400);
    assert.equal(unsaved.headers.get("location"), null);
  });

  it("sends a bad scope back only through a page naming the app's host until a platform admin verifies the organization; then redirects it", async () => {
    const config = await oidc.discovery(new URL(t.gameIssuerUrl), clientId, undefined, oidc.ClientSecretBasic(clientSecret), { execute: [oidc.allowInsecureRequests] });
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: "openid email", state });

    // Unverified (as every new organization is): a 400 page, no Location, the host shown.
    const page = await fetch(url, { redirect: "manual" });
    assert.equal(page.status, 400);
    assert.equal(page.headers.get("location"), null);
    assert.equal(page.headers.get("referrer-policy"), "no-referrer");
    const html = await page.text();
    assert.match(html, /id="destination">127\.0\.0\.1:9</);
    // The app, reached through the page's link, sees the error as openid-client reads it.
    const link = new URL(/id="continue" href="([^"]+)"/.exec(html)![1].replace(/&amp;/g, "&"));
    await assert.rejects(oidc.authorizationCodeGrant(config, link, { expectedState: state }), (error: Json) => {
      assert.ok(error instanceof oidc.AuthorizationResponseError, String(error));
      assert.equal(error.error, "invalid_scope");
      return true;
    });

    // The organization's own owner cannot verify it.
    const refused = await fetch(`${t.baseUrl}/api/http/admin/setOrganizationVerified`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({ organizationSlug: "acme", verified: true }),
    });
    assert.equal(refused.status, 403);
    assert.equal(((await refused.json()) as Json).reason, "platform_admin_required");
    assert.equal((await fetch(url, { redirect: "manual" })).status, 400);

    // A platform admin verifies it: a direct redirect with error, state and iss.
    const admin = await adminApiKey(t);
    const verified = await apiPost(t, admin, "admin/setOrganizationVerified", { organizationSlug: "acme", verified: true });
    assert.equal(verified.organization.verified, true);
    try {
      const redirected = await fetch(url, { redirect: "manual" });
      assert.equal(redirected.status, 302);
      const location = new URL(redirected.headers.get("location")!);
      assert.equal(location.searchParams.get("error"), "invalid_scope");
      assert.equal(location.searchParams.get("state"), state);
      assert.equal(location.searchParams.get("iss"), t.gameIssuerUrl);
      assert.equal(location.href, link.href, "the page's link is exactly the redirect");
    } finally {
      await apiPost(t, admin, "admin/setOrganizationVerified", { organizationSlug: "acme", verified: false });
    }
  });

  it("answers input core refuses (an over-long parameter, a NUL) with a 400 page on both issuers, never a 500 or a redirect", async () => {
    const base = { response_type: "code", client_id: clientId, redirect_uri: redirectUri, state: "s1" };
    const cases: Array<[string, Record<string, string>]> = [
      ["over-long state", { state: "s".repeat(5000) }],
      ["over-long nonce", { nonce: "n".repeat(5000) }],
      ["NUL in state", { state: "a\u0000b" }],
    ];
    for (const [name, change] of cases) {
      const query = new URLSearchParams({ ...base, ...change });
      for (const url of [`${t.gameIssuerUrl}/oauth2/authorize?${query}`, `${t.baseUrl}/api/auth/oauth2/authorize?${query}`]) {
        const res = await fetch(url, { redirect: "manual" });
        assert.equal(res.status, 400, `${name}: ${url.slice(0, 60)}`);
        assert.equal(res.headers.get("location"), null, name);
        assert.match(res.headers.get("content-type")!, /text\/html/, name);
        assert.match(await res.text(), /invalid_request/, name);
      }
    }
  });

  it("refuses an oversized browser-check answer with 413, not a 500", async () => {
    const page = await fetch(
      `${t.gameIssuerUrl}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: redirectUri, state: "s" })}`,
    );
    const cookie = page.headers.get("set-cookie")!.split(";")[0];
    const res = await fetch(`${t.gameIssuerUrl}/oauth2/authorize/verify-challenge`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ session: "x", payload: "p".repeat(10_000) }),
    });
    assert.equal(res.status, 413);
    assert.equal(((await res.json()) as Json).error, "invalid_request");
  });
});
