import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { AdminService } from "../../gen/outpost/admin/v1/admin_service_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import type { Account } from "../support/fixtures.ts";
import { rejectsWith } from "../support/errors.ts";
import { callback, startAdminFixture } from "./account-oauth-clients-fixture.ts";

/** What Account OAuth clients refuse: bad redirect URIs, and anyone but a platform admin. Their life: account-oauth-clients.test.ts. */
describe("admin: Account OAuth clients' redirect URIs and who may manage them", () => {
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

  describe("redirect URIs", () => {
    it("names each bad URI by its index: fragment, http off loopback, relative, custom scheme, userinfo", async () => {
      const error = await rejectsWith(
        admin(root).createAccountOAuthClient({
          name: "Bad",
          redirectUris: [
            callback,
            "https://app.example.com/cb#frag",
            "http://app.example.com/cb",
            "/relative/callback",
            "myapp://cb",
            "https://user:pw@app.example.com/cb",
          ],
        }),
        Code.InvalidArgument,
        "invalid_argument",
      );
      assert.match(error.rawMessage, /redirectUris\[1\]: must not contain a fragment/);
      assert.match(error.rawMessage, /redirectUris\[2\]: must use https \(or a loopback host\)/);
      assert.match(error.rawMessage, /redirectUris\[3\]: must be an absolute URL/);
      assert.match(error.rawMessage, /redirectUris\[4\]: must use https \(custom schemes/);
      assert.match(error.rawMessage, /redirectUris\[5\]: must not contain a user name or password/);
      assert.doesNotMatch(error.rawMessage, /redirectUris\[0\]/);
      assert.equal((await sql(`select count(*)::int as n from oauth_provider_clients where name = 'Bad'`))[0].n, 0);
    });

    it("refuses duplicates once normalized, and allows http on loopback hosts", async () => {
      const error = await rejectsWith(
        admin(root).createAccountOAuthClient({ name: "Dup", redirectUris: [callback, "HTTPS://APP.example.com:443/callback"] }),
        Code.InvalidArgument,
      );
      assert.match(error.rawMessage, /redirectUris\[1\]: is the same as redirectUris\[0\]/);
      const loopback = ["http://localhost:8080/cb", "http://127.0.0.1/cb", "http://[::1]:9000/cb"];
      const res = await admin(root).createAccountOAuthClient({ name: "Local", redirectUris: loopback });
      assert.deepEqual(res.client?.redirectUris, loopback);
    });

    it("takes 1 to 16 URIs, refusing 0 and 17 with a field violation on redirect_uris", async () => {
      const many = Array.from({ length: 17 }, (_, i) => `https://app.example.com/cb/${i}`);
      for (const redirectUris of [many, []]) {
        const error = await rejectsWith(admin(root).createAccountOAuthClient({ name: "Many", redirectUris }), Code.InvalidArgument);
        const [violations] = error.findDetails(ViolationsSchema);
        assert.deepEqual(
          violations?.violations.map((v) => v.field?.elements.map((e) => e.fieldName).join(".")),
          ["redirect_uris"],
        );
      }
      const res = await admin(root).createAccountOAuthClient({ name: "Sixteen", redirectUris: many.slice(0, 16) });
      assert.equal(res.client?.redirectUris.length, 16);
    });

    it("applies the same rules to an update's new list, and keeps the old one when refused", async () => {
      const { clientId, client } = await admin(root).createAccountOAuthClient({ name: "Keep", redirectUris: [callback] });
      const error = await rejectsWith(
        admin(root).updateAccountOAuthClient({ clientId, redirectUris: { uris: ["https://ok.example.com/cb", "http://evil.example.com/cb"] } }),
        Code.InvalidArgument,
      );
      assert.match(error.rawMessage, /redirectUris\[1\]: must use https/);
      const many = Array.from({ length: 17 }, (_, i) => `https://app.example.com/cb/${i}`);
      await rejectsWith(admin(root).updateAccountOAuthClient({ clientId, redirectUris: { uris: many } }), Code.InvalidArgument);
      assert.deepEqual((await admin(root).getAccountOAuthClient({ clientId })).client, client);
    });

    it("allows http on any host when the service allows insecure redirect URIs", async () => {
      const dev = await startTestCore({ ...testConfig, allowInsecureRedirectUris: true });
      try {
        const identity = dev.client(IdentityService);
        await identity.createUser({ email: "dev@example.com", password: "dev password 123", name: "Dev", platformAdmin: true });
        const { sessionToken } = await identity.signIn({ email: "dev@example.com", password: "dev password 123" });
        const devAdmin = dev.client(AdminService, { session: sessionToken });
        const res = await devAdmin.createAccountOAuthClient({ name: "Dev", redirectUris: ["http://dev.example.test:8080/cb"] });
        assert.deepEqual(res.client?.redirectUris, ["http://dev.example.test:8080/cb"]);
        await rejectsWith(devAdmin.createAccountOAuthClient({ name: "Dev", redirectUris: ["https://a.example.com/cb#x"] }), Code.InvalidArgument);
      } finally {
        await dev.close();
      }
    });
  });

  describe("who may", () => {
    let clientId: string;
    before(async () => {
      clientId = (await admin(root).createAccountOAuthClient({ name: "Guarded", redirectUris: [callback] })).clientId;
    });

    it("refuses a normal user every procedure with platform_admin_required, by session or API key", async () => {
      const { key } = await t.client(AuthService, { session: user.token }).createApiKey({ name: "script" });
      for (const client of [admin(user), t.client(AdminService, { apiKey: key })]) {
        const denied = [Code.PermissionDenied, "platform_admin_required"] as const;
        await rejectsWith(client.createAccountOAuthClient({ name: "Mine", redirectUris: [callback] }), ...denied);
        await rejectsWith(client.listAccountOAuthClients({}), ...denied);
        await rejectsWith(client.getAccountOAuthClient({ clientId }), ...denied);
        await rejectsWith(client.updateAccountOAuthClient({ clientId, name: "Hacked" }), ...denied);
        await rejectsWith(client.rotateAccountOAuthClientSecret({ clientId }), ...denied);
        await rejectsWith(client.deleteAccountOAuthClient({ clientId }), ...denied);
        // An unknown client gets the same answer: a non-admin learns nothing about which exist.
        await rejectsWith(client.getAccountOAuthClient({ clientId: `oac_${"y".repeat(24)}` }), ...denied);
      }
      const { client } = await admin(root).getAccountOAuthClient({ clientId });
      assert.equal(client?.name, "Guarded");
      assert.equal((await sql(`select count(*)::int as n from oauth_provider_clients where name = 'Mine'`))[0].n, 0);
    });

    it("refuses an anonymous caller", async () => {
      const anonymous = t.client(AdminService);
      await rejectsWith(anonymous.createAccountOAuthClient({ name: "Anon", redirectUris: [callback] }), Code.Unauthenticated);
      await rejectsWith(anonymous.listAccountOAuthClients({}), Code.Unauthenticated);
      await rejectsWith(anonymous.rotateAccountOAuthClientSecret({ clientId }), Code.Unauthenticated);
    });

    it("lets a platform admin act through an API key too", async () => {
      const { key } = await t.client(AuthService, { session: root.token }).createApiKey({ name: "ops" });
      const res = await t.client(AdminService, { apiKey: key }).createAccountOAuthClient({ name: "Scripted", redirectUris: [callback] });
      const [event] = await activity(res.clientId);
      assert.equal(event.actor_user_id, root.userId);
      assert.ok(event.actor_api_key_id);
    });
  });
});
