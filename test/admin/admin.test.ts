import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { AdminService } from "../../gen/outpost/admin/v1/admin_service_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startTestCore, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

type Account = { token: string; userId: string; email: string };

describe("admin: platform administration", () => {
  let t: TestCore;
  let root: Account;
  let user: Account;
  const adminClient = (who: Account) => t.client(AdminService, { session: who.token });
  const sql = async (query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(query, params);

  before(async () => {
    t = await startTestCore();
    const identity = t.client(IdentityService);
    const password = "root password 123";
    const created = await identity.createUser({ email: "root@example.com", password, name: "Root", platformAdmin: true });
    assert.equal(created.user?.platformAdmin, true);
    const signedIn = await identity.signIn({ email: "root@example.com", password });
    root = { token: signedIn.sessionToken, userId: created.user!.id, email: "root@example.com" };
    user = await t.signUp("user@example.com");
    await t.client(OrganizationsService, { session: user.token }).createOrganization({ name: "User's", slug: "users-org" });
  });
  after(async () => {
    await t?.close();
  });

  describe("who may", () => {
    it("refuses a normal user every procedure with platform_admin_required", async () => {
      const client = adminClient(user);
      await rejectsWith(client.listUsers({}), Code.PermissionDenied, "platform_admin_required");
      await rejectsWith(client.listPlans({}), Code.PermissionDenied, "platform_admin_required");
      await rejectsWith(client.setPlatformAdmin({ userId: user.userId, platformAdmin: true }), Code.PermissionDenied, "platform_admin_required");
      await rejectsWith(client.setOrganizationPlan({ organizationSlug: "users-org", plan: "pro" }), Code.PermissionDenied, "platform_admin_required");
      await rejectsWith(client.setOrganizationVerified({ organizationSlug: "users-org", verified: true }), Code.PermissionDenied, "platform_admin_required");
      const session = await t.client(AuthService, { session: user.token }).getSession({});
      assert.equal(session.user?.platformAdmin, false);
      const { organization } = await t.client(OrganizationsService, { session: user.token }).getOrganization({ organizationSlug: "users-org" });
      assert.equal(organization?.plan, "free");
      assert.equal(organization?.verified, false, "an owner cannot verify their own organization");
    });

    it("refuses an anonymous caller", async () => {
      await rejectsWith(t.client(AdminService).listUsers({}), Code.Unauthenticated);
    });

    it("lets a platform admin act through an API key too", async () => {
      const { key } = await t.client(AuthService, { session: root.token }).createApiKey({ name: "ops" });
      const { plans } = await t.client(AdminService, { apiKey: key }).listPlans({});
      assert.ok(plans.length > 0);
    });
  });

  describe("users", () => {
    it("lists users ordered by email, optionally matching a query, up to a limit", async () => {
      await t.signUp("alice_1@example.com");
      await t.signUp("alicex1@example.com");
      const everyone = (await adminClient(root).listUsers({})).users.map((u) => u.email);
      assert.deepEqual(everyone, [...everyone].sort());
      assert.ok(everyone.includes("root@example.com") && everyone.includes("user@example.com"));
      const alices = (await adminClient(root).listUsers({ query: "ALICE" })).users.map((u) => u.email);
      assert.deepEqual(alices, ["alice_1@example.com", "alicex1@example.com"]);
      // Wildcards in the query match literally.
      const literal = (await adminClient(root).listUsers({ query: "alice_" })).users.map((u) => u.email);
      assert.deepEqual(literal, ["alice_1@example.com"]);
      const limited = (await adminClient(root).listUsers({ limit: 2 })).users;
      assert.deepEqual(
        limited.map((u) => u.email),
        everyone.slice(0, 2),
      );
      const [rootUser] = (await adminClient(root).listUsers({ query: "root@" })).users;
      assert.equal(rootUser.platformAdmin, true);
      await rejectsWith(adminClient(root).listUsers({ limit: 0 }), Code.InvalidArgument);
    });

    it("grants and takes away the platform admin flag of another user", async () => {
      const granted = await adminClient(root).setPlatformAdmin({ userId: user.userId, platformAdmin: true });
      assert.equal(granted.user?.platformAdmin, true);
      assert.equal((await t.client(AuthService, { session: user.token }).getSession({})).user?.platformAdmin, true);
      const { plans } = await adminClient(user).listPlans({});
      assert.ok(plans.length > 0, "the new admin may now use admin procedures");
      const revoked = await adminClient(root).setPlatformAdmin({ userId: user.userId, platformAdmin: false });
      assert.equal(revoked.user?.platformAdmin, false);
      await rejectsWith(adminClient(user).listPlans({}), Code.PermissionDenied, "platform_admin_required");
      const rows = await sql(`select action from activity_events where target_id = ? and action like 'user.platform_admin%' order by created_at`, [user.userId]);
      assert.deepEqual(
        rows.map((r) => r.action),
        ["user.platform_admin_granted", "user.platform_admin_revoked"],
      );
    });

    it("refuses to let an admin take away their own flag", async () => {
      await rejectsWith(adminClient(root).setPlatformAdmin({ userId: root.userId, platformAdmin: false }), Code.FailedPrecondition, "failed_precondition");
      assert.equal((await t.client(AuthService, { session: root.token }).getSession({})).user?.platformAdmin, true);
      // Setting one's own flag to what it already is changes nothing and is allowed.
      const same = await adminClient(root).setPlatformAdmin({ userId: root.userId, platformAdmin: true });
      assert.equal(same.user?.platformAdmin, true);
    });

    it("answers not_found for an unknown user and invalid_argument for a malformed id", async () => {
      await rejectsWith(adminClient(root).setPlatformAdmin({ userId: "00000000-0000-4000-8000-000000000000", platformAdmin: true }), Code.NotFound, "not_found");
      const error = await rejectsWith(adminClient(root).setPlatformAdmin({ userId: "root", platformAdmin: true }), Code.InvalidArgument);
      assert.match(error.rawMessage, /user_id/);
    });

    it("requires platform_admin to be given, so leaving it out takes nothing away", async () => {
      await adminClient(root).setPlatformAdmin({ userId: user.userId, platformAdmin: true });
      const error = await rejectsWith(adminClient(root).setPlatformAdmin({ userId: user.userId }), Code.InvalidArgument);
      assert.match(error.rawMessage, /platform_admin/);
      assert.equal((await t.client(AuthService, { session: user.token }).getSession({})).user?.platformAdmin, true);
      await adminClient(root).setPlatformAdmin({ userId: user.userId, platformAdmin: false });
    });
  });

  describe("verified organizations", () => {
    it("a platform admin marks an organization verified and takes the mark away; members see it; each change is an activity event", async () => {
      const own = t.client(OrganizationsService, { session: user.token });
      assert.equal((await own.getOrganization({ organizationSlug: "users-org" })).organization?.verified, false, "unverified at first");
      const { organization } = await adminClient(root).setOrganizationVerified({ organizationSlug: "users-org", verified: true });
      assert.equal(organization?.verified, true);
      assert.equal(organization?.slug, "users-org");
      assert.equal((await own.getOrganization({ organizationSlug: "users-org" })).organization?.verified, true);
      assert.equal((await own.listOrganizations({})).organizations.find((o) => o.slug === "users-org")?.verified, true);
      // Setting it to what it is changes nothing and records nothing.
      await adminClient(root).setOrganizationVerified({ organizationSlug: "users-org", verified: true });
      await adminClient(root).setOrganizationVerified({ organizationSlug: "users-org", verified: false });
      assert.equal((await own.getOrganization({ organizationSlug: "users-org" })).organization?.verified, false);
      const rows = await sql(
        `select action, actor_user_id, details from activity_events where organization_id = ? and action like 'organization.%verified' order by created_at`,
        [organization!.id],
      );
      assert.deepEqual(
        rows.map((r) => [r.action, r.actor_user_id, r.details]),
        [
          ["organization.verified", root.userId, { slug: "users-org" }],
          ["organization.unverified", root.userId, { slug: "users-org" }],
        ],
      );
    });

    it("answers not_found for an unknown organization and requires verified to be given", async () => {
      await rejectsWith(adminClient(root).setOrganizationVerified({ organizationSlug: "no-such-org", verified: true }), Code.NotFound, "not_found");
      const error = await rejectsWith(adminClient(root).setOrganizationVerified({ organizationSlug: "users-org" }), Code.InvalidArgument);
      assert.match(error.rawMessage, /verified/);
    });
  });

  describe("plans", () => {
    it("lists the configured plans and their limits", async () => {
      const { plans } = await adminClient(root).listPlans({});
      const byName = Object.fromEntries(
        plans.map((p) => [p.name, [p.serverLimit, p.gameOauthClientLimit, p.noteLimit, p.assistantQueriesPerDay, p.assistantToolActionsPerDay]]),
      );
      assert.deepEqual(byName, { free: [3, 2, 5, 50, 20], pro: [25, 20, 1000, 50, 20] });
    });

    it("moves an organization to pro, which raises its server limit", async () => {
      const servers = t.client(ServersService, { session: user.token });
      for (const name of ["One", "Two", "Three"]) await servers.createServer({ organizationSlug: "users-org", name, game: Game.MINECRAFT });
      await rejectsWith(servers.createServer({ organizationSlug: "users-org", name: "Four", game: Game.MINECRAFT }), Code.FailedPrecondition, "plan_limit_reached");
      const { organization } = await adminClient(root).setOrganizationPlan({ organizationSlug: "users-org", plan: "pro" });
      assert.equal(organization?.plan, "pro");
      assert.equal(organization?.slug, "users-org");
      assert.equal(organization?.role, Role.UNSPECIFIED, "the admin is not a member");
      const four = await servers.createServer({ organizationSlug: "users-org", name: "Four", game: Game.MINECRAFT });
      assert.equal(four.server?.name, "Four");
      const { usage, organization: seen } = await t.client(OrganizationsService, { session: user.token }).getOrganization({ organizationSlug: "users-org" });
      assert.equal(seen?.plan, "pro");
      assert.equal(usage?.servers, 4);
      assert.equal(usage?.serverLimit, 25);
      const rows = await sql(`select details from activity_events where action = 'organization.plan_changed' and organization_id = ?`, [organization!.id]);
      assert.deepEqual(
        rows.map((r) => r.details),
        [{ from: "free", to: "pro" }],
      );
    });

    it("keeps usage above a lower plan's limit but allows no more", async () => {
      await adminClient(root).setOrganizationPlan({ organizationSlug: "users-org", plan: "free" });
      const servers = t.client(ServersService, { session: user.token });
      assert.equal((await servers.listServers({ organizationSlug: "users-org" })).servers.length, 4);
      await rejectsWith(servers.createServer({ organizationSlug: "users-org", name: "Five", game: Game.MINECRAFT }), Code.FailedPrecondition, "plan_limit_reached");
    });

    it("refuses an unknown plan (invalid_argument) and an unknown organization (not_found)", async () => {
      const error = await rejectsWith(
        adminClient(root).setOrganizationPlan({ organizationSlug: "users-org", plan: "enterprise" }),
        Code.InvalidArgument,
        "invalid_argument",
      );
      assert.match(error.rawMessage, /plan/);
      // Names of Object's own properties are no plans either (they once passed as "configured").
      for (const plan of ["constructor", "toString", "hasOwnProperty", "__proto__"]) {
        await rejectsWith(adminClient(root).setOrganizationPlan({ organizationSlug: "users-org", plan }), Code.InvalidArgument, "invalid_argument");
      }
      await rejectsWith(adminClient(root).setOrganizationPlan({ organizationSlug: "no-such-org", plan: "pro" }), Code.NotFound, "not_found");
      const { organization } = await t.client(OrganizationsService, { session: user.token }).getOrganization({ organizationSlug: "users-org" });
      assert.equal(organization?.plan, "free");
    });

    it("an organization whose plan was removed from PLANS shows limits of 0 and can add nothing, with a clear refusal", async () => {
      await sql(`update organizations set plan = 'retired' where slug = 'users-org'`);
      try {
        const { usage } = await t.client(OrganizationsService, { session: user.token }).getOrganization({ organizationSlug: "users-org" });
        assert.deepEqual([usage?.servers, usage?.serverLimit, usage?.gameOauthClientLimit], [4, 0, 0]);
        const refused = await rejectsWith(
          t.client(ServersService, { session: user.token }).createServer({ organizationSlug: "users-org", name: "Six", game: Game.MINECRAFT }),
          Code.FailedPrecondition,
          "failed_precondition",
        );
        assert.match(refused.rawMessage, /plan "retired" is no longer offered here.*a platform admin can move it/);
      } finally {
        await adminClient(root).setOrganizationPlan({ organizationSlug: "users-org", plan: "free" });
      }
    });
  });
});
