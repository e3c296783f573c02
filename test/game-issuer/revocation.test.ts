/**
 * The Game OAuth issuer's revocation (RFC 7009) and introspection (RFC 7662) endpoints over real
 * HTTP, with openid-client as the app, the real agent signing a player in, and a second client
 * of the same organization that must learn nothing about the first one's tokens.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as oidc from "openid-client";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { signInInGame } from "../support/agent.ts";
import { openHostedPage, seedGameOAuth, type Seeded } from "../support/game-oauth.ts";

describe("game issuer: token revocation and introspection", function () {
  this.timeout(60_000);
  const redirectUri = "http://127.0.0.1:9/callback";
  let t: TestOutpost;
  let seeded: Seeded;
  let config: oidc.Configuration;

  before(async () => {
    t = await startTestOutpost();
    seeded = await seedGameOAuth(t.baseUrl, [redirectUri]);
    config = await oidc.discovery(new URL(t.gameIssuerUrl), seeded.clientId, undefined, oidc.ClientSecretBasic(seeded.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
  });
  after(async () => {
    await t?.close();
  });

  async function accessToken(): Promise<string> {
    const url = new URL(
      `${t.gameIssuerUrl}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: seeded.clientId, redirect_uri: redirectUri, scope: "openid profile", state: "s" })}`,
    );
    const hosted = await openHostedPage(url);
    await hosted.opened;
    const played = await signInInGame(t.baseUrl, seeded.agentKey, { name: "Steve", uuid: randomUUID() }, hosted.command);
    assert.equal(played.code, 0, played.stdout + played.stderr);
    const tokens = await oidc.authorizationCodeGrant(config, await hosted.redirect, { expectedState: "s" });
    return tokens.access_token;
  }
  const userinfo = (token: string) => fetch(`${t.gameIssuerUrl}/oauth2/userinfo`, { headers: { authorization: `Bearer ${token}` } });

  it("lists both endpoints in discovery", async () => {
    const doc = (await (await fetch(`${t.gameIssuerUrl}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    assert.equal(doc.revocation_endpoint, `${t.gameIssuerUrl}/oauth2/revoke`);
    assert.equal(doc.introspection_endpoint, `${t.gameIssuerUrl}/oauth2/introspect`);
    assert.deepEqual(doc.grant_types_supported, ["authorization_code"]);
    assert.deepEqual(doc.token_endpoint_auth_methods_supported, ["client_secret_basic", "client_secret_post"]);
  });

  it("introspects an access token for its client, revokes it (userinfo stops), and answers {active:false} after", async () => {
    const token = await accessToken();
    const active = await oidc.tokenIntrospection(config, token);
    assert.equal(active.active, true);
    assert.equal(active.client_id, seeded.clientId);
    assert.equal(active.scope, "openid profile");
    assert.match(active.sub!, /^gp_/);
    assert.equal(active.iss, t.gameIssuerUrl);

    const other = (await seeded.api("POST", "organizations/createGameOAuthClient", {
      organizationSlug: "acme",
      name: "Other",
      redirectUris: [redirectUri],
      verifierPolicy: "any_server",
    })) as { client: { clientId: string }; clientSecret: string };
    const otherConfig = await oidc.discovery(new URL(t.gameIssuerUrl), other.client.clientId, undefined, oidc.ClientSecretPost(other.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    assert.deepEqual(await oidc.tokenIntrospection(otherConfig, token), { active: false }, "another client learns nothing");
    await oidc.tokenRevocation(otherConfig, token);
    assert.equal((await userinfo(token)).status, 200, "nor can another client revoke it");

    await oidc.tokenRevocation(config, token);
    assert.equal((await userinfo(token)).status, 401);
    assert.deepEqual(await oidc.tokenIntrospection(config, token), { active: false });
    await oidc.tokenRevocation(config, token);
    await oidc.tokenRevocation(config, "ogt_never_issued");
  });

  it("refuses unauthenticated or wrongly authenticated calls with 401, and a missing token with 400", async () => {
    const post = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${t.gameIssuerUrl}/oauth2/${path}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams(body),
      });
    for (const path of ["introspect", "revoke"]) {
      const none = await post(path, { token: "ogt_x" });
      assert.equal(none.status, 401, path);
      const publicStyle = await post(path, { token: "ogt_x", client_id: seeded.clientId });
      assert.equal(publicStyle.status, 401, `${path}: game clients are confidential`);
      assert.equal(((await publicStyle.json()) as { error: string }).error, "invalid_client");
    }
    const missing = await post("introspect", {}, { authorization: `Basic ${Buffer.from(`${seeded.clientId}:${seeded.clientSecret}`).toString("base64")}` });
    assert.equal(missing.status, 400);
    assert.equal(((await missing.json()) as { error: string }).error, "invalid_request");
  });
});
