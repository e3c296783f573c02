import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { VerifierPolicy, type GameOAuthClient } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

import { anyServer, proOrganization as newProOrganization, sha256, startClientsSetting, type Account } from "./game-oauth-clients-fixture.ts";

/** Game OAuth clients after creation: the verifier policy, updates, rotating the secret and deleting. */
describe("organizations: Game OAuth clients", () => {
  let t: TestCore;
  let owner: Account;
  let admin: Account;
  let survival: string;
  let creative: string;
  let elsewhere: string;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const servers = (who: Account) => t.client(ServersService, { session: who.token });
  const sql = async (query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(query, params);
  const proOrganization = () => newProOrganization(t, owner);

  before(async () => {
    ({ t, owner, admin, survival, creative, elsewhere } = await startClientsSetting());
  });
  after(async () => {
    await t?.close();
  });

  describe("verifier policy", () => {
    it("selected_servers needs at least one server; any_server refuses a list", async () => {
      const none = await rejectsWith(orgs(owner).createGameOAuthClient({ ...anyServer("acme"), verifierPolicy: VerifierPolicy.SELECTED_SERVERS }), Code.InvalidArgument);
      assert.match(none.rawMessage, /allowedServerIds: selected_servers needs at least one server/);
      const listed = await rejectsWith(orgs(owner).createGameOAuthClient({ ...anyServer("acme"), allowedServerIds: [survival] }), Code.InvalidArgument);
      assert.match(listed.rawMessage, /allowedServerIds: must be empty when verifierPolicy is any_server/);
    });

    it("refuses a server of another organization like one that does not exist, naming the index", async () => {
      const missing = "00000000-0000-4000-8000-000000000000";
      const error = await rejectsWith(
        orgs(owner).createGameOAuthClient({
          ...anyServer("acme"),
          verifierPolicy: VerifierPolicy.SELECTED_SERVERS,
          allowedServerIds: [survival, elsewhere, missing],
        }),
        Code.InvalidArgument,
        "invalid_argument",
      );
      assert.match(error.rawMessage, new RegExp(`allowedServerIds\\[1\\]: no server ${elsewhere} in this organization`));
      assert.match(error.rawMessage, new RegExp(`allowedServerIds\\[2\\]: no server ${missing} in this organization`));
      assert.doesNotMatch(error.rawMessage, /allowedServerIds\[0\]/);
    });

    it("refuses repeated or malformed server ids", async () => {
      const selected = { ...anyServer("acme"), verifierPolicy: VerifierPolicy.SELECTED_SERVERS };
      await rejectsWith(orgs(owner).createGameOAuthClient({ ...selected, allowedServerIds: [survival, survival] }), Code.InvalidArgument);
      await rejectsWith(orgs(owner).createGameOAuthClient({ ...selected, allowedServerIds: ["not-a-uuid"] }), Code.InvalidArgument);
    });

    it("returns the allowed servers sorted", async () => {
      const slug = await proOrganization();
      const a = (await servers(owner).createServer({ organizationSlug: slug, name: "A", game: Game.MINECRAFT })).server!.id;
      const b = (await servers(owner).createServer({ organizationSlug: slug, name: "B", game: Game.MINECRAFT })).server!.id;
      const res = await orgs(owner).createGameOAuthClient({
        ...anyServer(slug),
        verifierPolicy: VerifierPolicy.SELECTED_SERVERS,
        allowedServerIds: [a, b].sort().reverse(),
      });
      assert.deepEqual(res.client?.allowedServerIds, [a, b].sort());
    });

    it("drops a deleted server out of every client's allowed list", async () => {
      const slug = await proOrganization();
      const doomed = (await servers(owner).createServer({ organizationSlug: slug, name: "Doomed", game: Game.MINECRAFT })).server!.id;
      const kept = (await servers(owner).createServer({ organizationSlug: slug, name: "Kept", game: Game.MINECRAFT })).server!.id;
      const selected = { ...anyServer(slug), verifierPolicy: VerifierPolicy.SELECTED_SERVERS };
      const both = (await orgs(owner).createGameOAuthClient({ ...selected, allowedServerIds: [doomed, kept] })).client!;
      const only = (await orgs(owner).createGameOAuthClient({ ...selected, allowedServerIds: [doomed] })).client!;
      await servers(owner).deleteServer({ serverId: doomed });
      assert.deepEqual((await orgs(owner).getGameOAuthClient({ clientId: both.clientId })).client?.allowedServerIds, [kept]);
      // The policy stays: with no server left, no server can verify until one is chosen.
      const left = (await orgs(owner).getGameOAuthClient({ clientId: only.clientId })).client!;
      assert.equal(left.verifierPolicy, VerifierPolicy.SELECTED_SERVERS);
      assert.deepEqual(left.allowedServerIds, []);
      // Renaming it still works; choosing servers again needs at least one.
      await orgs(owner).updateGameOAuthClient({ clientId: only.clientId, name: "Renamed" });
      await rejectsWith(orgs(owner).updateGameOAuthClient({ clientId: only.clientId, allowedServerIds: { ids: [] } }), Code.InvalidArgument);
      const rows = await sql(`select count(*)::int as n from game_oauth_client_servers where server_id = ?`, [doomed]);
      assert.equal(rows[0].n, 0);
    });
  });

  describe("update", () => {
    let client: GameOAuthClient;
    before(async () => {
      client = (
        await orgs(owner).createGameOAuthClient({
          organizationSlug: "acme",
          name: "Wiki",
          redirectUris: ["https://wiki.example.com/cb"],
          verifierPolicy: VerifierPolicy.ANY_SERVER,
        })
      ).client!;
    });

    it("changes only the fields given", async () => {
      const renamed = (await orgs(admin).updateGameOAuthClient({ clientId: client.clientId, name: "Wiki 2" })).client!;
      assert.deepEqual({ ...renamed, name: "Wiki" }, client);
      const uris = (
        await orgs(owner).updateGameOAuthClient({
          clientId: client.clientId,
          redirectUris: { uris: ["HTTPS://Wiki.example.com:443/new/", "http://localhost:8080/cb"] },
        })
      ).client!;
      assert.equal(uris.name, "Wiki 2");
      assert.deepEqual(uris.redirectUris, ["https://wiki.example.com/new/", "http://localhost:8080/cb"]);
      const unchanged = (await orgs(owner).updateGameOAuthClient({ clientId: client.clientId })).client!;
      assert.deepEqual(unchanged, uris);
      assert.deepEqual((await orgs(owner).getGameOAuthClient({ clientId: client.clientId })).client, uris);
    });

    it("validates new redirect URIs like at creation; an empty list is refused, not 'unchanged'", async () => {
      const bad = await rejectsWith(
        orgs(owner).updateGameOAuthClient({ clientId: client.clientId, redirectUris: { uris: ["https://ok.example.com/", "http://wiki.example.com/cb"] } }),
        Code.InvalidArgument,
      );
      assert.match(bad.rawMessage, /redirectUris\[1\]: must use https/);
      await rejectsWith(orgs(owner).updateGameOAuthClient({ clientId: client.clientId, redirectUris: { uris: [] } }), Code.InvalidArgument);
      await rejectsWith(orgs(owner).updateGameOAuthClient({ clientId: client.clientId, name: "" }), Code.InvalidArgument);
    });

    it("switches policies: selected_servers needs servers; any_server clears them and refuses a list", async () => {
      const { clientId } = client;
      await rejectsWith(orgs(owner).updateGameOAuthClient({ clientId, verifierPolicy: VerifierPolicy.SELECTED_SERVERS }), Code.InvalidArgument);
      await rejectsWith(orgs(owner).updateGameOAuthClient({ clientId, allowedServerIds: { ids: [survival] } }), Code.InvalidArgument);
      await rejectsWith(
        orgs(owner).updateGameOAuthClient({ clientId, verifierPolicy: VerifierPolicy.SELECTED_SERVERS, allowedServerIds: { ids: [elsewhere] } }),
        Code.InvalidArgument,
      );
      const selected = (
        await orgs(owner).updateGameOAuthClient({
          clientId,
          verifierPolicy: VerifierPolicy.SELECTED_SERVERS,
          allowedServerIds: { ids: [survival] },
        })
      ).client!;
      assert.equal(selected.verifierPolicy, VerifierPolicy.SELECTED_SERVERS);
      assert.deepEqual(selected.allowedServerIds, [survival]);
      const swapped = (await orgs(owner).updateGameOAuthClient({ clientId, allowedServerIds: { ids: [creative, survival] } })).client!;
      assert.deepEqual(swapped.allowedServerIds, [creative, survival].sort());
      const narrowed = (await orgs(owner).updateGameOAuthClient({ clientId, allowedServerIds: { ids: [creative] } })).client!;
      assert.deepEqual(narrowed.allowedServerIds, [creative]);
      await rejectsWith(
        orgs(owner).updateGameOAuthClient({ clientId, verifierPolicy: VerifierPolicy.ANY_SERVER, allowedServerIds: { ids: [creative] } }),
        Code.InvalidArgument,
      );
      const any = (await orgs(owner).updateGameOAuthClient({ clientId, verifierPolicy: VerifierPolicy.ANY_SERVER })).client!;
      assert.equal(any.verifierPolicy, VerifierPolicy.ANY_SERVER);
      assert.deepEqual(any.allowedServerIds, []);
      const rows = await sql(
        `select count(*)::int as n from game_oauth_client_servers s join game_oauth_clients c on c.id = s.game_oauth_client_id where c.client_id = ?`,
        [clientId],
      );
      assert.equal(rows[0].n, 0);
    });

    it("disables and enables a client", async () => {
      const off = (await orgs(owner).updateGameOAuthClient({ clientId: client.clientId, disabled: true })).client!;
      assert.equal(off.disabled, true);
      assert.equal((await orgs(admin).getGameOAuthClient({ clientId: client.clientId })).client?.disabled, true);
      const on = (await orgs(admin).updateGameOAuthClient({ clientId: client.clientId, disabled: false })).client!;
      assert.equal(on.disabled, false);
    });
  });

  describe("rotate and delete", () => {
    it("rotates the secret: a new one, shown once; the old hash is gone", async () => {
      const { client, clientSecret } = await orgs(owner).createGameOAuthClient(anyServer("acme"));
      const rotated = await orgs(admin).rotateGameOAuthClientSecret({ clientId: client!.clientId });
      assert.equal(rotated.clientId, client!.clientId);
      assert.match(rotated.clientSecret, /^ogs_[0-9A-Za-z]{40}$/);
      assert.notEqual(rotated.clientSecret, clientSecret);
      const rows = await sql(`select secret_hash from game_oauth_clients where client_id = ?`, [client!.clientId]);
      assert.equal(rows[0].secret_hash, sha256(rotated.clientSecret));
      const got = (await orgs(owner).getGameOAuthClient({ clientId: client!.clientId })).client!;
      assert.equal(got.clientSecretPrefix, rotated.clientSecret.slice(0, 12));
      assert.deepEqual({ ...got, clientSecretPrefix: "" }, { ...client!, clientSecretPrefix: "" });
    });

    it("deletes a client with its allowed servers; then it is gone", async () => {
      const { client } = await orgs(owner).createGameOAuthClient({
        ...anyServer("acme"),
        verifierPolicy: VerifierPolicy.SELECTED_SERVERS,
        allowedServerIds: [survival, creative],
      });
      const [{ id }] = await sql(`select id from game_oauth_clients where client_id = ?`, [client!.clientId]);
      await orgs(admin).deleteGameOAuthClient({ clientId: client!.clientId });
      await rejectsWith(orgs(owner).getGameOAuthClient({ clientId: client!.clientId }), Code.NotFound, "not_found");
      await rejectsWith(orgs(owner).deleteGameOAuthClient({ clientId: client!.clientId }), Code.NotFound, "not_found");
      const { clients } = await orgs(owner).listGameOAuthClients({ organizationSlug: "acme" });
      assert.ok(!clients.some((c) => c.clientId === client!.clientId));
      const rows = await sql(`select count(*)::int as n from game_oauth_client_servers where game_oauth_client_id = ?`, [id]);
      assert.equal(rows[0].n, 0);
    });

    it("goes with its organization", async () => {
      const slug = await proOrganization();
      const { client } = await orgs(owner).createGameOAuthClient(anyServer(slug));
      await orgs(owner).deleteOrganization({ organizationSlug: slug });
      const rows = await sql(`select count(*)::int as n from game_oauth_clients where client_id = ?`, [client!.clientId]);
      assert.equal(rows[0].n, 0);
    });
  });
});
