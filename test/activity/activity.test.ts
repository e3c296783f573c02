import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { ActivityService, type ActivityEvent } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startTestCore, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { allActions } from "../support/grants.ts";
import { joinOrganization } from "../support/fixtures.ts";

type Account = { token: string; userId: string; email: string };

describe("activity: the organization's log of changes", () => {
  let t: TestCore;
  let owner: Account;
  let admin: Account;
  let member: Account;
  let leaver: Account;
  let outsider: Account;
  let organizationId: string;
  let apiKey: { id: string; key: string };
  let survival: string;
  let creative: string;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const activity = (who: Account) => t.client(ActivityService, { session: who.token });
  const sql = async (query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(query, params);
  const all = async () => (await activity(owner).listOrganizationActivity({ organizationSlug: "acme", limit: 200 })).events;
  const find = (events: ActivityEvent[], action: string, targetId?: string) =>
    events.filter((e) => e.action === action && (targetId === undefined || e.targetId === targetId));

  before(async () => {
    t = await startTestCore();
    owner = await t.signUp("owner@example.com");
    admin = await t.signUp("admin@example.com");
    member = await t.signUp("member@example.com");
    leaver = await t.signUp("leaver@example.com");
    outsider = await t.signUp("outsider@example.com");

    // Verified colleagues (in a lobby organization), so they are added to acme at once (member.added).
    await orgs(owner).createOrganization({ name: "Lobby", slug: "lobby" });
    for (const who of [admin, member, leaver]) await joinOrganization(t, owner, "lobby", who, Role.MEMBER);
    organizationId = (await orgs(owner).createOrganization({ name: "Acme", slug: "acme" })).organization!.id;
    await orgs(owner).addMember({ organizationSlug: "acme", email: admin.email, role: Role.ADMIN });
    await orgs(admin).addMember({ organizationSlug: "acme", email: member.email, role: Role.MEMBER });
    await orgs(admin).addMember({ organizationSlug: "acme", email: leaver.email, role: Role.MEMBER });
    await orgs(owner).updateMemberRole({ organizationSlug: "acme", userId: member.userId, role: Role.ADMIN });
    await orgs(owner).updateMemberRole({ organizationSlug: "acme", userId: member.userId, role: Role.MEMBER });
    await orgs(admin).updateOrganization({ organizationSlug: "acme", name: "Acme Games" });

    const created = await t.client(AuthService, { session: owner.token }).createApiKey({ name: "ci" });
    apiKey = { id: created.apiKey!.id, key: created.key };
    const viaKey = t.client(ServersService, { apiKey: apiKey.key });
    survival = (await viaKey.createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT })).server!.id;
    creative = (await t.client(ServersService, { session: admin.token }).createServer({ organizationSlug: "acme", name: "Creative", game: Game.HYTALE })).server!.id;
    await t.client(ServersService, { session: owner.token }).updateServer({ serverId: survival, name: "Hardcore" });
    await t.client(ServersService, { session: owner.token }).regenerateAgentKey({ serverId: survival });
    await orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: survival, actions: allActions });
    await orgs(admin).revokeAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: survival });
    await t.client(ServersService, { session: admin.token }).deleteServer({ serverId: creative });
    await orgs(leaver).removeMember({ organizationSlug: "acme", userId: leaver.userId });

    await orgs(outsider).createOrganization({ name: "Elsewhere", slug: "elsewhere" });
    await t.client(ServersService, { session: outsider.token }).createServer({ organizationSlug: "elsewhere", name: "Theirs", game: Game.MINECRAFT });
  });
  after(async () => {
    await t?.close();
  });

  describe("what is written", () => {
    it("records the organization's creation and renaming", async () => {
      const events = await all();
      const [created] = find(events, "organization.created");
      assert.equal(created.organizationId, organizationId);
      assert.equal(created.targetType, "organization");
      assert.equal(created.targetId, organizationId);
      assert.equal(created.actor?.kind, "user");
      assert.equal(created.actor?.userId, owner.userId);
      assert.equal(created.actor?.email, owner.email);
      assert.equal(created.actor?.apiKeyId, "");
      assert.equal(created.details.slug, "acme");
      const [renamed] = find(events, "organization.renamed");
      assert.equal(renamed.actor?.email, admin.email);
      assert.deepEqual({ ...renamed.details }, { from: "Acme", to: "Acme Games" });
    });

    it("records members added, role changes and a member leaving", async () => {
      const events = await all();
      const [addedAdmin] = find(events, "member.added", admin.userId);
      assert.equal(addedAdmin.actor?.email, owner.email);
      assert.equal(addedAdmin.targetType, "user");
      assert.equal(addedAdmin.details.role, "admin");
      const [addedMember] = find(events, "member.added", member.userId);
      assert.equal(addedMember.actor?.email, admin.email);
      assert.equal(addedMember.details.role, "member");
      const changes = find(events, "member.role_changed", member.userId);
      assert.deepEqual(changes.map((e) => [e.details.from, e.details.to]).reverse(), [
        ["member", "admin"],
        ["admin", "member"],
      ]);
      const [left] = find(events, "member.left", leaver.userId);
      assert.equal(left.actor?.userId, leaver.userId);
    });

    it("records server changes, with the server id and the API key the actor used", async () => {
      const events = await all();
      const [created] = find(events, "server.created", survival);
      assert.equal(created.serverId, survival);
      assert.equal(created.actor?.userId, owner.userId);
      assert.equal(created.actor?.email, owner.email);
      assert.equal(created.actor?.apiKeyId, apiKey.id);
      assert.equal(created.details.name, "Survival");
      assert.equal(created.details.game, "minecraft");
      const [renamed] = find(events, "server.renamed", survival);
      assert.deepEqual({ ...renamed.details }, { from: "Survival", to: "Hardcore" });
      assert.equal(renamed.actor?.apiKeyId, "", "a session leaves api_key_id empty");
      const [regenerated] = find(events, "server.agent_key_regenerated", survival);
      assert.match(regenerated.details.prefix, /^opa_/);
      assert.ok(!Object.values(regenerated.details).some((v) => v.length > 12), "no agent key in the log");
      const [deleted] = find(events, "server.deleted", creative);
      assert.equal(deleted.actor?.email, admin.email);
      assert.equal(deleted.serverId, creative);
      assert.equal(find(events, "server.created", creative).length, 1, "the log outlives the deleted server");
    });

    it("records access grants created and revoked", async () => {
      const events = await all();
      const [granted] = find(events, "access_grant.created", member.userId);
      assert.equal(granted.serverId, survival);
      assert.equal(granted.actor?.email, owner.email);
      const [revoked] = find(events, "access_grant.revoked", member.userId);
      assert.equal(revoked.serverId, survival);
      assert.equal(revoked.actor?.email, admin.email);
    });

    it("keeps account events (API keys) out of organization logs", async () => {
      const events = await all();
      assert.equal(events.filter((e) => e.action.startsWith("api_key.")).length, 0);
      assert.ok(
        events.every((e) => e.organizationId === organizationId),
        "only acme's events",
      );
      const rows = await sql(`select organization_id, actor_user_id from activity_events where action = 'api_key.created' and target_id = ?`, [apiKey.id]);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].organization_id, null);
      assert.equal(rows[0].actor_user_id, owner.userId);
    });

    it("writes nothing for a refused change", async () => {
      const before = (await all()).length;
      await rejectsWith(orgs(member).updateOrganization({ organizationSlug: "acme", name: "Nope" }), Code.PermissionDenied);
      await rejectsWith(
        t.client(ServersService, { session: member.token }).createServer({ organizationSlug: "acme", name: "Nope", game: Game.MINECRAFT }),
        Code.PermissionDenied,
      );
      assert.equal((await all()).length, before);
    });

    it("records removing a member and deleting the organization", async () => {
      const throwaway = await t.signUp("throwaway@example.com");
      await orgs(throwaway).createOrganization({ name: "Throwaway's lobby", slug: "throwaway-lobby" });
      await joinOrganization(t, throwaway, "throwaway-lobby", member, Role.MEMBER);
      const { organization } = await orgs(throwaway).createOrganization({ name: "Short-lived", slug: "short-lived" });
      await orgs(throwaway).addMember({ organizationSlug: "short-lived", email: member.email, role: Role.MEMBER });
      await orgs(throwaway).removeMember({ organizationSlug: "short-lived", userId: member.userId });
      const events = (await activity(throwaway).listOrganizationActivity({ organizationSlug: "short-lived" })).events;
      assert.deepEqual(events.map((e) => e.action).reverse(), ["organization.created", "member.added", "member.removed"]);
      await orgs(throwaway).deleteOrganization({ organizationSlug: "short-lived" });
      const rows = await sql(`select actor_user_id from activity_events where action = 'organization.deleted' and organization_id = ?`, [organization!.id]);
      assert.deepEqual(
        rows.map((r) => r.actor_user_id),
        [throwaway.userId],
      );
    });
  });

  describe("filters and paging", () => {
    it("lists newest first", async () => {
      const events = await all();
      for (let i = 1; i < events.length; i++) {
        assert.ok(events[i - 1].createdAt!.seconds >= events[i].createdAt!.seconds, "newest first");
      }
      assert.equal(events.at(-1)!.action, "organization.created");
      assert.equal(events[0].action, "member.left");
    });

    it("filters by server", async () => {
      const { events } = await activity(owner).listOrganizationActivity({ organizationSlug: "acme", serverId: survival });
      assert.deepEqual(events.map((e) => e.action).reverse(), [
        "server.created",
        "server.renamed",
        "server.agent_key_regenerated",
        "access_grant.created",
        "access_grant.revoked",
      ]);
      assert.ok(events.every((e) => e.serverId === survival));
    });

    it("filters by action: a target prefix or one exact action", async () => {
      const servers = (await activity(owner).listOrganizationActivity({ organizationSlug: "acme", action: "server" })).events;
      assert.deepEqual(servers.map((e) => e.action).sort(), ["server.agent_key_regenerated", "server.created", "server.created", "server.deleted", "server.renamed"]);
      const added = (await activity(owner).listOrganizationActivity({ organizationSlug: "acme", action: "member.added" })).events;
      assert.deepEqual(added.map((e) => e.targetId).sort(), [admin.userId, member.userId, leaver.userId].sort());
      assert.ok(added.every((e) => e.action === "member.added"));
      const members = (await activity(owner).listOrganizationActivity({ organizationSlug: "acme", action: "member" })).events;
      assert.equal(members.length, 3 + 2 + 1);
      const none = (await activity(owner).listOrganizationActivity({ organizationSlug: "acme", action: "serv" })).events;
      assert.deepEqual(none, [], "an action matches whole words only");
      const combined = await activity(owner).listOrganizationActivity({ organizationSlug: "acme", action: "access_grant", serverId: survival });
      assert.deepEqual(combined.events.map((e) => e.action).reverse(), ["access_grant.created", "access_grant.revoked"]);
    });

    it("limits and pages with before, without gaps or repeats", async () => {
      const everything = await all();
      assert.ok(everything.length > 5);
      const paged: string[] = [];
      let before: string | undefined;
      for (;;) {
        const { events } = await activity(admin).listOrganizationActivity({ organizationSlug: "acme", limit: 2, before });
        assert.ok(events.length <= 2);
        if (events.length === 0) break;
        paged.push(...events.map((e) => e.id));
        before = events.at(-1)!.id;
      }
      assert.deepEqual(
        paged,
        everything.map((e) => e.id),
      );
      const firstThree = await activity(owner).listOrganizationActivity({ organizationSlug: "acme", limit: 3 });
      assert.deepEqual(
        firstThree.events.map((e) => e.id),
        everything.slice(0, 3).map((e) => e.id),
      );
    });

    it("validates the filters, naming the field", async () => {
      for (const [request, field] of [
        [{ limit: 0 }, "limit"],
        [{ limit: 201 }, "limit"],
        [{ action: "Server" }, "action"],
        [{ action: "server.created.x" }, "action"],
        [{ serverId: "not-a-uuid" }, "server_id"],
        [{ before: "nope" }, "before"],
      ] as const) {
        const error = await rejectsWith(activity(owner).listOrganizationActivity({ organizationSlug: "acme", ...request }), Code.InvalidArgument);
        assert.match(error.rawMessage, new RegExp(field));
      }
      // A cursor from another organization is not a cursor here.
      const [theirs] = (await activity(outsider).listOrganizationActivity({ organizationSlug: "elsewhere", limit: 1 })).events;
      await rejectsWith(activity(owner).listOrganizationActivity({ organizationSlug: "acme", before: theirs.id }), Code.InvalidArgument);
    });
  });

  describe("who may read it", () => {
    it("lets an owner, an admin, and an admin's API key read it", async () => {
      const { key } = await t.client(AuthService, { session: admin.token }).createApiKey({ name: "admin key" });
      for (const client of [activity(owner), activity(admin), t.client(ActivityService, { apiKey: key })]) {
        const { events } = await client.listOrganizationActivity({ organizationSlug: "acme", limit: 1 });
        assert.equal(events.length, 1);
        assert.equal(events[0].organizationId, organizationId);
      }
    });

    it("refuses a member (permission_denied), a non-member (not_found) and an anonymous caller", async () => {
      await rejectsWith(activity(member).listOrganizationActivity({ organizationSlug: "acme" }), Code.PermissionDenied, "permission_denied");
      const existing = await rejectsWith(activity(outsider).listOrganizationActivity({ organizationSlug: "acme" }), Code.NotFound, "not_found");
      const missing = await rejectsWith(activity(outsider).listOrganizationActivity({ organizationSlug: "acmf" }), Code.NotFound, "not_found");
      assert.equal(existing.rawMessage.replace("acme", "X"), missing.rawMessage.replace("acmf", "X"));
      await rejectsWith(activity(leaver).listOrganizationActivity({ organizationSlug: "acme" }), Code.NotFound, "not_found");
      await rejectsWith(t.client(ActivityService).listOrganizationActivity({ organizationSlug: "acme" }), Code.Unauthenticated);
    });
  });

  describe("the caller's own log and the platform's", () => {
    it("lists what the caller did, in any organization or none, and nothing anyone else did", async () => {
      const { events } = await activity(owner).listMyActivity({ limit: 200 });
      assert.ok(events.length > 3);
      assert.ok(events.every((e) => e.actor?.userId === owner.userId));
      const actions = new Set(events.map((e) => e.action));
      for (const action of ["organization.created", "api_key.created", "server.created", "server.renamed"]) assert.ok(actions.has(action), action);
      assert.ok(
        events.some((e) => e.actor?.apiKeyId === apiKey.id),
        "what the caller did through an API key is theirs too",
      );
      assert.equal(find(events, "server.created", creative).length, 0, "the admin's server is not the owner's doing");
      const mine = await activity(admin).listMyActivity({ action: "server" });
      assert.deepEqual(mine.events.map((e) => e.targetId).includes(creative), true);
      assert.ok(mine.events.every((e) => e.action.startsWith("server.")));
    });

    it("pages the caller's log with before, and refuses someone else's event as the cursor", async () => {
      const first = await activity(owner).listMyActivity({ limit: 2 });
      const next = await activity(owner).listMyActivity({ limit: 2, before: first.events[1].id });
      assert.equal(next.events.length, 2);
      assert.ok(!next.events.some((e) => first.events.some((f) => f.id === e.id)), "no repeats");
      const theirs = (await activity(admin).listMyActivity({ limit: 1 })).events[0].id;
      await rejectsWith(activity(owner).listMyActivity({ before: theirs }), Code.InvalidArgument);
      await rejectsWith(t.client(ActivityService).listMyActivity({}), Code.Unauthenticated);
    });

    it("shows platform admins the events of no organization; refuses everyone else", async () => {
      await rejectsWith(activity(owner).listPlatformActivity({}), Code.PermissionDenied, "platform_admin_required");
      await sql(`update users set platform_admin = true where id = ?`, [outsider.userId]);
      const { events } = await activity(outsider).listPlatformActivity({ limit: 200 });
      assert.ok(events.length > 0);
      assert.ok(events.every((e) => e.organizationId === ""));
      assert.ok(find(events, "api_key.created").some((e) => e.actor?.userId === owner.userId));
      const keysOnly = await activity(outsider).listPlatformActivity({ action: "api_key.created" });
      assert.ok(keysOnly.events.length > 0 && keysOnly.events.every((e) => e.action === "api_key.created"));
    });
  });
});
