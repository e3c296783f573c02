import assert from "node:assert/strict";
import { ClientAuthMethod } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import { parseBasic } from "../../edge/oauth/client-auth.ts";
import { startFakeIssuer, type FakeIssuer } from "./fake-core.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const form = { "content-type": "application/x-www-form-urlencoded" };
/** RFC 6749 §2.3.1: each part form-urlencoded, then base64. */
const basic = (id: string, secret: string) =>
  "Basic " + Buffer.from(`${new URLSearchParams({ a: id }).toString().slice(2)}:${new URLSearchParams({ a: secret }).toString().slice(2)}`).toString("base64");
const grant = "grant_type=authorization_code&code=good&redirect_uri=https%3A%2F%2Fapp.example%2Fcb";

describe("game issuer: token endpoint (client authentication, error shapes)", () => {
  let t: FakeIssuer;
  before(async () => {
    t = await startFakeIssuer();
  });
  after(async () => {
    await t?.close();
  });
  const token = (body: string, headers: Record<string, string> = {}) => fetch(`${t.url}/oauth2/token`, { method: "POST", headers: { ...form, ...headers }, body });

  function assertNoStore(res: Response) {
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.equal(res.headers.get("pragma"), "no-cache");
  }

  it("exchanges with client_secret_basic, decoding percent-encoded id and secret, and shapes the token response", async () => {
    const secret = "right";
    const res = await token(grant, { authorization: basic("ogc_app", secret) });
    assert.equal(res.status, 200);
    assertNoStore(res);
    assert.deepEqual((await res.json()) as Json, { access_token: "at", id_token: "id.token.sig", token_type: "Bearer", expires_in: 900, scope: "openid profile" });
    const sent = t.core.exchanges.at(-1)!;
    assert.equal(sent.clientId, "ogc_app");
    assert.equal(sent.clientAuthMethod, ClientAuthMethod.CLIENT_SECRET_BASIC);
    assert.equal(sent.redirectUri, "https://app.example/cb");
    assert.equal(sent.grantType, "authorization_code");
  });

  it("decodes Basic parts as application/x-www-form-urlencoded (%XX, + as space, a colon in the secret)", async () => {
    assert.deepEqual(parseBasic(basic("ogc_a:b", "s:e c+r%t/é")), { clientId: "ogc_a:b", clientSecret: "s:e c+r%t/é" });
    const raw = "Basic " + Buffer.from("ogc_x:a%2Bb+c%3Ad").toString("base64");
    assert.deepEqual(parseBasic(raw), { clientId: "ogc_x", clientSecret: "a+b c:d" });
    await token(grant, { authorization: basic("ogc_p", "p%ss w:rd") });
    assert.equal(t.core.exchanges.at(-1)!.clientSecret, "p%ss w:rd");
  });

  it("exchanges with client_secret_post", async () => {
    const res = await token(`${grant}&client_id=ogc_app&client_secret=right`);
    assert.equal(res.status, 200);
    const sent = t.core.exchanges.at(-1)!;
    assert.equal(sent.clientAuthMethod, ClientAuthMethod.CLIENT_SECRET_POST);
    assert.equal(sent.clientId, "ogc_app");
    assert.equal(sent.clientSecret, "right");
  });

  it("refuses both methods at once (invalid_request), without asking core", async () => {
    const before = t.core.exchanges.length;
    const res = await token(`${grant}&client_id=ogc_app&client_secret=right`, { authorization: basic("ogc_app", "right") });
    assert.equal(res.status, 400);
    assertNoStore(res);
    assert.equal(((await res.json()) as Json).error, "invalid_request");
    assert.equal(t.core.exchanges.length, before);
  });

  it("refuses a non-form body (415) and a repeated parameter (400), as invalid_request", async () => {
    const json = await fetch(`${t.url}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic("ogc_app", "right") },
      body: JSON.stringify({ grant_type: "authorization_code", code: "good" }),
    });
    assert.equal(json.status, 415);
    assert.equal(((await json.json()) as Json).error, "invalid_request");
    const repeated = await token(`${grant}&code=other`, { authorization: basic("ogc_app", "right") });
    assert.equal(repeated.status, 400);
    const body = (await repeated.json()) as Json;
    assert.equal(body.error, "invalid_request");
    assert.match(body.error_description, /code/);
    const large = await token(`${grant}&pad=${"x".repeat(20_000)}`, { authorization: basic("ogc_app", "right") });
    assert.equal(large.status, 413);
  });

  it("answers invalid_client with 401 and WWW-Authenticate: Basic (wrong secret, no credentials, malformed Basic)", async () => {
    const wrong = await token(grant, { authorization: basic("ogc_app", "wrong") });
    assert.equal(wrong.status, 401);
    assertNoStore(wrong);
    assert.match(wrong.headers.get("www-authenticate")!, /^Basic realm="http:\/\/127\.0\.0\.1:\d+", error="invalid_client"/);
    assert.deepEqual(Object.keys((await wrong.json()) as Json).sort(), ["error", "error_description"]);
    const none = await token(grant);
    assert.equal(none.status, 401);
    assert.equal(((await none.json()) as Json).error, "invalid_client");
    const malformed = await token(grant, { authorization: "Basic !!!" });
    assert.equal(malformed.status, 401);
    assert.equal(((await malformed.json()) as Json).error, "invalid_client");
  });

  it("passes core's invalid_grant and unsupported_grant_type through as 400", async () => {
    const badCode = await token(grant.replace("code=good", "code=used"), { authorization: basic("ogc_app", "right") });
    assert.equal(badCode.status, 400);
    assert.deepEqual((await badCode.json()) as Json, { error: "invalid_grant", error_description: "the code is not valid" });
    const badGrant = await token("grant_type=password&username=a", { authorization: basic("ogc_app", "right") });
    assert.equal(badGrant.status, 400);
    assert.equal(((await badGrant.json()) as Json).error, "unsupported_grant_type");
  });

  it("answers an unexpected failure with a bare 500 server_error (nothing leaks)", async () => {
    t.core.failNextExchange = true;
    const res = await token(grant, { authorization: basic("ogc_app", "right") });
    assert.equal(res.status, 500);
    assertNoStore(res);
    assert.deepEqual((await res.json()) as Json, { error: "server_error" });
  });

  it("answers 405 with Allow for GET", async () => {
    const res = await fetch(`${t.url}/oauth2/token`);
    assert.equal(res.status, 405);
    assert.equal(res.headers.get("allow"), "POST");
  });
});

describe("game issuer: userinfo", () => {
  let t: FakeIssuer;
  before(async () => {
    t = await startFakeIssuer();
  });
  after(async () => {
    await t?.close();
  });

  it("returns the claims for a Bearer token (GET and POST, header or form)", async () => {
    const get = await fetch(`${t.url}/oauth2/userinfo`, { headers: { authorization: "Bearer good-token" } });
    assert.equal(get.status, 200);
    assert.equal(get.headers.get("cache-control"), "no-store");
    assert.deepEqual((await get.json()) as Json, {
      sub: "sub-1",
      preferred_username: "Steve",
      game: "minecraft",
      game_account_name: "Steve",
      game_account_id: "uuid-1",
      organization_id: "org-1",
      verified_by_server_id: "srv-1",
    });
    const post = await fetch(`${t.url}/oauth2/userinfo`, { method: "POST", headers: { authorization: "Bearer good-token" } });
    assert.equal(post.status, 200);
    const formPost = await fetch(`${t.url}/oauth2/userinfo`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "access_token=good-token",
    });
    assert.equal(formPost.status, 200);
  });

  it('answers 401 with WWW-Authenticate: Bearer error="invalid_token" for a bad token, and a bare challenge without one', async () => {
    const bad = await fetch(`${t.url}/oauth2/userinfo`, { headers: { authorization: "Bearer nope" } });
    assert.equal(bad.status, 401);
    assert.match(bad.headers.get("www-authenticate")!, /^Bearer realm="[^"]+", error="invalid_token", error_description="the access token is not valid"$/);
    assert.equal(((await bad.json()) as Json).error, "invalid_token");
    const none = await fetch(`${t.url}/oauth2/userinfo`);
    assert.equal(none.status, 401);
    assert.match(none.headers.get("www-authenticate")!, /^Bearer realm="[^"]+"$/);
  });

  it("refuses a token sent twice (header and body) as invalid_request", async () => {
    const res = await fetch(`${t.url}/oauth2/userinfo`, {
      method: "POST",
      headers: { authorization: "Bearer good-token", "content-type": "application/x-www-form-urlencoded" },
      body: "access_token=good-token",
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as Json).error, "invalid_request");
  });
});
