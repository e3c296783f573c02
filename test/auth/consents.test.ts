import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { AdminService } from "../../gen/outpost/admin/v1/admin_service_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startTestCore, type TestCore } from "../support/core.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import type { Account } from "../support/fixtures.ts";
import { rejectsWith } from "../support/errors.ts";
import { onPostgresServer } from "../support/database.ts";
import pg from "pg";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

type Sql = (query: string, params?: unknown[]) => Promise<Json[]>;

/** A consent row as the consent flow would write it (that flow is not what these tests are about). */
async function insertConsent(sql: Sql, userId: string, clientId: string, scopes: string[], createdAt: string, updatedAt = createdAt) {
  const [client] = await sql(`select id from oauth_provider_clients where client_id = ?`, [clientId]);
  await sql(`insert into account_consents (id, user_id, oauth_provider_client_id, scopes, created_at, updated_at) values (?, ?, ?, ?::jsonb, ?, ?)`, [
    randomUUID(),
    userId,
    client.id,
    JSON.stringify(scopes),
    createdAt,
    updatedAt,
  ]);
}

describe("auth: Account OAuth consents", () => {
  let t: TestCore;
  let alice: Account;
  let bob: Account;
  let wiki: string;
  let forum: string;
  let unused: string;
  const auth = (who: Account) => t.client(AuthService, { session: who.token });
  const sql: Sql = async (query, params = []) => t.orm.em.fork().getConnection().execute(query, params);

  before(async () => {
    t = await startTestCore();
    const identity = t.client(IdentityService);
    await identity.createUser({ email: "root@example.com", password: "root password 123", name: "Root", platformAdmin: true });
    const { sessionToken } = await identity.signIn({ email: "root@example.com", password: "root password 123" });
    const admin = t.client(AdminService, { session: sessionToken });
    const register = async (name: string) => (await admin.createAccountOAuthClient({ name, redirectUris: [`https://${name.toLowerCase()}.example.com/cb`] })).clientId;
    wiki = await register("Wiki");
    forum = await register("Forum");
    unused = await register("Unused");
    alice = await t.signUp("alice@example.com");
    bob = await t.signUp("bob@example.com");
    await insertConsent(sql, alice.userId, wiki, ["openid", "profile"], "2030-01-01T00:00:00Z", "2030-01-03T00:00:00Z");
    await insertConsent(sql, alice.userId, forum, ["openid", "email", "profile"], "2030-01-02T00:00:00Z");
    await insertConsent(sql, bob.userId, wiki, ["openid"], "2030-01-05T00:00:00Z");
  });
  after(async () => {
    await t?.close();
  });

  it("lists only the caller's consents, newest updated first, with the app's name and scopes as stored", async () => {
    const { consents } = await auth(alice).listConsents({});
    assert.deepEqual(
      consents.map((c) => ({
        clientId: c.clientId,
        clientName: c.clientName,
        scopes: c.scopes,
        createdAt: timestampDate(c.createdAt!).toISOString(),
        updatedAt: timestampDate(c.updatedAt!).toISOString(),
      })),
      [
        { clientId: wiki, clientName: "Wiki", scopes: ["openid", "profile"], createdAt: "2030-01-01T00:00:00.000Z", updatedAt: "2030-01-03T00:00:00.000Z" },
        { clientId: forum, clientName: "Forum", scopes: ["openid", "email", "profile"], createdAt: "2030-01-02T00:00:00.000Z", updatedAt: "2030-01-02T00:00:00.000Z" },
      ],
    );
    const bobs = await auth(bob).listConsents({});
    assert.deepEqual(
      bobs.consents.map((c) => [c.clientId, c.scopes]),
      [[wiki, ["openid"]]],
    );
    const carol = await t.signUp("carol@example.com");
    assert.deepEqual((await auth(carol).listConsents({})).consents, []);
  });

  it("works with an API key too, and refuses an anonymous caller", async () => {
    const { key } = await auth(alice).createApiKey({ name: "script" });
    const { consents } = await t.client(AuthService, { apiKey: key }).listConsents({});
    assert.deepEqual(
      consents.map((c) => c.clientId),
      [wiki, forum],
    );
    await rejectsWith(t.client(AuthService).listConsents({}), Code.Unauthenticated);
    await rejectsWith(t.client(AuthService).revokeConsent({ clientId: wiki }), Code.Unauthenticated);
  });

  it("does not let another user revoke my consent: theirs is not_found", async () => {
    // Bob never consented to the forum: Alice's consent to it is not his to revoke.
    await rejectsWith(auth(bob).revokeConsent({ clientId: forum }), Code.NotFound, "not_found");
    assert.deepEqual(
      (await auth(alice).listConsents({})).consents.map((c) => c.clientId),
      [wiki, forum],
    );
  });

  it("revokes the caller's consent alone, records it, and a second revoke is not_found", async () => {
    await auth(alice).revokeConsent({ clientId: wiki });
    assert.deepEqual(
      (await auth(alice).listConsents({})).consents.map((c) => c.clientId),
      [forum],
    );
    // Bob's consent to the same app stays.
    assert.deepEqual(
      (await auth(bob).listConsents({})).consents.map((c) => c.clientId),
      [wiki],
    );
    await rejectsWith(auth(alice).revokeConsent({ clientId: wiki }), Code.NotFound, "not_found");

    const events = await sql(`select * from activity_events where action = 'account_consent.revoked'`);
    assert.equal(events.length, 1);
    const [event] = events;
    assert.equal(event.actor_user_id, alice.userId);
    assert.equal(event.organization_id, null);
    assert.equal(event.target_type, "account_consent");
    assert.equal(event.target_id, wiki);
    assert.deepEqual(event.details, { clientId: wiki, clientName: "Wiki", scopes: "openid profile" });
  });

  it("answers not_found for an app without a consent or an unknown app, invalid_argument for a malformed id", async () => {
    const none = await rejectsWith(auth(alice).revokeConsent({ clientId: unused }), Code.NotFound, "not_found");
    const unknown = await rejectsWith(auth(alice).revokeConsent({ clientId: `oac_${"x".repeat(24)}` }), Code.NotFound, "not_found");
    assert.equal(none.rawMessage, unknown.rawMessage);
    await rejectsWith(auth(alice).revokeConsent({ clientId: `ogc_${"x".repeat(24)}` }), Code.InvalidArgument);
    assert.equal((await sql(`select count(*)::int as n from activity_events where action = 'account_consent.revoked'`))[0].n, 1);
  });

  onPostgresServer(() => {
    it("revokes a token whose exchange commits while the revocation runs", async () => {
      // An exchange (one statement: consume the code, store the token) holds the code's row until
      // it commits; the revocation must wait for it and then revoke the token it stored.
      await insertConsent(sql, bob.userId, forum, ["openid"], "2030-01-06T00:00:00Z");
      const [client] = await sql(`select id from oauth_provider_clients where client_id = ?`, [forum]);
      const codeId = randomUUID();
      const tokenId = randomUUID();
      await sql(
        `insert into account_authorization_codes (id, code_hash, oauth_provider_client_id, user_id, redirect_uri, scopes, auth_time, expires_at, created_at)
         values (?, ?, ?, ?, 'https://forum.example.com/cb', '["openid"]'::jsonb, now(), now() + interval '90 seconds', now())`,
        [codeId, randomUUID().replace(/-/g, "").padEnd(64, "0"), client.id, bob.userId],
      );
      const exchange = new pg.Client({ connectionString: t.database.url });
      await exchange.connect();
      try {
        await exchange.query("begin");
        await exchange.query(`update account_authorization_codes set consumed_at = now() where id = $1 and consumed_at is null`, [codeId]);
        await exchange.query(
          `insert into account_access_tokens (id, token_hash, authorization_code_id, oauth_provider_client_id, user_id, scopes, expires_at, created_at)
           values ($1, $2, $3, $4, $5, '["openid"]'::jsonb, now() + interval '15 minutes', now())`,
          [tokenId, randomUUID().replace(/-/g, "").padEnd(64, "1"), codeId, client.id, bob.userId],
        );
        let revoked = false;
        const revocation = auth(bob)
          .revokeConsent({ clientId: forum })
          .then(() => (revoked = true));
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(revoked, false, "the revocation waits for the exchange holding the code");
        await exchange.query("commit");
        await revocation;
      } finally {
        await exchange.end();
      }
      const [token] = await sql(`select revoked_at from account_access_tokens where id = ?`, [tokenId]);
      assert.notEqual(token.revoked_at, null, "the token stored by the exchange is revoked");
    });
  });
});

/** The same procedures through the HTTP API. */
describe("http api: auth/listConsents and auth/revokeConsent", () => {
  let t: TestOutpost;
  let key: string;
  let clientId: string;
  const sql: Sql = async (query, params = []) => t.outpost.runtime.orm.em.fork().getConnection().execute(query, params);

  const api = async (method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = { "x-api-key": key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  before(async () => {
    t = await startTestOutpost();
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://localhost:3000" },
      body: JSON.stringify({ email: "alice@example.com", password: "a long password", name: "alice" }),
    });
    const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
    const userId = ((await signUp.json()) as Json).user.id;
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie, origin: "http://localhost:3000" },
      body: JSON.stringify({ name: "script", expiresInDays: 30 }),
    });
    key = ((await created.json()) as Json).key;
    // Alice is made a platform admin only to register the app, then the flag is taken away again.
    await sql(`update users set platform_admin = true where id = ?`, [userId]);
    const registered = await api("POST", "admin/createAccountOAuthClient", { name: "Wiki", redirectUris: ["https://wiki.example.com/cb"] });
    assert.equal(registered.status, 200, JSON.stringify(registered.body));
    clientId = registered.body.clientId;
    await sql(`update users set platform_admin = false where id = ?`, [userId]);
    await insertConsent(sql, userId, clientId, ["openid", "profile"], "2030-01-01T00:00:00Z");
  });
  after(async () => {
    await t?.close();
  });

  it("GET auth/listConsents → {consents:[{clientId, clientName, scopes, createdAt, updatedAt}]}", async () => {
    const res = await api("GET", "auth/listConsents");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, {
      consents: [{ clientId, clientName: "Wiki", scopes: ["openid", "profile"], createdAt: "2030-01-01T00:00:00Z", updatedAt: "2030-01-01T00:00:00Z" }],
    });
  });

  it("POST auth/revokeConsent → {}; again → 404", async () => {
    const revoked = await api("POST", "auth/revokeConsent", { clientId });
    assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
    assert.deepEqual(revoked.body, {});
    assert.deepEqual((await api("GET", "auth/listConsents")).body, { consents: [] });
    const again = await api("POST", "auth/revokeConsent", { clientId });
    assert.equal(again.status, 404);
    assert.equal(again.body.code, "not_found");
  });
});
