import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { toJsonString } from "@bufbuild/protobuf";
import { ActivityService, ListOrganizationActivityResponseSchema } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import {
  GetGameOAuthClientResponseSchema,
  ListGameOAuthClientsResponseSchema,
  OrganizationsService,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { VerifierPolicy, type GameOAuthClient } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

import { anyServer, callback, proOrganization as newProOrganization, sha256, startClientsSetting, type Account } from "./game-oauth-clients-fixture.ts";

/** Game OAuth clients: creating, listing and reading them, their redirect URIs, the plan's limit and the activity they leave. Their verifier policy and later changes: game-oauth-client-changes.test.ts. */
describe("organizations: Game OAuth clients", () => {
  let t: TestCore;
  let owner: Account;
  let admin: Account;
  let member: Account;
  let outsider: Account;
  let survival: string;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const servers = (who: Account) => t.client(ServersService, { session: who.token });
  const sql = async (query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(query, params);
  const proOrganization = () => newProOrganization(t, owner);

  before(async () => {
    ({ t, owner, admin, member, outsider, survival } = await startClientsSetting());
  });
  after(async () => {
    await t?.close();
  });

  describe("create, list, get", () => {
    let created: GameOAuthClient;
    let secret: string;

    it("lets an owner create a client; the secret is in this answer only, with its own prefix", async () => {
      const res = await orgs(owner).createGameOAuthClient({
        organizationSlug: "acme",
        name: "Forum",
        redirectUris: ["https://forum.example.com/oauth/callback", "http://localhost:3000/cb"],
        verifierPolicy: VerifierPolicy.SELECTED_SERVERS,
        allowedServerIds: [survival],
      });
      created = res.client!;
      secret = res.clientSecret;
      assert.match(created.clientId, /^ogc_[0-9A-Za-z]{24}$/);
      assert.match(secret, /^ogs_[0-9A-Za-z]{40}$/);
      assert.equal(created.clientSecretPrefix, secret.slice(0, 12));
      assert.equal(created.name, "Forum");
      assert.deepEqual(created.redirectUris, ["https://forum.example.com/oauth/callback", "http://localhost:3000/cb"]);
      assert.equal(created.verifierPolicy, VerifierPolicy.SELECTED_SERVERS);
      assert.deepEqual(created.allowedServerIds, [survival]);
      assert.equal(created.disabled, false);
      assert.ok(created.createdAt);
    });

    it("stores only the secret's SHA-256", async () => {
      const rows = await sql(`select * from game_oauth_clients where client_id = ?`, [created.clientId]);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].secret_hash, sha256(secret));
      assert.equal(JSON.stringify(rows).includes(secret), false);
    });

    it("lists and gets clients for owners and admins, never with the secret", async () => {
      for (const who of [owner, admin]) {
        const list = await orgs(who).listGameOAuthClients({ organizationSlug: "acme" });
        assert.deepEqual(
          list.clients.map((c) => c.clientId),
          [created.clientId],
        );
        assert.deepEqual(list.clients[0], created);
        assert.equal(toJsonString(ListGameOAuthClientsResponseSchema, list).includes(secret.slice(12)), false);
        const got = await orgs(who).getGameOAuthClient({ clientId: created.clientId });
        assert.deepEqual(got.client, created);
        assert.equal(toJsonString(GetGameOAuthClientResponseSchema, got).includes(secret.slice(12)), false);
      }
    });

    it("lets an admin create a client too", async () => {
      const res = await orgs(admin).createGameOAuthClient(anyServer("acme"));
      assert.equal(res.client?.verifierPolicy, VerifierPolicy.ANY_SERVER);
      assert.deepEqual(res.client?.allowedServerIds, []);
      assert.notEqual(res.client?.clientId, created.clientId);
      const { usage } = await orgs(member).getOrganization({ organizationSlug: "acme" });
      assert.equal(usage?.gameOauthClients, 2);
      assert.equal(usage?.gameOauthClientLimit, 20);
    });

    it("refuses a member (permission_denied) and a non-member (not_found) for every procedure", async () => {
      const { clientId } = created;
      for (const [who, code, reason] of [
        [member, Code.PermissionDenied, "permission_denied"],
        [outsider, Code.NotFound, "not_found"],
      ] as const) {
        await rejectsWith(orgs(who).createGameOAuthClient(anyServer("acme")), code, reason);
        await rejectsWith(orgs(who).listGameOAuthClients({ organizationSlug: "acme" }), code, reason);
        await rejectsWith(orgs(who).getGameOAuthClient({ clientId }), code, reason);
        await rejectsWith(orgs(who).updateGameOAuthClient({ clientId, name: "Hacked" }), code, reason);
        await rejectsWith(orgs(who).rotateGameOAuthClientSecret({ clientId }), code, reason);
        await rejectsWith(orgs(who).deleteGameOAuthClient({ clientId }), code, reason);
      }
      const { client } = await orgs(owner).getGameOAuthClient({ clientId });
      assert.deepEqual(client, created);
    });

    it("answers an outsider the same for another organization's client as for one that does not exist", async () => {
      const theirs = await rejectsWith(orgs(outsider).getGameOAuthClient({ clientId: created.clientId }), Code.NotFound, "not_found");
      const missing = await rejectsWith(orgs(owner).getGameOAuthClient({ clientId: `ogc_${"x".repeat(24)}` }), Code.NotFound, "not_found");
      assert.equal(theirs.rawMessage, missing.rawMessage);
      assert.doesNotMatch(theirs.rawMessage, /acme/);
    });

    it("validates the name, the URI count and the client_id, naming the field", async () => {
      for (const name of ["", " padded", "x".repeat(81)]) {
        const error = await rejectsWith(orgs(owner).createGameOAuthClient({ ...anyServer("acme"), name }), Code.InvalidArgument);
        assert.match(error.rawMessage, /name/);
      }
      assert.ok((await orgs(owner).createGameOAuthClient({ ...anyServer(await proOrganization()), name: "x".repeat(80) })).client);
      for (const count of [0, 17]) {
        const uris = Array.from({ length: count }, (_, i) => `https://app.example.com/cb${i}`);
        const error = await rejectsWith(orgs(owner).createGameOAuthClient(anyServer("acme", uris)), Code.InvalidArgument);
        assert.match(error.rawMessage, /redirect_uris/);
      }
      const error = await rejectsWith(orgs(owner).createGameOAuthClient(anyServer("acme", [`https://a.example.com/${"a".repeat(2030)}`])), Code.InvalidArgument);
      assert.match(error.rawMessage, /redirect_uris/);
      await rejectsWith(orgs(owner).getGameOAuthClient({ clientId: "ogs_" + "x".repeat(24) }), Code.InvalidArgument);
      await rejectsWith(orgs(owner).createGameOAuthClient({ ...anyServer("acme"), verifierPolicy: VerifierPolicy.UNSPECIFIED }), Code.InvalidArgument);
    });

    it("accepts 16 redirect URIs", async () => {
      const uris = Array.from({ length: 16 }, (_, i) => `https://app.example.com/cb${i}`);
      const res = await orgs(owner).createGameOAuthClient(anyServer(await proOrganization(), uris));
      assert.deepEqual(res.client?.redirectUris, uris);
    });
  });

  describe("redirect URIs", () => {
    it("stores them normalized: scheme and host lower-cased, default port dropped, path and query exactly", async () => {
      const res = await orgs(owner).createGameOAuthClient(
        anyServer(await proOrganization(), [
          "HTTPS://App.Example.COM:443/Call%7eBack/?B=2&a=%41",
          "http://[::1]:8080/cb",
          "http://127.0.0.1/cb/",
          "https://app.example.com",
        ]),
      );
      assert.deepEqual(res.client?.redirectUris, [
        "https://app.example.com/Call%7eBack/?B=2&a=%41",
        "http://[::1]:8080/cb",
        "http://127.0.0.1/cb/",
        "https://app.example.com/",
      ]);
    });

    it("names the index and the reason of each refused URI", async () => {
      const error = await rejectsWith(
        orgs(owner).createGameOAuthClient(
          anyServer("acme", ["https://ok.example.com/cb", "http://app.example.com/cb", "https://app.example.com/cb#x", "myapp://cb", "https://u:p@app.example.com/"]),
        ),
        Code.InvalidArgument,
        "invalid_argument",
      );
      assert.match(error.rawMessage, /redirectUris\[1\]: must use https \(or a loopback host\)/);
      assert.match(error.rawMessage, /redirectUris\[2\]: must not contain a fragment/);
      assert.match(error.rawMessage, /redirectUris\[3\]: must use https \(custom schemes/);
      assert.match(error.rawMessage, /redirectUris\[4\]: must not contain a user name or password/);
      assert.doesNotMatch(error.rawMessage, /redirectUris\[0\]/);
    });

    it("refuses two URIs that are the same once normalized", async () => {
      const error = await rejectsWith(
        orgs(owner).createGameOAuthClient(anyServer("acme", ["https://app.example.com/cb", "HTTPS://APP.example.com:443/cb"])),
        Code.InvalidArgument,
      );
      assert.match(error.rawMessage, /redirectUris\[1\]: is the same as redirectUris\[0\]/);
      // Different paths, queries or trailing slashes are different URIs.
      const slug = await proOrganization();
      const res = await orgs(owner).createGameOAuthClient(anyServer(slug, ["https://app.example.com/cb", "https://app.example.com/cb/", "https://app.example.com/cb?x"]));
      assert.equal(res.client?.redirectUris.length, 3);
    });

    it("allows http on any host when the service allows insecure redirect URIs", async () => {
      const dev = await startTestCore({ ...testConfig, allowInsecureRedirectUris: true });
      try {
        const me = await dev.signUp("dev@example.com");
        const devOrgs = dev.client(OrganizationsService, { session: me.token });
        await devOrgs.createOrganization({ name: "Dev", slug: "dev" });
        const res = await devOrgs.createGameOAuthClient(anyServer("dev", ["http://dev.example.test:8080/cb"]));
        assert.deepEqual(res.client?.redirectUris, ["http://dev.example.test:8080/cb"]);
        await rejectsWith(devOrgs.createGameOAuthClient(anyServer("dev", ["myapp://cb"])), Code.InvalidArgument);
      } finally {
        await dev.close();
      }
    });
  });

  describe("plan limit", () => {
    it("the free plan allows 2 clients; the 3rd is plan_limit_reached, and a deletion makes room", async () => {
      const me = await t.signUp("free@example.com");
      const mine = t.client(OrganizationsService, { session: me.token });
      await mine.createOrganization({ name: "Free", slug: "free-org" });
      const first = await mine.createGameOAuthClient(anyServer("free-org"));
      await mine.createGameOAuthClient(anyServer("free-org"));
      const error = await rejectsWith(mine.createGameOAuthClient(anyServer("free-org")), Code.FailedPrecondition, "plan_limit_reached");
      assert.match(error.rawMessage, /free plan allows 2 Game OAuth clients/);
      // Disabled clients still count.
      await mine.updateGameOAuthClient({ clientId: first.client!.clientId, disabled: true });
      await rejectsWith(mine.createGameOAuthClient(anyServer("free-org")), Code.FailedPrecondition, "plan_limit_reached");
      const { usage } = await mine.getOrganization({ organizationSlug: "free-org" });
      assert.equal(usage?.gameOauthClients, 2);
      assert.equal(usage?.gameOauthClientLimit, 2);
      await mine.deleteGameOAuthClient({ clientId: first.client!.clientId });
      await mine.createGameOAuthClient(anyServer("free-org"));
    });
  });

  describe("activity", () => {
    it("records every change, never the secret", async () => {
      const slug = await proOrganization();
      const server = (await servers(owner).createServer({ organizationSlug: slug, name: "S", game: Game.MINECRAFT })).server!.id;
      const { client, clientSecret } = await orgs(owner).createGameOAuthClient(anyServer(slug));
      const { clientId } = client!;
      await orgs(owner).updateGameOAuthClient({
        clientId,
        name: "Renamed",
        verifierPolicy: VerifierPolicy.SELECTED_SERVERS,
        allowedServerIds: { ids: [server] },
      });
      await orgs(owner).updateGameOAuthClient({ clientId, name: "Renamed" }); // no change, no event
      await orgs(owner).updateGameOAuthClient({ clientId, disabled: true });
      await orgs(owner).updateGameOAuthClient({ clientId, disabled: false });
      const { clientSecret: rotated } = await orgs(owner).rotateGameOAuthClientSecret({ clientId });
      await orgs(owner).deleteGameOAuthClient({ clientId });

      const activity = await t.client(ActivityService, { session: owner.token }).listOrganizationActivity({ organizationSlug: slug, action: "game_oauth_client" });
      const { events } = activity;
      assert.deepEqual(events.map((e) => e.action).reverse(), [
        "game_oauth_client.created",
        "game_oauth_client.updated",
        "game_oauth_client.disabled",
        "game_oauth_client.enabled",
        "game_oauth_client.secret_rotated",
        "game_oauth_client.deleted",
      ]);
      for (const e of events) {
        assert.equal(e.targetType, "game_oauth_client");
        assert.equal(e.targetId, clientId);
        assert.equal(e.details.clientId, clientId);
        assert.equal(e.actor?.userId, owner.userId);
      }
      const [deleted, rotation, , , updated, created] = events;
      assert.deepEqual(created.details, {
        clientId,
        name: "My App",
        redirectUris: callback,
        verifierPolicy: "any_server",
        allowedServerIds: "",
        idTokenSignedResponseAlg: "RS256",
        secretPrefix: clientSecret.slice(0, 12),
      });
      assert.deepEqual(updated.details, {
        clientId,
        name: "Renamed",
        previousName: "My App",
        verifierPolicy: "selected_servers",
        allowedServerIds: server,
        changed: "name verifierPolicy allowedServerIds",
      });
      assert.equal(rotation.details.secretPrefix, rotated.slice(0, 12));
      assert.equal(deleted.details.name, "Renamed");
      const all = toJsonString(ListOrganizationActivityResponseSchema, activity);
      for (const secret of [clientSecret, rotated]) assert.equal(all.includes(secret.slice(12)), false);
    });
  });
});
