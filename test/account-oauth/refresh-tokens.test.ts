/**
 * Account OAuth refresh tokens over real HTTP with openid-client as the app: offline_access only
 * where the client allows it, rotation on every use, reuse revoking the whole family (RFC 9700
 * §4.14), concurrent use, binding to the client, consent revocation, scope narrowing; and
 * revocation (RFC 7009) and introspection (RFC 7662) of refresh and access tokens.
 */
import assert from "node:assert/strict";
import * as oidc from "openid-client";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { adminApiKey, apiPost, FormBrowser, registerApp, type RegisteredApp } from "../support/account-oauth.ts";
import { deleteExpiredFlowRows } from "../../core/oauth/cleanup.ts";

const redirectUri = "http://127.0.0.1:9/callback";
const password = "a long user password";
const offline = { allowedScopes: { scopes: ["openid", "profile", "email", "offline_access"] } };

describe("Account OAuth refresh tokens, revocation and introspection", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let issuer: string;
  let adminKey: string;
  let app: RegisteredApp;
  let config: oidc.Configuration;

  const discover = (client: RegisteredApp, auth = oidc.ClientSecretBasic(client.clientSecret)) =>
    oidc.discovery(new URL(issuer), client.clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });

  before(async () => {
    t = await startListeningOutpost();
    issuer = `${t.baseUrl}/api/auth`;
    adminKey = await adminApiKey(t);
    app = await registerApp(t, adminKey, [redirectUri], offline);
    config = await discover(app);
  });
  after(() => t?.close());

  /** A signed-up user who went through consent once for `cfg`'s client; returns the first token response. */
  async function signIn(email: string, cfg = config, scope = "openid profile offline_access") {
    const browser = new FormBrowser(t.baseUrl);
    await browser.signUp(email, password, "Refresh User");
    return { browser, tokens: await flow(browser, cfg, scope) };
  }

  async function flow(browser: FormBrowser, cfg: oidc.Configuration, scope: string) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(cfg, {
      redirect_uri: redirectUri,
      scope,
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    const visited = await browser.visit(url);
    const back = visited.left ?? (await browser.decide(visited, "allow")).left!;
    return oidc.authorizationCodeGrant(cfg, back, { pkceCodeVerifier: verifier, expectedState: state });
  }

  const userinfoStatus = async (accessToken: string) => (await fetch(`${issuer}/oauth2/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } })).status;

  const invalidGrant = (e: { error?: string }) => e.error === "invalid_grant";

  async function events(action: string) {
    const res = await fetch(`${t.baseUrl}/api/http/activity/listPlatformActivity`, { headers: { "x-api-key": adminKey } });
    const all = ((await res.json()) as { events: Array<{ action: string; targetId: string; details: Record<string, string> }> }).events;
    return all.filter((e) => e.action === action);
  }

  it("refreshes twice, keeping auth_time and sub; replaying the first refresh token revokes the whole family", async () => {
    const { tokens } = await signIn("rotate@example.com");
    assert.match(tokens.refresh_token!, /^ort_/);
    assert.equal(tokens.scope, "openid profile offline_access");
    const first = tokens.claims()!;
    const second = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.notEqual(second.refresh_token, tokens.refresh_token, "rotated");
    assert.equal(second.claims()!.auth_time, first.auth_time);
    assert.equal(second.claims()!.sub, first.sub);
    assert.equal(second.claims()!.name, "Refresh User");
    const third = await oidc.refreshTokenGrant(config, second.refresh_token!);
    assert.equal(await userinfoStatus(third.access_token), 200);

    await assert.rejects(oidc.refreshTokenGrant(config, tokens.refresh_token!), invalidGrant, "the first token was used");
    await assert.rejects(oidc.refreshTokenGrant(config, third.refresh_token!), invalidGrant, "the latest token of the family is revoked too");
    assert.equal(await userinfoStatus(third.access_token), 401, "and the family's access tokens");
    assert.equal(await userinfoStatus(tokens.access_token), 401);
    const reused = (await events("account_oauth.refresh_token_reused")).filter((e) => e.details.userId === first.sub);
    assert.equal(reused.length, 1);
    assert.equal(reused[0].targetId, app.clientId);
  });

  it("of two concurrent uses of one refresh token exactly one succeeds, and the family is then revoked", async () => {
    const { tokens } = await signIn("race@example.com");
    const results = await Promise.allSettled([0, 1].map(() => oidc.refreshTokenGrant(config, tokens.refresh_token!)));
    const won = results.filter((r) => r.status === "fulfilled");
    assert.equal(won.length, 1, JSON.stringify(results.map((r) => r.status)));
    const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    assert.equal((lost.reason as { error?: string }).error, "invalid_grant");
    const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof oidc.refreshTokenGrant>>>).value;
    await assert.rejects(oidc.refreshTokenGrant(config, winner.refresh_token!), invalidGrant, "a second use is a reuse: the family is revoked");
  });

  it("is bound to its client: another client presenting it gets invalid_grant, and the grant ends as leaked", async () => {
    const leaked = await signIn("leaked@example.com");
    const other = await registerApp(t, adminKey, [redirectUri], offline);
    await assert.rejects(oidc.refreshTokenGrant(await discover(other), leaked.tokens.refresh_token!), invalidGrant);
    await assert.rejects(oidc.refreshTokenGrant(config, leaked.tokens.refresh_token!), invalidGrant, "the family is revoked");
    assert.ok((await events("account_oauth.refresh_token_misused")).some((e) => e.details.presentedBy === other.clientId));
  });

  it("is refused with a wrong secret (401 invalid_client), and the token stays good", async () => {
    const { tokens } = await signIn("bound@example.com");
    const wrongSecret = await discover({ clientId: app.clientId, clientSecret: "oas_wrong" });
    // openid-client reports the 401's WWW-Authenticate challenge (Basic, error="invalid_client").
    await assert.rejects(
      oidc.refreshTokenGrant(wrongSecret, tokens.refresh_token!),
      (e: { status?: number; cause?: Array<{ scheme: string; parameters: { error?: string } }> }) =>
        e.status === 401 && e.cause?.[0]?.scheme === "basic" && e.cause[0].parameters.error === "invalid_client",
    );
    assert.ok((await oidc.refreshTokenGrant(config, tokens.refresh_token!)).refresh_token);
  });

  it("narrows the scope on request, never widens it", async () => {
    const { tokens } = await signIn("narrow@example.com");
    await assert.rejects(oidc.refreshTokenGrant(config, tokens.refresh_token!, { scope: "openid email" }), (e: { error?: string }) => e.error === "invalid_scope");
    await assert.rejects(oidc.refreshTokenGrant(config, tokens.refresh_token!, { scope: "openid admin" }), (e: { error?: string }) => e.error === "invalid_scope");
    const narrowed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, { scope: "openid" });
    assert.equal(narrowed.scope, "openid");
    assert.equal(narrowed.claims()!.name, undefined);
    const info = (await (await fetch(`${issuer}/oauth2/userinfo`, { headers: { authorization: `Bearer ${narrowed.access_token}` } })).json()) as Record<string, unknown>;
    assert.equal(info.name, undefined);
    const full = await oidc.refreshTokenGrant(config, narrowed.refresh_token!);
    assert.equal(full.scope, "openid profile offline_access", "the grant keeps its scopes");
  });

  it("names each refusal by the first check the token failed, over HTTP", async () => {
    const client = await registerApp(t, adminKey, [redirectUri], offline);
    const refresh = async (who: RegisteredApp, refreshToken: string, scope?: string) => {
      const res = await fetch(`${issuer}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${Buffer.from(`${who.clientId}:${who.clientSecret}`).toString("base64")}` },
        body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken, ...(scope && { scope }) }),
      });
      const body = (await res.json()) as { error?: string; error_description?: string; refresh_token?: string };
      return res.ok ? { refreshed: body.refresh_token ?? "" } : { status: res.status, error: body.error, description: body.error_description };
    };
    const refused = (error: string, description: string) => ({ status: 400, error, description });
    const { tokens } = await signIn("named-refusals@example.com", await discover(client));
    const first = tokens.refresh_token!;

    assert.deepEqual(await refresh(client, first, "openid email"), refused("invalid_scope", "a refresh may only narrow the scope of the grant"));
    await sql(`update account_refresh_tokens set expires_at = now() - interval '1 second' where token_hash = encode(sha256('${first}'::bytea), 'hex')`);
    assert.deepEqual(await refresh(client, first), refused("invalid_grant", "the refresh token has expired"));
    await sql(`update account_refresh_tokens set expires_at = now() + interval '1 day' where token_hash = encode(sha256('${first}'::bytea), 'hex')`);
    await apiPost(t, adminKey, "admin/updateAccountOAuthClient", { clientId: client.clientId, allowedScopes: { scopes: ["openid", "profile"] } });
    assert.deepEqual(await refresh(client, first), refused("invalid_grant", "this client may no longer use refresh tokens"));
    await apiPost(t, adminKey, "admin/updateAccountOAuthClient", { clientId: client.clientId, ...offline });

    const second = (await refresh(client, first)).refreshed;
    assert.match(second ?? "", /^ort_/);
    assert.deepEqual(await refresh(client, first), refused("invalid_grant", "the refresh token was already used; every token of its grant is revoked"));
    assert.deepEqual(await refresh(client, second!), refused("invalid_grant", "the refresh token is invalid, expired or revoked"), "its family is revoked");
    assert.deepEqual(await refresh(client, "ort_never_issued"), refused("invalid_grant", "the refresh token is invalid, expired or revoked"));

    const { tokens: other } = await signIn("named-refusals-other@example.com", await discover(client));
    assert.deepEqual(await refresh(app, other.refresh_token!), refused("invalid_grant", "the refresh token was issued to another client"));
    assert.deepEqual(
      await refresh(client, other.refresh_token!),
      refused("invalid_grant", "the refresh token is invalid, expired or revoked"),
      "a leaked token's family ends",
    );
  });

  it("ends with the consent: a revoked consent stops refreshing", async () => {
    const { browser, tokens } = await signIn("consent-ends@example.com");
    const res = await fetch(`${t.baseUrl}/api/http/auth/revokeConsent`, {
      method: "POST",
      headers: { cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join("; "), "content-type": "application/json", origin: t.baseUrl },
      body: JSON.stringify({ clientId: app.clientId }),
    });
    assert.equal(res.status, 200);
    await assert.rejects(oidc.refreshTokenGrant(config, tokens.refresh_token!), invalidGrant);
  });

  it("is issued only with offline_access, and only to a client allowed it", async () => {
    const { tokens } = await signIn("no-offline@example.com", config, "openid profile");
    assert.equal(tokens.refresh_token, undefined);
    const plain = await registerApp(t, adminKey, [redirectUri]);
    const plainConfig = await discover(plain);
    const browser = new FormBrowser(t.baseUrl);
    await browser.signUp("plain@example.com", password, "Plain");
    const url = oidc.buildAuthorizationUrl(plainConfig, { redirect_uri: redirectUri, scope: "openid offline_access", state: "s" });
    const back = (await browser.visit(url)).left!;
    assert.equal(back.searchParams.get("error"), "invalid_scope", "a scope the client is not allowed is refused");
  });

  it("outlives the cleanup of expired codes and access tokens: the family's code stays while its refresh tokens do", async () => {
    const { tokens } = await signIn("cleanup@example.com");
    // Two hours on: the code (90 s) and the access token (15 min) are long expired and deleted.
    await deleteExpiredFlowRows(t.outpost.runtime.deps, new Date(Date.now() + 2 * 3600_000));
    assert.equal(await userinfoStatus(tokens.access_token), 401);
    const next = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal(await userinfoStatus(next.access_token), 200);
    // Forty days on, the whole family has expired and goes.
    await deleteExpiredFlowRows(t.outpost.runtime.deps, new Date(Date.now() + 40 * 24 * 3600_000));
    const [left] = await sql(`select count(*)::int as n from account_refresh_tokens r join users u on u.id = r.user_id where u.email = 'cleanup@example.com'`);
    assert.equal(left.n, 0);
  });

  it("keeps its idle lifetime: a refresh token unused for 30 days is refused", async () => {
    const { tokens } = await signIn("idle-refresh@example.com");
    const fresh = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    const [row] = await sql(`select extract(epoch from expires_at - created_at)::int as lifetime from account_refresh_tokens order by created_at desc limit 1`);
    assert.equal(row.lifetime, 30 * 24 * 3600, "30 days from this rotation");
    await sql(`update account_refresh_tokens set expires_at = now() - interval '1 second' where used_at is null`);
    await assert.rejects(oidc.refreshTokenGrant(config, fresh.refresh_token!), invalidGrant);
  });

  it("ends the client's grants when it becomes public (none): a refresh token issued under its secret is refused", async () => {
    const client = await registerApp(t, adminKey, [redirectUri], offline);
    const confidential = await discover(client);
    const { tokens } = await signIn("to-public@example.com", confidential);
    // Another confidential method keeps them.
    await apiPost(t, adminKey, "admin/updateAccountOAuthClient", { clientId: client.clientId, tokenEndpointAuthMethod: "client_secret_post" });
    const kept = await oidc.refreshTokenGrant(await discover(client, oidc.ClientSecretPost(client.clientSecret)), tokens.refresh_token!);
    await apiPost(t, adminKey, "admin/updateAccountOAuthClient", { clientId: client.clientId, tokenEndpointAuthMethod: "none", requirePkce: true });
    await assert.rejects(oidc.refreshTokenGrant(await discover(client, oidc.None()), kept.refresh_token!), invalidGrant);
    assert.equal(await userinfoStatus(kept.access_token), 401, "its access tokens end too");
    const [ended] = (await events("oauth_provider_client.grants_revoked")).filter((e) => e.targetId === client.clientId);
    assert.deepEqual([ended.details.reason, ended.details.grants], ["auth_method_none", "1"]);
  });

  it("ends the client's grants when it is disabled, so enabling it again does not bring them back", async () => {
    const client = await registerApp(t, adminKey, [redirectUri], offline);
    const clientConfig = await discover(client);
    const { tokens } = await signIn("disabled-client@example.com", clientConfig);
    await apiPost(t, adminKey, "admin/updateAccountOAuthClient", { clientId: client.clientId, disabled: true });
    await apiPost(t, adminKey, "admin/updateAccountOAuthClient", { clientId: client.clientId, disabled: false });
    await assert.rejects(oidc.refreshTokenGrant(clientConfig, tokens.refresh_token!), invalidGrant);
    assert.equal(await userinfoStatus(tokens.access_token), 401);
    const ended = (await events("oauth_provider_client.grants_revoked")).filter((e) => e.targetId === client.clientId).map((e) => [e.details.reason, e.details.grants]);
    assert.deepEqual(ended, [
      ["enabled", "0"],
      ["disabled", "1"],
    ]);
  });

  describe("revocation and introspection", () => {
    it("introspects this client's tokens, answers {active:false} for revoked, unknown and others' tokens", async () => {
      const { tokens } = await signIn("introspect@example.com");
      const access = await oidc.tokenIntrospection(config, tokens.access_token);
      assert.equal(access.active, true);
      assert.equal(access.client_id, app.clientId);
      assert.equal(access.sub, tokens.claims()!.sub);
      assert.equal(access.scope, "openid profile offline_access");
      assert.equal(access.token_type, "Bearer");
      assert.equal(access.iss, issuer);
      assert.equal((access.exp as number) - (access.iat as number), 900);
      assert.equal((await oidc.tokenIntrospection(config, tokens.refresh_token!)).active, true);
      assert.deepEqual(await oidc.tokenIntrospection(config, "oat_unknown"), { active: false });
      const other = await registerApp(t, adminKey, [redirectUri], offline);
      assert.deepEqual(await oidc.tokenIntrospection(await discover(other), tokens.access_token), { active: false }, "another client learns nothing");

      await oidc.tokenRevocation(config, tokens.access_token);
      assert.deepEqual(await oidc.tokenIntrospection(config, tokens.access_token), { active: false });
      assert.equal(await userinfoStatus(tokens.access_token), 401, "a revoked access token stops at userinfo");
      assert.equal((await oidc.tokenIntrospection(config, tokens.refresh_token!)).active, true, "revoking the access token leaves the refresh token");

      await oidc.tokenRevocation(config, tokens.refresh_token!, { token_type_hint: "refresh_token" });
      assert.deepEqual(await oidc.tokenIntrospection(config, tokens.refresh_token!), { active: false });
      await assert.rejects(oidc.refreshTokenGrant(config, tokens.refresh_token!), invalidGrant);
      assert.ok((await events("account_oauth.refresh_token_revoked")).some((e) => e.details.userId === tokens.claims()!.sub));
      assert.ok((await events("account_oauth.access_token_revoked")).some((e) => e.details.userId === tokens.claims()!.sub));
    });

    it("revoking a refresh token revokes its family; an unknown token is still 200; an expired one is inactive", async () => {
      const { tokens } = await signIn("revoke-family@example.com");
      const next = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      await oidc.tokenRevocation(config, next.refresh_token!);
      assert.equal(await userinfoStatus(next.access_token), 401, "the family's access tokens end too");
      await oidc.tokenRevocation(config, "ort_never_issued");
      const { tokens: other } = await signIn("expired-introspect@example.com");
      await sql(`update account_access_tokens set expires_at = now() - interval '1 second' where token_hash = encode(sha256('${other.access_token}'::bytea), 'hex')`);
      assert.deepEqual(await oidc.tokenIntrospection(config, other.access_token), { active: false });
    });

    it("refuses unauthenticated introspection with 401 and bad requests with RFC errors, never 500", async () => {
      const post = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
        fetch(`${issuer}/oauth2/${path}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
          body: new URLSearchParams(body),
        });
      const basic = `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString("base64")}`;
      const unauthenticated = await post("introspect", { token: "oat_x" });
      assert.equal(unauthenticated.status, 401);
      assert.equal(((await unauthenticated.json()) as { error: string }).error, "invalid_client");
      const wrong = await post("introspect", { token: "oat_x" }, { authorization: `Basic ${Buffer.from(`${app.clientId}:oas_wrong`).toString("base64")}` });
      assert.equal(wrong.status, 401);
      assert.match(wrong.headers.get("www-authenticate")!, /^Basic /);
      const noToken = await post("revoke", {}, { authorization: basic });
      assert.equal(noToken.status, 400);
      assert.equal(((await noToken.json()) as { error: string }).error, "invalid_request");
      const repeated = await fetch(`${issuer}/oauth2/revoke`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic },
        body: "token=a&token=b",
      });
      assert.equal(repeated.status, 400);
      const json = await fetch(`${issuer}/oauth2/introspect`, { method: "POST", headers: { "content-type": "application/json", authorization: basic }, body: "{}" });
      assert.equal(json.status, 415);
      const huge = await post("introspect", { token: "x".repeat(5000) }, { authorization: basic });
      assert.equal(huge.status, 400, "a token past the contract's length is invalid_request, not a 500");
      assert.equal(((await huge.json()) as { error: string }).error, "invalid_request");
      const get = await fetch(`${issuer}/oauth2/revoke`);
      assert.equal(get.status, 405);
      const noGrant = await post("token", { grant_type: "refresh_token" }, { authorization: basic });
      assert.equal(noGrant.status, 400);
      assert.equal(((await noGrant.json()) as { error: string }).error, "invalid_request");
    });
  });

  async function sql(statement: string): Promise<Array<Record<string, unknown>>> {
    return t.outpost.runtime.orm.em.fork().getConnection().execute(statement);
  }
});
