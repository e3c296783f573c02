import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { toJsonString } from "@bufbuild/protobuf";
import { GetServerResponseSchema, ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { acmeWithMembers } from "../support/fixtures.ts";
import { startTestCore, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { allActions } from "../support/grants.ts";

type Account = { token: string; userId: string; email: string };

const sha256 = (value: string) => createHash("sha256").update(value, "utf8").digest("hex");

describe("servers: create, list, get, rename, delete, agent keys", () => {
  let t: TestCore;
  let owner: Account;
  let admin: Account;
  let member: Account;
  let outsider: Account;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const servers = (who: Account) => t.client(ServersService, { session: who.token });
  const sql = async (query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(query, params);

  before(async () => {
    t = await startTestCore();
    ({ owner, admin, member, outsider } = await acmeWithMembers(t));
  });
  after(async () => {
    await t?.close();
  });

  let survival: string;
  let creative: string;

  describe("create", () => {
    it("lets an owner create a server and returns its agent key once", async () => {
      const res = await servers(owner).createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT });
      survival = res.server!.id;
      assert.equal(res.server?.name, "Survival");
      assert.equal(res.server?.game, Game.MINECRAFT);
      assert.equal(res.server?.online, false);
      assert.equal(res.server?.lastSeenAt, undefined);
      assert.equal(res.server?.playerCount, 0);
      const { organization } = await orgs(owner).getOrganization({ organizationSlug: "acme" });
      assert.equal(res.server?.organizationId, organization!.id);
      assert.match(res.agentKey, /^opa_[0-9A-Za-z]{40}$/);
      assert.equal(res.server?.agentKeyPrefix, res.agentKey.slice(0, 12));
      const rows = await sql(`select agent_key_hash from servers where id = ?`, [survival]);
      assert.equal(rows[0].agent_key_hash, sha256(res.agentKey));
      // Never again: reading the server shows only the prefix.
      const got = await servers(owner).getServer({ serverId: survival });
      assert.ok(!toJsonString(GetServerResponseSchema, got).includes(res.agentKey.slice(12)));
      assert.equal(got.server?.agentKeyPrefix, res.agentKey.slice(0, 12));
      // An agent key is no user credential, whichever header carries it.
      await rejectsWith(t.client(ServersService, { apiKey: res.agentKey }).listServers({ organizationSlug: "acme" }), Code.Unauthenticated, "unauthenticated");
      await rejectsWith(t.client(ServersService, { session: res.agentKey }).getServer({ serverId: survival }), Code.Unauthenticated, "unauthenticated");
    });

    it("lets an admin create a server", async () => {
      const res = await servers(admin).createServer({ organizationSlug: "acme", name: "Creative", game: Game.HYTALE });
      creative = res.server!.id;
      assert.equal(res.server?.game, Game.HYTALE);
      assert.notEqual(res.agentKey.slice(0, 12), (await servers(owner).getServer({ serverId: survival })).server?.agentKeyPrefix);
    });

    it("refuses a member (permission_denied) and a non-member (not_found)", async () => {
      await rejectsWith(servers(member).createServer({ organizationSlug: "acme", name: "Mine", game: Game.MINECRAFT }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(servers(outsider).createServer({ organizationSlug: "acme", name: "Mine", game: Game.MINECRAFT }), Code.NotFound, "not_found");
      assert.equal((await servers(owner).listServers({ organizationSlug: "acme" })).servers.length, 2);
    });

    it("refuses an unspecified or unknown game and a bad name, naming the field", async () => {
      for (const game of [Game.UNSPECIFIED, 7 as Game]) {
        const error = await rejectsWith(servers(owner).createServer({ organizationSlug: "acme", name: "Odd", game }), Code.InvalidArgument);
        assert.match(error.rawMessage, /game/);
      }
      for (const name of ["", " Survival", "x".repeat(65)]) {
        const error = await rejectsWith(servers(owner).createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT }), Code.InvalidArgument);
        assert.match(error.rawMessage, /name/);
      }
      assert.equal((await servers(owner).listServers({ organizationSlug: "acme" })).servers.length, 2);
    });
  });

  describe("plan limit", () => {
    it("allows 3 servers on the free plan and refuses the 4th with plan_limit_reached", async () => {
      await servers(owner).createServer({ organizationSlug: "acme", name: "Third", game: Game.MINECRAFT });
      const usage = (await orgs(owner).getOrganization({ organizationSlug: "acme" })).usage;
      assert.equal(usage?.servers, 3);
      assert.equal(usage?.serverLimit, 3);
      await rejectsWith(servers(owner).createServer({ organizationSlug: "acme", name: "Fourth", game: Game.MINECRAFT }), Code.FailedPrecondition, "plan_limit_reached");
      assert.equal((await servers(owner).listServers({ organizationSlug: "acme" })).servers.length, 3);
      // Another organization's usage does not count.
      await servers(outsider).createServer({ organizationSlug: "elsewhere", name: "Theirs", game: Game.HYTALE });
    });

    it("allows creating again once a server is deleted", async () => {
      const third = (await servers(owner).listServers({ organizationSlug: "acme" })).servers.find((s) => s.name === "Third")!;
      await servers(owner).deleteServer({ serverId: third.id });
      const again = await servers(owner).createServer({ organizationSlug: "acme", name: "Third again", game: Game.MINECRAFT });
      assert.equal(again.server?.name, "Third again");
      await rejectsWith(servers(admin).createServer({ organizationSlug: "acme", name: "Fourth", game: Game.MINECRAFT }), Code.FailedPrecondition, "plan_limit_reached");
    });

    it("counts concurrent creations one after another: exactly the limit succeeds", async () => {
      const racer = await t.signUp("racer@example.com");
      await orgs(racer).createOrganization({ name: "Race", slug: "race" });
      const results = await Promise.allSettled(
        ["A", "B", "C", "D", "E"].map((name) => servers(racer).createServer({ organizationSlug: "race", name, game: Game.MINECRAFT })),
      );
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 3);
      for (const r of results) if (r.status === "rejected") await rejectsWith(Promise.reject(r.reason), Code.FailedPrecondition, "plan_limit_reached");
      assert.equal((await servers(racer).listServers({ organizationSlug: "race" })).servers.length, 3);
    });
  });

  describe("list and get", () => {
    it("shows owners and admins every server of the organization", async () => {
      for (const who of [owner, admin]) {
        const names = (await servers(who).listServers({ organizationSlug: "acme" })).servers.map((s) => s.name);
        assert.deepEqual(names, ["Survival", "Creative", "Third again"]);
      }
      assert.equal((await servers(admin).getServer({ serverId: creative })).server?.name, "Creative");
    });

    it("gives a member without grants an empty list and permission_denied on get", async () => {
      const { servers: list } = await servers(member).listServers({ organizationSlug: "acme" });
      assert.deepEqual(list, []);
      await rejectsWith(servers(member).getServer({ serverId: survival }), Code.PermissionDenied, "permission_denied");
    });

    it("shows a member only the servers granted to them", async () => {
      await orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: creative, actions: allActions });
      const { servers: list } = await servers(member).listServers({ organizationSlug: "acme" });
      assert.deepEqual(
        list.map((s) => s.id),
        [creative],
      );
      assert.equal((await servers(member).getServer({ serverId: creative })).server?.name, "Creative");
      await rejectsWith(servers(member).getServer({ serverId: survival }), Code.PermissionDenied, "permission_denied");
    });

    it("refuses a member with a grant renaming, deleting or regenerating the key of that server", async () => {
      await rejectsWith(servers(member).updateServer({ serverId: creative, name: "Mine now" }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(servers(member).deleteServer({ serverId: creative }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(servers(member).regenerateAgentKey({ serverId: creative }), Code.PermissionDenied, "permission_denied");
      const { server } = await servers(owner).getServer({ serverId: creative });
      assert.equal(server?.name, "Creative");
    });

    it("answers a user of another organization not_found, the same as for an unknown server", async () => {
      const unknown = "00000000-0000-4000-8000-000000000000";
      const missing = await rejectsWith(servers(outsider).getServer({ serverId: unknown }), Code.NotFound, "not_found");
      const foreign = await rejectsWith(servers(outsider).getServer({ serverId: survival }), Code.NotFound, "not_found");
      assert.equal(foreign.rawMessage, missing.rawMessage);
      await rejectsWith(servers(outsider).updateServer({ serverId: survival, name: "Taken" }), Code.NotFound, "not_found");
      await rejectsWith(servers(outsider).deleteServer({ serverId: survival }), Code.NotFound, "not_found");
      await rejectsWith(servers(outsider).regenerateAgentKey({ serverId: survival }), Code.NotFound, "not_found");
      await rejectsWith(servers(outsider).listServers({ organizationSlug: "acme" }), Code.NotFound, "not_found");
      // And the other way round: acme's owner cannot reach the outsider's server.
      const theirs = (await servers(outsider).listServers({ organizationSlug: "elsewhere" })).servers[0];
      await rejectsWith(servers(owner).getServer({ serverId: theirs.id }), Code.NotFound, "not_found");
      const { server } = await servers(owner).getServer({ serverId: survival });
      assert.equal(server?.name, "Survival");
    });

    it("validates server ids", async () => {
      const error = await rejectsWith(servers(owner).getServer({ serverId: "not-a-uuid" }), Code.InvalidArgument);
      assert.match(error.rawMessage, /server_id/);
    });
  });

  describe("rename, delete, regenerate", () => {
    it("lets an owner and an admin rename", async () => {
      const byOwner = await servers(owner).updateServer({ serverId: survival, name: "Hardcore" });
      assert.equal(byOwner.server?.name, "Hardcore");
      const byAdmin = await servers(admin).updateServer({ serverId: survival, name: "Survival" });
      assert.equal(byAdmin.server?.name, "Survival");
      assert.equal((await servers(owner).getServer({ serverId: survival })).server?.name, "Survival");
    });

    it("refuses a name with a control character or a bidirectional control, on creation and on rename, saying so in words", async () => {
      const oneLine = "name: must be one line, without control characters or bidirectional text controls";
      for (const name of ["Lobby\u001b]0;owned\u0007", "Lobby\u001b[2J", "Lob\rby", "Lob\u000bby", "Lobby\u0085x", "Lobby \u202eevil", "Lobby\u2066x\u2069"]) {
        const renamed = await rejectsWith(servers(owner).updateServer({ serverId: survival, name }), Code.InvalidArgument);
        assert.equal(renamed.rawMessage, oneLine, JSON.stringify(name));
        const created = await rejectsWith(servers(owner).createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT }), Code.InvalidArgument);
        assert.equal(created.rawMessage, oneLine, JSON.stringify(name));
      }
      assert.equal((await servers(owner).getServer({ serverId: survival })).server?.name, "Survival");
      assert.equal(
        (await servers(owner).updateServer({ serverId: survival, name: "שרת Survival" })).server?.name,
        "שרת Survival",
        "right-to-left names need no controls",
      );
      await servers(owner).updateServer({ serverId: survival, name: "Survival" });
    });

    it("regenerates the agent key: new prefix, new hash, the old hash gone", async () => {
      const before = (await servers(owner).getServer({ serverId: survival })).server!;
      const [{ agent_key_hash: oldHash }] = await sql(`select agent_key_hash from servers where id = ?`, [survival]);
      const res = await servers(admin).regenerateAgentKey({ serverId: survival });
      assert.match(res.agentKey, /^opa_[0-9A-Za-z]{40}$/);
      assert.equal(res.server?.agentKeyPrefix, res.agentKey.slice(0, 12));
      assert.notEqual(res.server?.agentKeyPrefix, before.agentKeyPrefix);
      const [{ agent_key_hash: newHash }] = await sql(`select agent_key_hash from servers where id = ?`, [survival]);
      assert.equal(newHash, sha256(res.agentKey));
      assert.notEqual(newHash, oldHash);
      const stale = await sql(`select count(*)::int as n from servers where agent_key_hash = ?`, [oldHash]);
      assert.equal(stale[0].n, 0);
      const again = await servers(owner).regenerateAgentKey({ serverId: survival });
      assert.notEqual(again.agentKey, res.agentKey);
      assert.equal((await servers(owner).getServer({ serverId: survival })).server?.agentKeyPrefix, again.agentKey.slice(0, 12));
    });

    it("lets an admin delete a server; its grants go with it", async () => {
      await orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: survival, actions: allActions });
      assert.equal((await servers(member).listServers({ organizationSlug: "acme" })).servers.length, 2);
      await servers(admin).deleteServer({ serverId: survival });
      await rejectsWith(servers(owner).getServer({ serverId: survival }), Code.NotFound, "not_found");
      assert.deepEqual(
        (await servers(member).listServers({ organizationSlug: "acme" })).servers.map((s) => s.id),
        [creative],
      );
      const grants = await sql(`select count(*)::int as n from access_grants where server_id = ?`, [survival]);
      assert.equal(grants[0].n, 0);
      await rejectsWith(servers(owner).deleteServer({ serverId: survival }), Code.NotFound, "not_found");
    });

    it("lets an owner delete a server", async () => {
      await servers(owner).deleteServer({ serverId: creative });
      assert.deepEqual((await servers(member).listServers({ organizationSlug: "acme" })).servers, []);
      assert.deepEqual(
        (await servers(owner).listServers({ organizationSlug: "acme" })).servers.map((s) => s.name),
        ["Third again"],
      );
    });

    it("refuses anonymous callers", async () => {
      await rejectsWith(t.client(ServersService).listServers({ organizationSlug: "acme" }), Code.Unauthenticated);
    });
  });
});
