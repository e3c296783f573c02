/**
 * Account OAuth clients' per-client options over real HTTP: set through the admin router (and
 * checked by its validation), then obeyed by the issuer as openid-client meets them — allowed
 * scopes, the token endpoint auth method (a public client with PKCE S256), require_pkce, disabled.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as oidc from "openid-client";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { adminApiKey, apiPost, FormBrowser, registerApp } from "../support/account-oauth.ts";

const redirectUri = "http://127.0.0.1:9/callback";
const password = "a long user password";

describe("Account OAuth client options", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let issuer: string;
  let adminKey: string;
  let browser: FormBrowser;

  before(async () => {
    t = await startListeningOutpost();
    issuer = `${t.baseUrl}/api/auth`;
    adminKey = await adminApiKey(t);
    browser = new FormBrowser(t.baseUrl);
    await browser.signUp("options@example.com", password, "Option User");
  });
  after(() => t?.close());

  const discover = (clientId: string, auth: oidc.ClientAuth) => oidc.discovery(new URL(issuer), clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });

  /** Visits an authorization URL as the signed-in user, allowing consent; returns where the browser came back. */
  async function authorize(url: URL): Promise<URL> {
    const visited = await browser.visit(url);
    return visited.left ?? (await browser.decide(visited, "allow")).left!;
  }

  async function createClient(body: Record<string, unknown>) {
    return fetch(`${t.baseUrl}/api/http/admin/createAccountOAuthClient`, {
      method: "POST",
      headers: { "x-api-key": adminKey, "content-type": "application/json" },
      body: JSON.stringify({ name: "Options", redirectUris: [redirectUri], ...body }),
    });
  }

  it("creates and updates the options through the admin router, recording each change", async () => {
    const created = await apiPost(t, adminKey, "admin/createAccountOAuthClient", { name: "Defaults", redirectUris: [redirectUri] });
    assert.deepEqual(created.client.allowedScopes, ["openid", "profile", "email"]);
    assert.equal(created.client.tokenEndpointAuthMethod, "client_secret_basic_or_post");
    assert.equal(created.client.requirePkce, false);
    assert.equal(created.client.uri, "");
    const updated = await apiPost(t, adminKey, "admin/updateAccountOAuthClient", {
      clientId: created.clientId,
      allowedScopes: { scopes: ["offline_access", "openid"] },
      tokenEndpointAuthMethod: "client_secret_post",
      requirePkce: true,
      uri: "https://wiki.example/",
    });
    assert.deepEqual(updated.client.allowedScopes, ["openid", "offline_access"], "in the issuer's order");
    assert.equal(updated.client.tokenEndpointAuthMethod, "client_secret_post");
    assert.equal(updated.client.requirePkce, true);
    assert.equal(updated.client.uri, "https://wiki.example/");
    const listed = await fetch(`${t.baseUrl}/api/http/activity/listPlatformActivity`, { headers: { "x-api-key": adminKey } });
    const events = ((await listed.json()) as { events: Array<{ action: string; targetId: string; details: Record<string, string> }> }).events;
    const change = events.find((e) => e.action === "oauth_provider_client.updated" && e.targetId === created.clientId)!;
    assert.equal(change.details.changed, "allowedScopes tokenEndpointAuthMethod requirePkce uri");
    assert.equal(change.details.tokenEndpointAuthMethod, "client_secret_post");
  });

  it("refuses bad options with 400 and the field named", async () => {
    for (const [body, field] of [
      [{ allowedScopes: { scopes: ["profile"] } }, "allowedScopes"],
      [{ allowedScopes: { scopes: ["openid", "admin"] } }, "allowed_scopes"],
      [{ allowedScopes: { scopes: ["openid", "openid"] } }, "allowed_scopes"],
      [{ tokenEndpointAuthMethod: "private_key_jwt" }, "tokenEndpointAuthMethod"],
      [{ uri: "javascript:alert(1)" }, "uri"],
      [{ uri: "http://wiki.example/" }, "uri"],
    ] as const) {
      const res = await createClient(body);
      const json = (await res.json()) as { message: string };
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(json.message, new RegExp(field, "i"), JSON.stringify(body));
    }
  });

  it("a public client (auth method none) signs in with PKCE S256 and no secret; without PKCE it is refused", async () => {
    const created = await apiPost(t, adminKey, "admin/createAccountOAuthClient", { name: "SPA", redirectUris: [redirectUri], tokenEndpointAuthMethod: "none" });
    assert.equal(created.clientSecret, "", "a public client is shown no secret");
    const config = await discover(created.clientId, oidc.None());
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: "openid",
      state: "s1",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    const tokens = await oidc.authorizationCodeGrant(config, await authorize(url), { pkceCodeVerifier: verifier, expectedState: "s1" });
    assert.ok(tokens.access_token);
    assert.deepEqual(await oidc.tokenRevocation(config, tokens.access_token), undefined, "a public client may revoke its tokens");

    const bare = await authorize(oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: "openid", state: "s2" }));
    assert.equal(bare.searchParams.get("error"), "invalid_request");
    assert.match(bare.searchParams.get("error_description")!, /PKCE/);
    const plain = await authorize(
      oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: "openid",
        state: "s3",
        code_challenge: verifier,
        code_challenge_method: "plain",
      }),
    );
    assert.equal(plain.searchParams.get("error"), "invalid_request", "plain PKCE is not enough");
    // Introspection is for confidential clients only.
    const introspect = await fetch(`${issuer}/oauth2/introspect`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: created.clientId, token: tokens.access_token }),
    });
    assert.equal(introspect.status, 401);
  });

  it("a confidential client is refused without its secret, and by a method it is not registered for", async () => {
    const basicOnly = await registerApp(t, adminKey, [redirectUri], { tokenEndpointAuthMethod: "client_secret_basic" });
    const verifier = oidc.randomPKCECodeVerifier();
    const basicConfig = await discover(basicOnly.clientId, oidc.ClientSecretBasic(basicOnly.clientSecret));
    const url = oidc.buildAuthorizationUrl(basicConfig, {
      redirect_uri: redirectUri,
      scope: "openid",
      state: "s",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    const back = await authorize(url);
    const forms: Array<Record<string, string>> = [{ client_id: basicOnly.clientId }, { client_id: basicOnly.clientId, client_secret: basicOnly.clientSecret }];
    for (const form of forms) {
      const res = await fetch(`${issuer}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: back.searchParams.get("code")!,
          redirect_uri: redirectUri,
          code_verifier: verifier,
          ...form,
        }),
      });
      assert.equal(res.status, 401, JSON.stringify(Object.keys(form)));
      assert.equal(((await res.json()) as { error: string }).error, "invalid_client");
    }
    // The code was not touched by a failed client authentication: the right method still works.
    const tokens = await oidc.authorizationCodeGrant(basicConfig, back, { pkceCodeVerifier: verifier, expectedState: "s" });
    assert.ok(tokens.access_token);
  });

  it("require_pkce refuses a request without S256; disallowed scopes are invalid_scope", async () => {
    const strict = await registerApp(t, adminKey, [redirectUri], { requirePkce: true, allowedScopes: { scopes: ["openid"] } });
    const config = await discover(strict.clientId, oidc.ClientSecretBasic(strict.clientSecret));
    const bare = await authorize(oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: "openid", state: "s" }));
    assert.equal(bare.searchParams.get("error"), "invalid_request");
    const email = await authorize(oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: "openid email", state: "s" }));
    assert.equal(email.searchParams.get("error"), "invalid_scope");
    assert.equal(email.searchParams.get("state"), "s");
  });

  for (const alg of ["ES256", "EdDSA"] as const) {
    it(`a client registered for ${alg} ID tokens signs in with openid-client checking the signature against the JWKS, also after a refresh`, async () => {
      const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as {
        id_token_signing_alg_values_supported: string[];
        jwks_uri: string;
      };
      assert.deepEqual(discovery.id_token_signing_alg_values_supported, ["RS256", "ES256", "EdDSA"]);
      const app = await registerApp(t, adminKey, [redirectUri], { idTokenSignedResponseAlg: alg, allowedScopes: { scopes: ["openid", "offline_access"] } });
      const shown = await fetch(`${t.baseUrl}/api/http/admin/getAccountOAuthClient?clientId=${app.clientId}`, { headers: { "x-api-key": adminKey } });
      assert.equal(((await shown.json()) as { client: { idTokenSignedResponseAlg: string } }).client.idTokenSignedResponseAlg, alg);
      const config = await oidc.discovery(new URL(issuer), app.clientId, { id_token_signed_response_alg: alg }, oidc.ClientSecretBasic(app.clientSecret), {
        execute: [oidc.allowInsecureRequests, oidc.enableNonRepudiationChecks],
      });
      const verifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: "openid offline_access",
        prompt: "consent",
        nonce: "n-1",
        state: "s",
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
      });
      const tokens = await oidc.authorizationCodeGrant(config, await authorize(url), { pkceCodeVerifier: verifier, expectedState: "s", expectedNonce: "n-1" });
      const header = JSON.parse(Buffer.from(tokens.id_token!.split(".")[0], "base64url").toString()) as { alg: string; kid: string };
      assert.equal(header.alg, alg);
      const jwks = (await (await fetch(discovery.jwks_uri)).json()) as { keys: Array<{ kid: string; alg: string }> };
      assert.equal(jwks.keys.find((key) => key.kid === header.kid)?.alg, alg, "signed with a published key of that algorithm");
      const hash = alg === "EdDSA" ? "sha512" : "sha256";
      const digest = createHash(hash).update(tokens.access_token).digest();
      assert.equal(tokens.claims()!.at_hash, digest.subarray(0, digest.length / 2).toString("base64url"));
      const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      assert.equal(JSON.parse(Buffer.from(refreshed.id_token!.split(".")[0], "base64url").toString()).alg, alg);
      // A relying party that registered RS256 refuses it: the token's algorithm is the registration's.
      const expectingRsa = await oidc.discovery(new URL(issuer), app.clientId, { id_token_signed_response_alg: "RS256" }, oidc.ClientSecretBasic(app.clientSecret), {
        execute: [oidc.allowInsecureRequests],
      });
      await assert.rejects(oidc.refreshTokenGrant(expectingRsa, refreshed.refresh_token!), (error: Error) => /unexpected JWT "alg"/.test(String(error.cause)));
    });
  }

  it("moves a client to another algorithm and back, refusing one Outpost has no keys for", async () => {
    const app = await registerApp(t, adminKey, [redirectUri]);
    const updated = await apiPost(t, adminKey, "admin/updateAccountOAuthClient", { clientId: app.clientId, idTokenSignedResponseAlg: "EdDSA" });
    assert.equal(updated.client.idTokenSignedResponseAlg, "EdDSA");
    for (const alg of ["HS256", "none", "RS512", "eddsa"]) {
      const res = await createClient({ idTokenSignedResponseAlg: alg });
      assert.equal(res.status, 400, alg);
      assert.match(((await res.json()) as { message: string }).message, /id_token_signed_response_alg: must be in list \[RS256, ES256, EdDSA\]/);
    }
  });

  it("a disabled client is refused at authorize and token, and its access tokens at userinfo", async () => {
    const app = await registerApp(t, adminKey, [redirectUri]);
    const config = await discover(app.clientId, oidc.ClientSecretBasic(app.clientSecret));
    const flow = async () => {
      const verifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: "openid",
        state: "s",
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
      });
      return { back: await authorize(url), verifier, url };
    };
    const first = await flow();
    const tokens = await oidc.authorizationCodeGrant(config, first.back, { pkceCodeVerifier: first.verifier, expectedState: "s" });
    const pending = await flow();
    await apiPost(t, adminKey, "admin/updateAccountOAuthClient", { clientId: app.clientId, disabled: true });
    const info = await fetch(`${issuer}/oauth2/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(info.status, 401);
    await assert.rejects(
      oidc.authorizationCodeGrant(config, pending.back, { pkceCodeVerifier: pending.verifier, expectedState: "s" }),
      (e: { status?: number }) => e.status === 401,
    );
    const page = await browser.request(pending.url);
    assert.equal(page.status, 400);
    assert.match(await page.text(), /unauthorized_client/);
  });
});
