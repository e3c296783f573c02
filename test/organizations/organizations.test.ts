import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { acmeWithMembers } from "../support/fixtures.ts";
import { startTestCore, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

describe("organizations: create, list, get, rename, delete", () => {
  let t: TestCore;
  let owner: { token: string; userId: string; email: string };
  let admin: { token: string; userId: string; email: string };
  let member: { token: string; userId: string; email: string };
  let outsider: { token: string; userId: string; email: string };
  const orgs = (who: { token: string }) => t.client(OrganizationsService, { session: who.token });

  before(async () => {
    t = await startTestCore();
    ({ owner, admin, member, outsider } = await acmeWithMembers(t, "Acme Games"));
  });
  after(async () => {
    await t?.close();
  });

  describe("create", () => {
    it("creates an organization with the caller as owner, on the default plan", async () => {
      const { organization } = await orgs(outsider).createOrganization({ name: "Outsiders", slug: "out-siders-2" });
      assert.equal(organization?.slug, "out-siders-2");
      assert.equal(organization?.name, "Outsiders");
      assert.equal(organization?.plan, "free");
      assert.equal(organization?.role, Role.OWNER);
      assert.match(organization!.id, /^[0-9a-f-]{36}$/);
      const { members } = await orgs(outsider).listMembers({ organizationSlug: "out-siders-2" });
      assert.deepEqual(
        members.map((m) => [m.email, m.role]),
        [[outsider.email, Role.OWNER]],
      );
    });

    it("refuses slugs that break the pattern, naming the field", async () => {
      for (const slug of ["ab", "Acme", "-acme", "acme-", "ac--me", "ac me", "ac_me", "acmé", "a".repeat(41), ""]) {
        const error = await rejectsWith(orgs(outsider).createOrganization({ name: "Bad", slug }), Code.InvalidArgument);
        assert.match(error.rawMessage, /slug/, `slug ${JSON.stringify(slug)}`);
      }
    });

    it("refuses a bad name, naming the field", async () => {
      for (const name of ["", " padded", "x".repeat(81)]) {
        const error = await rejectsWith(orgs(outsider).createOrganization({ name, slug: "fine-slug" }), Code.InvalidArgument);
        assert.match(error.rawMessage, /name/);
      }
    });

    it("refuses a reserved slug as taken", async () => {
      for (const slug of ["admin", "api", "settings"]) {
        await rejectsWith(orgs(outsider).createOrganization({ name: "Sneaky", slug }), Code.AlreadyExists, "slug_taken");
      }
      const { organizations } = await orgs(outsider).listOrganizations({});
      assert.ok(!organizations.some((o) => o.slug === "admin"));
    });

    it("refuses a slug that is taken, even by an organization the caller cannot see", async () => {
      await rejectsWith(orgs(outsider).createOrganization({ name: "Copy", slug: "acme" }), Code.AlreadyExists, "slug_taken");
      const { organization } = await orgs(owner).getOrganization({ organizationSlug: "acme" });
      assert.equal(organization?.name, "Acme Games");
    });

    it("refuses an anonymous caller", async () => {
      await rejectsWith(t.client(OrganizationsService).createOrganization({ name: "Anon", slug: "anon" }), Code.Unauthenticated);
    });
  });

  describe("list and get", () => {
    it("lists only the caller's organizations, with the caller's role in each", async () => {
      await orgs(owner).createOrganization({ name: "Beta", slug: "beta" });
      const mine = await orgs(owner).listOrganizations({});
      assert.deepEqual(
        mine.organizations.map((o) => [o.slug, o.role]),
        [
          ["acme", Role.OWNER],
          ["beta", Role.OWNER],
        ],
      );
      const theirs = await orgs(member).listOrganizations({});
      assert.deepEqual(
        theirs.organizations.map((o) => [o.slug, o.role]),
        [["acme", Role.MEMBER]],
      );
      const alone = await t.signUp("alone@example.com");
      assert.deepEqual((await orgs(alone).listOrganizations({})).organizations, []);
    });

    it("gets an organization for any member, with its plan usage", async () => {
      for (const [who, role] of [
        [owner, Role.OWNER],
        [admin, Role.ADMIN],
        [member, Role.MEMBER],
      ] as const) {
        const res = await orgs(who).getOrganization({ organizationSlug: "acme" });
        assert.equal(res.organization?.slug, "acme");
        assert.equal(res.organization?.role, role);
        assert.equal(res.usage?.servers, 0);
        assert.equal(res.usage?.serverLimit, 3);
        assert.equal(res.usage?.gameOauthClientLimit, 2);
      }
    });

    it("answers a non-member with the same not_found for an existing and a non-existent slug", async () => {
      const existing = await rejectsWith(orgs(outsider).getOrganization({ organizationSlug: "acme" }), Code.NotFound, "not_found");
      const missing = await rejectsWith(orgs(outsider).getOrganization({ organizationSlug: "acmf" }), Code.NotFound, "not_found");
      assert.equal(existing.rawMessage.replace("acme", "SLUG"), missing.rawMessage.replace("acmf", "SLUG"));
      await rejectsWith(orgs(outsider).listMembers({ organizationSlug: "acme" }), Code.NotFound, "not_found");
    });
  });

  describe("rename", () => {
    it("lets an owner and an admin rename", async () => {
      const byOwner = await orgs(owner).updateOrganization({ organizationSlug: "acme", name: "Acme Studios" });
      assert.equal(byOwner.organization?.name, "Acme Studios");
      const byAdmin = await orgs(admin).updateOrganization({ organizationSlug: "acme", name: "Acme Games" });
      assert.equal(byAdmin.organization?.name, "Acme Games");
      assert.equal(byAdmin.organization?.slug, "acme");
      const { organization } = await orgs(member).getOrganization({ organizationSlug: "acme" });
      assert.equal(organization?.name, "Acme Games");
    });

    it("refuses a member (permission_denied) and a non-member (not_found), and keeps the name", async () => {
      await rejectsWith(orgs(member).updateOrganization({ organizationSlug: "acme", name: "Hacked" }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(orgs(outsider).updateOrganization({ organizationSlug: "acme", name: "Hacked" }), Code.NotFound, "not_found");
      const { organization } = await orgs(owner).getOrganization({ organizationSlug: "acme" });
      assert.equal(organization?.name, "Acme Games");
    });

    it("validates the new name", async () => {
      const error = await rejectsWith(orgs(owner).updateOrganization({ organizationSlug: "acme", name: "trailing " }), Code.InvalidArgument);
      assert.match(error.rawMessage, /name/);
    });
  });

  describe("delete", () => {
    it("refuses an admin and a member (permission_denied) and a non-member (not_found)", async () => {
      await rejectsWith(orgs(admin).deleteOrganization({ organizationSlug: "acme" }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(orgs(member).deleteOrganization({ organizationSlug: "acme" }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(orgs(outsider).deleteOrganization({ organizationSlug: "acme" }), Code.NotFound, "not_found");
      await orgs(member).getOrganization({ organizationSlug: "acme" });
    });

    it("lets the owner delete; then it is gone for everyone and its slug is free again", async () => {
      await orgs(owner).deleteOrganization({ organizationSlug: "acme" });
      for (const who of [owner, admin, member]) {
        await rejectsWith(orgs(who).getOrganization({ organizationSlug: "acme" }), Code.NotFound, "not_found");
        const { organizations } = await orgs(who).listOrganizations({});
        assert.ok(!organizations.some((o) => o.slug === "acme"));
      }
      const rows = await t.orm.em
        .fork()
        .getConnection()
        .execute(`select count(*)::int as n from memberships m join organizations o on o.id = m.organization_id where o.slug = 'acme'`);
      assert.equal(rows[0].n, 0);
      const again = await orgs(outsider).createOrganization({ name: "New Acme", slug: "acme" });
      assert.equal(again.organization?.role, Role.OWNER);
    });
  });
});
