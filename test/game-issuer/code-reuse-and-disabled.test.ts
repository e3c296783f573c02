import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { ExchangeCodeRequest } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import type { Agent } from "../../agent/client.ts";
import { codeOf, createWorld, playAndConfirm, player, redirectUri as coreRedirectUri, type World } from "../game-oauth/fixture.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { signInInGame } from "../support/agent.ts";
import { openHostedPage, seedGameOAuth, type Seeded } from "../support/game-oauth.ts";
import { oauthOutcome } from "../support/errors.ts";

type Request = Omit<Partial<ExchangeCodeRequest>, "$typeName" | "$unknown">;

/** A code used again, some time after its first use: invalid_grant, and the first use's tokens die. */
describe("Game OAuth: a code used again after 1 s and after 30 s (core, test clock)", function () {
  this.timeout(60_000);
  let w: World;
  let client: { clientId: string; clientSecret: string };
  let agent: Agent;

  before(async () => {
    w = await createWorld();
    client = await w.createClient();
    agent = (await w.createServer("Main")).agent!;
  });
  after(async () => {
    await w?.close();
  });

  async function signIn(): Promise<string> {
    const { session, binding } = await w.start({ clientId: client.clientId });
    const reply = await playAndConfirm(agent, player(), session);
    assert.equal(reply.accepted, true, reply.message);
    const { session: done } = await w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: binding });
    return codeOf(done!);
  }
  const exchange = (req: Request) =>
    w.oauth().exchangeCode({ clientId: client.clientId, clientSecret: client.clientSecret, grantType: "authorization_code", redirectUri: coreRedirectUri, ...req });

  for (const seconds of [1, 30]) {
    it(`refuses the code ${seconds} s after its first use and revokes the first access token`, async () => {
      const code = await signIn();
      const first = await exchange({ code });
      const accessToken = first.tokens?.accessToken ?? "";
      assert.equal(await oauthOutcome(w.oauth().getUserInfo({ accessToken })), "ok");

      w.t.clock.advance(seconds * 1_000);
      try {
        assert.equal(await oauthOutcome(exchange({ code })), "invalid_grant");
        assert.equal(await oauthOutcome(w.oauth().getUserInfo({ accessToken })), "invalid_token", "the first access token is revoked");
        // And it stays so; the code stays dead.
        assert.equal(await oauthOutcome(exchange({ code })), "invalid_grant");
      } finally {
        w.t.clock.advance(-seconds * 1_000);
      }
    });
  }
});

/** The same through the issuer's HTTP endpoints, and a disabled client as the browser sees it. */
describe("game issuer: code reuse over HTTP, and a disabled client's error page", function () {
  this.timeout(60_000);
  const redirectUri = "http://127.0.0.1:9/callback";
  let t: TestOutpost;
  let seeded: Seeded;

  before(async () => {
    t = await startTestOutpost();
    seeded = await seedGameOAuth(t.baseUrl, [redirectUri]);
  });
  after(async () => {
    await t?.close();
  });

  const authorizeUrl = (state = "st") =>
    new URL(
      `${t.gameIssuerUrl}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: seeded.clientId, redirect_uri: redirectUri, scope: "openid profile", state })}`,
    );

  async function code(): Promise<string> {
    const hosted = await openHostedPage(authorizeUrl());
    await hosted.opened;
    const played = await signInInGame(t.baseUrl, seeded.agentKey, { name: "Steve", uuid: randomUUID() }, hosted.command);
    assert.equal(played.code, 0, played.stdout + played.stderr);
    return (await hosted.redirect).searchParams.get("code")!;
  }
  const token = (c: string) =>
    fetch(`${t.gameIssuerUrl}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", code: c, redirect_uri: redirectUri, client_id: seeded.clientId, client_secret: seeded.clientSecret }),
    });
  const userinfo = (accessToken: string) => fetch(`${t.gameIssuerUrl}/oauth2/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });

  it("answers invalid_grant to a code used again a second later, and the first access token then fails at userinfo", async () => {
    const c = await code();
    const first = await token(c);
    assert.equal(first.status, 200);
    const { access_token: accessToken } = (await first.json()) as { access_token: string };
    assert.equal((await userinfo(accessToken)).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const again = await token(c);
    assert.equal(again.status, 400);
    assert.equal(again.headers.get("cache-control"), "no-store");
    assert.equal(((await again.json()) as { error: string }).error, "invalid_grant");
    const refused = await userinfo(accessToken);
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get("www-authenticate")!, /^Bearer .*error="invalid_token"/);
  });

  it("shows an error page (400, no redirect) for a disabled client; its issued token keeps working; enabled again, it redirects", async () => {
    // A token issued before the client is disabled.
    const before = await token(await code());
    const { access_token: accessToken } = (await before.json()) as { access_token: string };

    await seeded.api("POST", "organizations/updateGameOAuthClient", { clientId: seeded.clientId, disabled: true });
    const res = await fetch(authorizeUrl("disabled"), { redirect: "manual" });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("location"), null);
    assert.match(res.headers.get("content-type")!, /^text\/html/);
    assert.equal(res.headers.get("x-frame-options"), "DENY");
    assert.match(res.headers.get("content-security-policy")!, /frame-ancestors 'none'/);
    const html = await res.text();
    assert.match(html, /This sign-in cannot start/);
    assert.doesNotMatch(html, /127\.0\.0\.1:9|data-session/, "no link back to the app, no session");
    // Even a bad scope, which would otherwise be redirected, gets the page.
    const badScopeUrl = authorizeUrl("s");
    badScopeUrl.searchParams.set("scope", "email");
    const badScope = await fetch(badScopeUrl, { redirect: "manual" });
    assert.equal(badScope.status, 400);
    assert.equal(badScope.headers.get("location"), null);
    // Exchanges are refused; the token issued before stays valid until it expires.
    const refused = await token("ogcode_whatever");
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as { error: string }).error, "invalid_client");
    assert.equal((await userinfo(accessToken)).status, 200);

    await seeded.api("POST", "organizations/updateGameOAuthClient", { clientId: seeded.clientId, disabled: false });
    const page = await fetch(authorizeUrl("enabled"), { redirect: "manual" });
    assert.equal(page.status, 200);
  });
});
