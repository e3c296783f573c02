import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** The same procedures through the HTTP API, as a script drives them. */
describe("http api: admin's Account OAuth clients", () => {
  let t: TestOutpost;
  let adminKey: string;
  let userKey: string;

  const api = async (method: "GET" | "POST", path: string, options: { key?: string; body?: unknown } = {}): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = {};
    if (options.key) headers["x-api-key"] = options.key;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  async function apiKeyFor(email: string): Promise<string> {
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://localhost:3000" },
      body: JSON.stringify({ email, password: "a long password", name: email.split("@")[0] }),
    });
    assert.ok(signUp.ok, await signUp.clone().text());
    const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie, origin: "http://localhost:3000" },
      body: JSON.stringify({ name: "script", expiresInDays: 30 }),
    });
    return ((await created.json()) as Json).key;
  }

  before(async () => {
    t = await startTestOutpost();
    adminKey = await apiKeyFor("root@example.com");
    userKey = await apiKeyFor("user@example.com");
    await t.outpost.runtime.orm.em.fork().getConnection().execute(`update users set platform_admin = true where email = 'root@example.com'`);
  });
  after(async () => {
    await t?.close();
  });

  let clientId: string;

  it("admin/createAccountOAuthClient → {clientId, clientSecret, client}", async () => {
    const res = await api("POST", "admin/createAccountOAuthClient", {
      key: adminKey,
      body: { name: "Wiki", redirectUris: ["HTTPS://Wiki.Example.com:443/cb/"], skipConsent: true },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { client, clientSecret } = res.body;
    clientId = res.body.clientId;
    assert.match(clientId, /^oac_[0-9A-Za-z]{24}$/);
    assert.match(clientSecret, /^oas_[0-9A-Za-z]{40}$/);
    assert.deepEqual(
      { ...client, createdAt: typeof client.createdAt },
      {
        clientId,
        name: "Wiki",
        redirectUris: ["https://wiki.example.com/cb/"],
        skipConsent: true,
        disabled: false,
        createdAt: "string",
        clientSecretPrefix: clientSecret.slice(0, 12),
        allowedScopes: ["openid", "profile", "email"],
        tokenEndpointAuthMethod: "client_secret_basic_or_post",
        requirePkce: false,
        uri: "",
        postLogoutRedirectUris: [],
        idTokenSignedResponseAlg: "RS256",
      },
    );
    const list = await api("GET", "admin/listAccountOAuthClients", { key: adminKey });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body, { clients: [client] });
    const got = await api("GET", `admin/getAccountOAuthClient?clientId=${clientId}`, { key: adminKey });
    assert.deepEqual(got.body, { client });
    assert.equal(JSON.stringify([list.body, got.body]).includes(clientSecret), false);
  });

  it("updateAccountOAuthClient takes a wrapped list; rotateAccountOAuthClientSecret → {clientId, clientSecret}", async () => {
    const updated = await api("POST", "admin/updateAccountOAuthClient", {
      key: adminKey,
      body: { clientId, redirectUris: { uris: ["https://wiki.example.com/cb/", "http://localhost:8080/cb"] }, disabled: true },
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual(updated.body.client.redirectUris, ["https://wiki.example.com/cb/", "http://localhost:8080/cb"]);
    assert.equal(updated.body.client.disabled, true);
    assert.equal(updated.body.client.name, "Wiki");
    const rotated = await api("POST", "admin/rotateAccountOAuthClientSecret", { key: adminKey, body: { clientId } });
    assert.equal(rotated.status, 200);
    assert.deepEqual(Object.keys(rotated.body).sort(), ["clientId", "clientSecret"]);
    assert.match(rotated.body.clientSecret, /^oas_/);
  });

  it("400 naming the bad redirect URI; 400 with details for 17 URIs", async () => {
    const bad = await api("POST", "admin/createAccountOAuthClient", {
      key: adminKey,
      body: { name: "Bad", redirectUris: ["https://ok.example.com/cb", "http://evil.example.com/cb"] },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, "invalid_argument");
    assert.match(bad.body.message, /redirectUris\[1\]: must use https/);
    const many = await api("POST", "admin/createAccountOAuthClient", {
      key: adminKey,
      body: { name: "Many", redirectUris: Array.from({ length: 17 }, (_, i) => `https://app.example.com/${i}`) },
    });
    assert.equal(many.status, 400);
    assert.deepEqual(
      many.body.details.map((d: Json) => [d.field, d.rule]),
      [["redirectUris", "repeated.max_items"]],
    );
  });

  it("403 for an API key of a user who is not a platform admin; 401 without a credential", async () => {
    const body = { name: "Mine", redirectUris: ["https://mine.example.com/cb"] };
    const denied = await api("POST", "admin/createAccountOAuthClient", { key: userKey, body });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.code, "permission_denied");
    assert.equal(denied.body.reason, "platform_admin_required");
    assert.equal((await api("GET", "admin/listAccountOAuthClients", { key: userKey })).status, 403);
    const anonymous = await api("POST", "admin/createAccountOAuthClient", { body });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.code, "unauthenticated");
  });

  it("deleteAccountOAuthClient → {}; then 404", async () => {
    const deleted = await api("POST", "admin/deleteAccountOAuthClient", { key: adminKey, body: { clientId } });
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, {});
    const gone = await api("GET", `admin/getAccountOAuthClient?clientId=${clientId}`, { key: adminKey });
    assert.equal(gone.status, 404);
    assert.equal(gone.body.code, "not_found");
  });

  it("documents the procedures in /api/http/openapi.json", async () => {
    const res = await fetch(`${t.baseUrl}/api/http/openapi.json`);
    assert.equal(res.status, 200);
    const doc = (await res.json()) as Json;
    assert.ok(doc.paths["/api/http/admin/createAccountOAuthClient"]?.post, "no POST /api/http/admin/createAccountOAuthClient");
    assert.ok(doc.paths["/api/http/admin/listAccountOAuthClients"]?.get);
  });
});
