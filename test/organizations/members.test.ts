import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { rejectsWith } from "../support/errors.ts";

import { useMembersCore } from "./members-fixture.ts";

/** Adding members and listing them. Roles, removal and leaving: member-roles.test.ts. */
describe("organizations: members and roles", () => {
  const { core, orgs, roles, join, colleagues, organization } = useMembersCore();

  describe("add", () => {
    it("lets an owner add a verified colleague as an admin and a member at once, by email in any case", async () => {
      const { slug, owner } = await organization();
      const admin = await core().signUp("add-admin@example.com", { name: "Ad Min" });
      const member = await core().signUp("add-member@example.com");
      await colleagues(owner, admin, member);
      const added = await orgs(owner).addMember({ organizationSlug: slug, email: "Add-Admin@Example.com", role: Role.ADMIN });
      assert.equal(added.member?.userId, admin.userId);
      assert.equal(added.member?.email, "add-admin@example.com");
      assert.equal(added.member?.name, "Ad Min");
      assert.equal(added.member?.role, Role.ADMIN);
      assert.equal(added.invitation, undefined);
      await orgs(owner).addMember({ organizationSlug: slug, email: member.email, role: Role.MEMBER });
      const { organizations } = await orgs(member).listOrganizations({});
      assert.deepEqual(
        organizations.map((o) => [o.slug, o.role]).filter(([s]) => s === slug),
        [[slug, Role.MEMBER]],
      );
    });

    it("lets an admin add a member but not an admin", async () => {
      const { slug, owner } = await organization();
      const admin = await core().signUp("adm2@example.com");
      await join(owner, slug, admin, Role.ADMIN);
      const newcomer = await core().signUp("newcomer2@example.com");
      const wouldBeAdmin = await core().signUp("wannabe2@example.com");
      await colleagues(admin, newcomer, wouldBeAdmin);
      const added = await orgs(admin).addMember({ organizationSlug: slug, email: newcomer.email, role: Role.MEMBER });
      assert.equal(added.member?.role, Role.MEMBER);
      await rejectsWith(orgs(admin).addMember({ organizationSlug: slug, email: wouldBeAdmin.email, role: Role.ADMIN }), Code.PermissionDenied, "permission_denied");
      assert.equal((await roles(owner, slug)).has(wouldBeAdmin.email), false);
    });

    it("refuses a member adding anyone, and a non-member as if the organization did not exist", async () => {
      const { slug, owner } = await organization();
      const member = await core().signUp("plain3@example.com");
      const outsider = await core().signUp("outsider3@example.com");
      const someone = await core().signUp("someone3@example.com");
      await join(owner, slug, member, Role.MEMBER);
      await rejectsWith(orgs(member).addMember({ organizationSlug: slug, email: someone.email, role: Role.MEMBER }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(orgs(outsider).addMember({ organizationSlug: slug, email: outsider.email, role: Role.MEMBER }), Code.NotFound, "not_found");
      const members = await roles(owner, slug);
      assert.equal(members.has(someone.email), false);
      assert.equal(members.has(outsider.email), false);
    });

    it("invites an unknown email instead of refusing it; refuses an existing member (already_exists) and the owner role", async () => {
      const { slug, owner } = await organization();
      const member = await core().signUp("dup4@example.com");
      const invited = await orgs(owner).addMember({ organizationSlug: slug, email: "nobody@example.com", role: Role.MEMBER });
      assert.equal(invited.member, undefined);
      assert.equal(invited.invitation?.email, "nobody@example.com");
      await join(owner, slug, member, Role.MEMBER);
      await rejectsWith(orgs(owner).addMember({ organizationSlug: slug, email: "DUP4@example.com", role: Role.ADMIN }), Code.AlreadyExists, "already_member");
      await rejectsWith(orgs(owner).addMember({ organizationSlug: slug, email: owner.email, role: Role.MEMBER }), Code.AlreadyExists);
      assert.equal((await roles(owner, slug)).get(member.email), Role.MEMBER);
      const other = await core().signUp("other4@example.com");
      for (const role of [Role.OWNER, Role.UNSPECIFIED]) {
        const error = await rejectsWith(orgs(owner).addMember({ organizationSlug: slug, email: other.email, role }), Code.InvalidArgument);
        assert.match(error.rawMessage, /role/);
      }
      const bad = await rejectsWith(orgs(owner).addMember({ organizationSlug: slug, email: "not-an-email", role: Role.MEMBER }), Code.InvalidArgument);
      assert.match(bad.rawMessage, /email/);
    });
  });

  describe("list", () => {
    it("lets any member list the members, and refuses a non-member with not_found", async () => {
      const { slug, owner } = await organization();
      const admin = await core().signUp("list-admin@example.com");
      const member = await core().signUp("list-member@example.com");
      const outsider = await core().signUp("list-outsider@example.com");
      await join(owner, slug, admin, Role.ADMIN);
      await join(owner, slug, member, Role.MEMBER);
      const expected = [
        [owner.email, Role.OWNER],
        [admin.email, Role.ADMIN],
        [member.email, Role.MEMBER],
      ];
      for (const who of [owner, admin, member]) {
        const { members } = await orgs(who).listMembers({ organizationSlug: slug });
        assert.deepEqual(
          members.map((m) => [m.email, m.role]),
          expected,
        );
      }
      await rejectsWith(orgs(outsider).listMembers({ organizationSlug: slug }), Code.NotFound, "not_found");
    });
  });
});
