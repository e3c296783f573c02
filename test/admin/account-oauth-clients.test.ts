import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { toJsonString } from "@bufbuild/protobuf";
import {
  AdminService,
  GetAccountOAuthClientResponseSchema,
  ListAccountOAuthClientsResponseSchema,
  type AccountOAuthClient,
} from "../../gen/outpost/admin/v1/admin_service_pb.js";
import type { TestCore } from "../support/core.ts";
import type { Account } from "../support/fixtures.ts";
import { rejectsWith } from "../support/errors.ts";
import { callback, startAdminFixture } from "./account-oauth-clients-fixture.ts";

const sha256 = (value: string) => createHash("sha256").update(value, "utf8").digest("hex");

/** A client's life as a platform admin leads it: created, listed, changed, rotated, deleted. Refusals: account-oauth-clients-guards.test.ts. */
describe("admin: Account OAuth clients", () => {
  let t: TestCore;
  let root: Account;
  let user: Account;
  const admin = (who: Account) => t.client(AdminService, { session: who.token });
  const sql = async (query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(query, params);
  const activity = (targetId: string) => sql(`select * from activity_events where target_id = ? order by created_at, action`, [targetId]);

  before(async () => {
    ({ t, root, user } = await startAdminFixture());
  });
  after(async () => {
    await t?.close();
  });

  describe("create, list, get", () => {
    let created: AccountOAuthClient;
    let secret: string;

    it("lets a platform admin create a client: oac_ id, oas_ secret in this answer only, URIs normalized", async () => {
      const res = await admin(root).createAccountOAuthClient({
        name: "Wiki",
        redirectUris: ["HTTPS://Wiki.Example.com:443/oauth/callback", "http://localhost:3000/cb"],
      });
      created = res.client!;
      secret = res.clientSecret;
      assert.match(res.clientId, /^oac_[0-9A-Za-z]{24}$/);
      assert.equal(created.clientId, res.clientId);
      assert.match(secret, /^oas_[0-9A-Za-z]{40}$/);
      assert.equal(created.clientSecretPrefix, secret.slice(0, 12));
      assert.equal(created.name, "Wiki");
      assert.deepEqual(created.redirectUris, ["https://wiki.example.com/oauth/callback", "http://localhost:3000/cb"]);
      assert.equal(created.skipConsent, false);
      assert.equal(created.disabled, false);
      assert.ok(created.createdAt);
    });

    it("stores only the secret's SHA-256 and who created it", async () => {
      const rows = await sql(`select * from oauth_provider_clients where client_id = ?`, [created.clientId]);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].secret_hash, sha256(secret));
      assert.notEqual(rows[0].secret_hash, secret);
      assert.equal(rows[0].secret_prefix, secret.slice(0, 12));
      assert.equal(rows[0].created_by_user_id, root.userId);
      assert.equal(JSON.stringify(rows).includes(secret), false);
    });

    it("records a platform-level activity event, without the secret", async () => {
      const events = await activity(created.clientId);
      assert.equal(events.length, 1);
      const [event] = events;
      assert.equal(event.action, "oauth_provider_client.created");
      assert.equal(event.target_type, "oauth_provider_client");
      assert.equal(event.organization_id, null);
      assert.equal(event.actor_user_id, root.userId);
      assert.equal(event.details.name, "Wiki");
      assert.equal(event.details.redirectUris, "https://wiki.example.com/oauth/callback http://localhost:3000/cb");
      assert.equal(event.details.secretPrefix, secret.slice(0, 12));
      assert.equal(JSON.stringify(event).includes(secret.slice(12)), false);
    });

    it("lists and gets the client, never with the secret", async () => {
      const list = await admin(root).listAccountOAuthClients({});
      assert.deepEqual(list.clients, [created]);
      assert.equal(toJsonString(ListAccountOAuthClientsResponseSchema, list).includes(secret.slice(12)), false);
      const got = await admin(root).getAccountOAuthClient({ clientId: created.clientId });
      assert.deepEqual(got.client, created);
      assert.equal(toJsonString(GetAccountOAuthClientResponseSchema, got).includes(secret.slice(12)), false);
    });

    it("takes skipConsent and disabled at creation", async () => {
      const res = await admin(root).createAccountOAuthClient({ name: "Intranet", redirectUris: [callback], skipConsent: true, disabled: true });
      assert.equal(res.client?.skipConsent, true);
      assert.equal(res.client?.disabled, true);
      const { client } = await admin(root).getAccountOAuthClient({ clientId: res.clientId });
      assert.deepEqual(client, res.client);
    });

    it("lists newest first", async () => {
      const ids: string[] = [];
      for (const name of ["First", "Second", "Third"]) {
        ids.push((await admin(root).createAccountOAuthClient({ name, redirectUris: [callback] })).clientId);
      }
      // Distinct times, out of creation order: the order must come from createdAt.
      const times = ["2030-01-01T00:00:02Z", "2030-01-01T00:00:03Z", "2030-01-01T00:00:01Z"];
      for (const [i, id] of ids.entries()) await sql(`update oauth_provider_clients set created_at = ? where client_id = ?`, [times[i], id]);
      const { clients } = await admin(root).listAccountOAuthClients({});
      assert.deepEqual(
        clients.slice(0, 3).map((c) => c.name),
        ["Second", "First", "Third"],
      );
      assert.equal(clients.length, 5);
    });
  });

  describe("update, rotate, delete", () => {
    let clientId: string;
    let original: AccountOAuthClient;

    before(async () => {
      const res = await admin(root).createAccountOAuthClient({ name: "Forum", redirectUris: [callback] });
      clientId = res.clientId;
      original = res.client!;
    });

    it("changes only the fields present", async () => {
      const renamed = (await admin(root).updateAccountOAuthClient({ clientId, name: "Forum 2" })).client!;
      assert.deepEqual(renamed, { ...original, name: "Forum 2" });

      const uris = (
        await admin(root).updateAccountOAuthClient({
          clientId,
          redirectUris: { uris: ["HTTPS://Forum.example.com:443/new/", "http://localhost:8080/cb"] },
        })
      ).client!;
      assert.deepEqual(uris, { ...renamed, redirectUris: ["https://forum.example.com/new/", "http://localhost:8080/cb"] });

      const skipped = (await admin(root).updateAccountOAuthClient({ clientId, skipConsent: true })).client!;
      assert.deepEqual(skipped, { ...uris, skipConsent: true });
      assert.deepEqual((await admin(root).getAccountOAuthClient({ clientId })).client, skipped);

      const events = (await activity(clientId)).filter((e) => e.action === "oauth_provider_client.updated");
      assert.deepEqual(events.map((e) => e.details.changed).sort(), ["name", "redirectUris", "skipConsent"]);
      const rename = events.find((e) => e.details.changed === "name")!;
      assert.equal(rename.details.previousName, "Forum");
      assert.equal(rename.details.name, "Forum 2");
      assert.ok(events.every((e) => e.organization_id === null && e.actor_user_id === root.userId));
    });

    it("records nothing for an update that changes nothing", async () => {
      const before = (await activity(clientId)).length;
      const { client } = await admin(root).updateAccountOAuthClient({ clientId, name: "Forum 2", skipConsent: true, disabled: false });
      assert.equal(client?.name, "Forum 2");
      assert.equal((await activity(clientId)).length, before);
    });

    it("disables and enables a client, each recorded", async () => {
      const disabled = (await admin(root).updateAccountOAuthClient({ clientId, disabled: true })).client!;
      assert.equal(disabled.disabled, true);
      assert.equal((await admin(root).getAccountOAuthClient({ clientId })).client?.disabled, true);
      const enabled = (await admin(root).updateAccountOAuthClient({ clientId, disabled: false })).client!;
      assert.equal(enabled.disabled, false);
      const actions = (await activity(clientId)).map((e) => e.action);
      const toggles = actions.filter((a) => a !== "oauth_provider_client.grants_revoked");
      assert.deepEqual(toggles.slice(-2), ["oauth_provider_client.disabled", "oauth_provider_client.enabled"]);
      // Each toggle also ends the client's grants (see test/account-oauth/refresh-tokens.test.ts).
      assert.equal(actions.filter((a) => a === "oauth_provider_client.grants_revoked").length, 2);
    });

    it("rotates the secret: a new one, its prefix shown, only its hash stored", async () => {
      const [{ secret_hash: oldHash, secret_prefix: oldPrefix }] = await sql(`select * from oauth_provider_clients where client_id = ?`, [clientId]);
      const rotated = await admin(root).rotateAccountOAuthClientSecret({ clientId });
      assert.equal(rotated.clientId, clientId);
      assert.match(rotated.clientSecret, /^oas_[0-9A-Za-z]{40}$/);
      const [row] = await sql(`select * from oauth_provider_clients where client_id = ?`, [clientId]);
      assert.equal(row.secret_hash, sha256(rotated.clientSecret));
      assert.notEqual(row.secret_hash, oldHash);
      assert.notEqual(row.secret_prefix, oldPrefix);
      assert.equal(row.secret_prefix, rotated.clientSecret.slice(0, 12));
      const { client } = await admin(root).getAccountOAuthClient({ clientId });
      assert.equal(client?.clientSecretPrefix, rotated.clientSecret.slice(0, 12));
      const again = await admin(root).rotateAccountOAuthClientSecret({ clientId });
      assert.notEqual(again.clientSecret, rotated.clientSecret);
      const events = (await activity(clientId)).filter((e) => e.action === "oauth_provider_client.secret_rotated");
      assert.equal(events.length, 2);
      assert.equal(JSON.stringify(events).includes(again.clientSecret.slice(12)), false);
    });

    it("deletes the client with its consents; then it is not found", async () => {
      const [{ id }] = await sql(`select id from oauth_provider_clients where client_id = ?`, [clientId]);
      await sql(`insert into account_consents (id, user_id, oauth_provider_client_id, scopes, created_at, updated_at) values (?, ?, ?, ?::jsonb, now(), now())`, [
        randomUUID(),
        user.userId,
        id,
        JSON.stringify(["openid"]),
      ]);
      await admin(root).deleteAccountOAuthClient({ clientId });
      await rejectsWith(admin(root).getAccountOAuthClient({ clientId }), Code.NotFound, "not_found");
      assert.equal((await sql(`select count(*)::int as n from account_consents where oauth_provider_client_id = ?`, [id]))[0].n, 0);
      assert.equal(
        (await admin(root).listAccountOAuthClients({})).clients.some((c) => c.clientId === clientId),
        false,
      );
      const events = await activity(clientId);
      assert.equal(events.at(-1)!.action, "oauth_provider_client.deleted");
      assert.equal(events.at(-1)!.details.name, "Forum 2");
    });

    it("answers not_found for an unknown client id, and invalid_argument for a malformed one", async () => {
      const unknown = `oac_${"x".repeat(24)}`;
      await rejectsWith(admin(root).getAccountOAuthClient({ clientId: unknown }), Code.NotFound, "not_found");
      await rejectsWith(admin(root).updateAccountOAuthClient({ clientId: unknown, name: "X" }), Code.NotFound, "not_found");
      await rejectsWith(admin(root).rotateAccountOAuthClientSecret({ clientId: unknown }), Code.NotFound, "not_found");
      await rejectsWith(admin(root).deleteAccountOAuthClient({ clientId: unknown }), Code.NotFound, "not_found");
      await rejectsWith(admin(root).deleteAccountOAuthClient({ clientId }), Code.NotFound, "not_found");
      await rejectsWith(admin(root).getAccountOAuthClient({ clientId: `ogc_${"x".repeat(24)}` }), Code.InvalidArgument);
    });
  });
});
