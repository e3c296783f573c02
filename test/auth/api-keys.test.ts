import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { toJsonString } from "@bufbuild/protobuf";
import { AuthService, CredentialKind, ListApiKeysResponseSchema } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { apiKeyHeader, sessionHeader } from "../../contract/credentials.ts";
import { startTestCore, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

const dayMs = 86_400_000;
const sha256 = (value: string) => createHash("sha256").update(value, "utf8").digest("hex");

describe("auth: user API keys", () => {
  let t: TestCore;
  let ada: { token: string; userId: string };
  before(async () => {
    t = await startTestCore();
    ada = await t.signUp("ada@example.com");
  });
  after(async () => {
    await t?.close();
  });

  const auth = (credential: { session: string } | { apiKey: string }) => t.client(AuthService, credential);

  it("creates keys with each fixed expiry choice, expiring that many days from now", async () => {
    for (const days of [7, 30, 90, 365]) {
      const before = t.clock.now().getTime();
      const res = await auth({ session: ada.token }).createApiKey({ name: `key ${days}d`, expiry: { case: "expiresInDays", value: days } });
      assert.match(res.key, /^opk_[0-9A-Za-z]{40}$/);
      assert.equal(res.apiKey?.name, `key ${days}d`);
      const expiresAt = timestampDate(res.apiKey!.expiresAt!).getTime();
      assert.ok(expiresAt >= before + days * dayMs && expiresAt <= t.clock.now().getTime() + days * dayMs, `expiry for ${days} days`);
    }
  });

  it("refuses an expiry in days that is not one of the fixed choices", async () => {
    for (const days of [0, 1, 14, 366, -7]) {
      const error = await rejectsWith(auth({ session: ada.token }).createApiKey({ name: "odd", expiry: { case: "expiresInDays", value: days } }), Code.InvalidArgument);
      assert.match(error.rawMessage, /expires_in_days/);
    }
  });

  it("accepts an expiry date in the future and refuses one in the past or beyond a year", async () => {
    const future = new Date(Date.now() + 10 * dayMs);
    const ok = await auth({ session: ada.token }).createApiKey({
      name: "dated",
      expiry: { case: "expiresAt", value: timestampFromDate(future) },
    });
    assert.equal(timestampDate(ok.apiKey!.expiresAt!).getTime(), future.getTime());
    const past = await rejectsWith(
      auth({ session: ada.token }).createApiKey({ name: "past", expiry: { case: "expiresAt", value: timestampFromDate(new Date(Date.now() - 60_000)) } }),
      Code.InvalidArgument,
    );
    assert.match(past.rawMessage, /expires_at/);
    await rejectsWith(
      auth({ session: ada.token }).createApiKey({ name: "far", expiry: { case: "expiresAt", value: timestampFromDate(new Date(Date.now() + 400 * dayMs)) } }),
      Code.InvalidArgument,
    );
  });

  it("creates a key that never expires when no expiry is given", async () => {
    const res = await auth({ session: ada.token }).createApiKey({ name: "forever" });
    assert.equal(res.apiKey?.expiresAt, undefined);
    const session = await auth({ apiKey: res.key }).getSession({});
    assert.equal(session.expiresAt, undefined);
  });

  it("validates the key's name", async () => {
    const error = await rejectsWith(auth({ session: ada.token }).createApiKey({ name: " padded " }), Code.InvalidArgument);
    assert.match(error.rawMessage, /name/);
    await rejectsWith(auth({ session: ada.token }).createApiKey({ name: "" }), Code.InvalidArgument);
  });

  it("authenticates with the key, as its user, and says the credential is an API key", async () => {
    const { key, apiKey } = await auth({ session: ada.token }).createApiKey({ name: "script", expiry: { case: "expiresInDays", value: 30 } });
    const session = await auth({ apiKey: key }).getSession({});
    assert.equal(session.user?.id, ada.userId);
    assert.equal(session.user?.email, "ada@example.com");
    assert.equal(session.credential, CredentialKind.API_KEY);
    assert.equal(session.credentialId, apiKey!.id);
    assert.deepEqual(session.expiresAt, apiKey!.expiresAt);
    const viaSession = await auth({ session: ada.token }).getSession({});
    assert.equal(viaSession.credential, CredentialKind.SESSION);
    // The key acts with the user's normal access: it sees the user's organizations.
    await t.client(OrganizationsService, { session: ada.token }).createOrganization({ name: "Ada's", slug: "adas-org" });
    const orgs = await t.client(OrganizationsService, { apiKey: key }).listOrganizations({});
    assert.deepEqual(
      orgs.organizations.map((o) => o.slug),
      ["adas-org"],
    );
  });

  it("lists the caller's keys with their prefix and never their secret", async () => {
    const { key, apiKey } = await auth({ session: ada.token }).createApiKey({ name: "listed" });
    const list = await auth({ session: ada.token }).listApiKeys({});
    const { apiKeys } = list;
    const listed = apiKeys.find((k) => k.id === apiKey!.id);
    assert.ok(listed, "the new key is listed");
    assert.equal(listed.name, "listed");
    assert.equal(listed.prefix, key.slice(0, 12));
    assert.match(listed.prefix, /^opk_/);
    assert.ok(listed.prefix.length < key.length);
    const serialized = toJsonString(ListApiKeysResponseSchema, list);
    assert.ok(!serialized.includes(key), "the secret never appears in the list");
    assert.ok(!serialized.includes(key.slice(12)), "no part of the secret beyond the prefix appears");
    // Newest first.
    assert.equal(apiKeys[0].id, apiKey!.id);
  });

  it("lists only the caller's own keys", async () => {
    const bob = await t.signUp("bob-list@example.com");
    const mine = await auth({ session: bob.token }).createApiKey({ name: "bob's" });
    const { apiKeys } = await auth({ session: bob.token }).listApiKeys({});
    assert.deepEqual(
      apiKeys.map((k) => k.id),
      [mine.apiKey!.id],
    );
    const adas = await auth({ session: ada.token }).listApiKeys({});
    assert.ok(!adas.apiKeys.some((k) => k.id === mine.apiKey!.id));
  });

  it("revokes a key: it stops working at once and leaves the list", async () => {
    const { key, apiKey } = await auth({ session: ada.token }).createApiKey({ name: "to revoke" });
    await auth({ apiKey: key }).getSession({});
    await auth({ session: ada.token }).revokeApiKey({ apiKeyId: apiKey!.id });
    await rejectsWith(auth({ apiKey: key }).getSession({}), Code.Unauthenticated, "unauthenticated");
    await rejectsWith(t.client(OrganizationsService, { apiKey: key }).listOrganizations({}), Code.Unauthenticated);
    const { apiKeys } = await auth({ session: ada.token }).listApiKeys({});
    assert.ok(!apiKeys.some((k) => k.id === apiKey!.id));
    // A revoked key cannot be revoked again.
    await rejectsWith(auth({ session: ada.token }).revokeApiKey({ apiKeyId: apiKey!.id }), Code.NotFound);
  });

  it("lets a key revoke itself", async () => {
    const { key, apiKey } = await auth({ session: ada.token }).createApiKey({ name: "self" });
    await auth({ apiKey: key }).revokeApiKey({ apiKeyId: apiKey!.id });
    await rejectsWith(auth({ apiKey: key }).getSession({}), Code.Unauthenticated);
  });

  it("refuses to revoke another user's key, as if it did not exist, and leaves it working", async () => {
    const eve = await t.signUp("eve@example.com");
    const { key, apiKey } = await auth({ session: ada.token }).createApiKey({ name: "not eve's" });
    const foreign = await rejectsWith(auth({ session: eve.token }).revokeApiKey({ apiKeyId: apiKey!.id }), Code.NotFound, "not_found");
    const unknown = await rejectsWith(auth({ session: eve.token }).revokeApiKey({ apiKeyId: "00000000-0000-4000-8000-000000000000" }), Code.NotFound, "not_found");
    assert.equal(foreign.rawMessage, unknown.rawMessage);
    const session = await auth({ apiKey: key }).getSession({});
    assert.equal(session.user?.id, ada.userId);
  });

  it("refuses a request that carries both a session and an API key", async () => {
    const { key } = await auth({ session: ada.token }).createApiKey({ name: "both" });
    const client = t.client(AuthService, { headers: { [sessionHeader]: ada.token, [apiKeyHeader]: key } });
    await rejectsWith(client.getSession({}), Code.InvalidArgument, "ambiguous_credential");
  });

  it("refuses a request without a credential", async () => {
    await rejectsWith(t.client(AuthService).getSession({}), Code.Unauthenticated, "unauthenticated");
    await rejectsWith(t.client(AuthService).listApiKeys({}), Code.Unauthenticated, "unauthenticated");
    await rejectsWith(t.client(AuthService).createApiKey({ name: "anonymous" }), Code.Unauthenticated, "unauthenticated");
  });

  it("refuses an unknown key, a session token and an agent key in the API key header", async () => {
    const agentLike = "opa_" + "A".repeat(40);
    await rejectsWith(auth({ apiKey: agentLike }).getSession({}), Code.Unauthenticated, "unauthenticated");
    await rejectsWith(auth({ apiKey: "opk_" + "B".repeat(40) }).getSession({}), Code.Unauthenticated, "unauthenticated");
    await rejectsWith(auth({ apiKey: ada.token }).getSession({}), Code.Unauthenticated, "unauthenticated");
    await rejectsWith(auth({ apiKey: "garbage" }).getSession({}), Code.Unauthenticated, "unauthenticated");
  });

  it("stores a key only as the SHA-256 hex of its secret", async () => {
    const { key, apiKey } = await auth({ session: ada.token }).createApiKey({ name: "stored" });
    const rows = await t.orm.em.fork().getConnection().execute(`select * from api_keys where id = ?`, [apiKey!.id]);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].secret_hash, sha256(key));
    assert.match(rows[0].secret_hash, /^[0-9a-f]{64}$/);
    assert.equal(rows[0].prefix, key.slice(0, 12));
    for (const value of Object.values(rows[0])) {
      if (typeof value === "string") assert.ok(!value.includes(key.slice(12)), "no column holds the secret");
    }
  });

  it("rejects a key once it has expired", async () => {
    const { key } = await auth({ session: ada.token }).createApiKey({ name: "week", expiry: { case: "expiresInDays", value: 7 } });
    t.clock.advance(7 * dayMs - 60_000);
    const session = await auth({ apiKey: key }).getSession({});
    assert.equal(session.user?.id, ada.userId);
    t.clock.advance(2 * 60_000);
    await rejectsWith(auth({ apiKey: key }).getSession({}), Code.Unauthenticated, "unauthenticated");
  });
});
