import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { rejectsWith } from "../support/errors.ts";
import { allActions } from "../support/grants.ts";

import { useMembersCore } from "./members-fixture.ts";

/** Changing members' roles, removing members and leaving: the last owner always stays. */
describe("organizations: members and roles", () => {
  const { core, orgs, roles, join, organization } = useMembersCore();

  describe("change role", () => {
    it("lets an owner promote and demote", async () => {
      const { slug, owner } = await organization();
      const member = await core().signUp("promote5@example.com");
      await join(owner, slug, member, Role.MEMBER);
      const promoted = await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: member.userId, role: Role.ADMIN });
      assert.equal(promoted.member?.role, Role.ADMIN);
      assert.equal((await orgs(member).getOrganization({ organizationSlug: slug })).organization?.role, Role.ADMIN);
      await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: member.userId, role: Role.MEMBER });
      assert.equal((await roles(owner, slug)).get(member.email), Role.MEMBER);
    });

    it("refuses an admin and a member changing roles, and a non-member with not_found", async () => {
      const { slug, owner } = await organization();
      const admin = await core().signUp("role-admin6@example.com");
      const member = await core().signUp("role-member6@example.com");
      const outsider = await core().signUp("role-outsider6@example.com");
      await join(owner, slug, admin, Role.ADMIN);
      await join(owner, slug, member, Role.MEMBER);
      await rejectsWith(orgs(admin).updateMemberRole({ organizationSlug: slug, userId: member.userId, role: Role.ADMIN }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(orgs(admin).updateMemberRole({ organizationSlug: slug, userId: admin.userId, role: Role.OWNER }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(orgs(member).updateMemberRole({ organizationSlug: slug, userId: member.userId, role: Role.ADMIN }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(orgs(outsider).updateMemberRole({ organizationSlug: slug, userId: member.userId, role: Role.ADMIN }), Code.NotFound, "not_found");
      const current = await roles(owner, slug);
      assert.equal(current.get(admin.email), Role.ADMIN);
      assert.equal(current.get(member.email), Role.MEMBER);
    });

    it("refuses changing the role of someone who is not a member (not_found)", async () => {
      const { slug, owner } = await organization();
      const stranger = await core().signUp("stranger7@example.com");
      await rejectsWith(orgs(owner).updateMemberRole({ organizationSlug: slug, userId: stranger.userId, role: Role.ADMIN }), Code.NotFound, "not_found");
    });

    it("refuses to demote the last owner; with two owners one can step down", async () => {
      const { slug, owner } = await organization();
      for (const role of [Role.ADMIN, Role.MEMBER]) {
        await rejectsWith(orgs(owner).updateMemberRole({ organizationSlug: slug, userId: owner.userId, role }), Code.FailedPrecondition, "last_owner");
      }
      assert.equal((await roles(owner, slug)).get(owner.email), Role.OWNER);
      const second = await core().signUp("second-owner8@example.com");
      await join(owner, slug, second, Role.ADMIN);
      await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: second.userId, role: Role.OWNER });
      const stepped = await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: owner.userId, role: Role.ADMIN });
      assert.equal(stepped.member?.role, Role.ADMIN);
      // The former owner is now an admin: no longer allowed to change roles.
      await rejectsWith(orgs(owner).updateMemberRole({ organizationSlug: slug, userId: second.userId, role: Role.ADMIN }), Code.PermissionDenied);
      // And the new sole owner cannot be demoted either.
      await rejectsWith(orgs(second).updateMemberRole({ organizationSlug: slug, userId: second.userId, role: Role.MEMBER }), Code.FailedPrecondition, "last_owner");
      const current = await roles(second, slug);
      assert.equal(current.get(second.email), Role.OWNER);
      assert.equal(current.get(owner.email), Role.ADMIN);
    });

    it("leaves one owner when two owners demote each other at the same time", async () => {
      const { slug, owner } = await organization();
      const second = await core().signUp("race-owner@example.com");
      await join(owner, slug, second, Role.ADMIN);
      await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: second.userId, role: Role.OWNER });
      const results = await Promise.allSettled([
        orgs(owner).updateMemberRole({ organizationSlug: slug, userId: second.userId, role: Role.MEMBER }),
        orgs(second).updateMemberRole({ organizationSlug: slug, userId: owner.userId, role: Role.MEMBER }),
      ]);
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
      const rejected = results.find((r) => r.status === "rejected")!;
      const code = ConnectError.from(rejected.reason).code;
      assert.ok(code === Code.FailedPrecondition || code === Code.PermissionDenied, `refused with ${Code[code]}`);
      const current = await roles(owner, slug);
      assert.equal([...current.values()].filter((role) => role === Role.OWNER).length, 1);
      assert.equal(current.size, 2, "both are still members");
    });
  });

  describe("remove and leave", () => {
    it("lets an admin remove a member, but not an admin or an owner", async () => {
      const { slug, owner } = await organization();
      const admin = await core().signUp("rm-admin9@example.com");
      const admin2 = await core().signUp("rm-admin9b@example.com");
      const member = await core().signUp("rm-member9@example.com");
      await join(owner, slug, admin, Role.ADMIN);
      await join(owner, slug, admin2, Role.ADMIN);
      await join(owner, slug, member, Role.MEMBER);
      await orgs(admin).removeMember({ organizationSlug: slug, userId: member.userId });
      await rejectsWith(orgs(member).getOrganization({ organizationSlug: slug }), Code.NotFound);
      await rejectsWith(orgs(admin).removeMember({ organizationSlug: slug, userId: admin2.userId }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(orgs(admin).removeMember({ organizationSlug: slug, userId: owner.userId }), Code.PermissionDenied, "permission_denied");
      const current = await roles(owner, slug);
      assert.deepEqual([...current.keys()], [owner.email, admin.email, admin2.email]);
    });

    it("lets an owner remove an admin; refuses a member removing anyone and a non-member", async () => {
      const { slug, owner } = await organization();
      const admin = await core().signUp("rm-admin10@example.com");
      const member = await core().signUp("rm-member10@example.com");
      const member2 = await core().signUp("rm-member10b@example.com");
      const outsider = await core().signUp("rm-outsider10@example.com");
      await join(owner, slug, admin, Role.ADMIN);
      await join(owner, slug, member, Role.MEMBER);
      await join(owner, slug, member2, Role.MEMBER);
      await rejectsWith(orgs(member).removeMember({ organizationSlug: slug, userId: member2.userId }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(orgs(outsider).removeMember({ organizationSlug: slug, userId: member2.userId }), Code.NotFound, "not_found");
      await orgs(owner).removeMember({ organizationSlug: slug, userId: admin.userId });
      const current = await roles(owner, slug);
      assert.equal(current.has(admin.email), false);
      assert.equal(current.get(member2.email), Role.MEMBER);
      await rejectsWith(orgs(owner).removeMember({ organizationSlug: slug, userId: outsider.userId }), Code.NotFound, "not_found");
    });

    it("lets a member or an admin leave", async () => {
      const { slug, owner } = await organization();
      const admin = await core().signUp("leave-admin11@example.com");
      const member = await core().signUp("leave-member11@example.com");
      await join(owner, slug, admin, Role.ADMIN);
      await join(owner, slug, member, Role.MEMBER);
      await orgs(member).removeMember({ organizationSlug: slug, userId: member.userId });
      await orgs(admin).removeMember({ organizationSlug: slug, userId: admin.userId });
      assert.deepEqual((await orgs(member).listOrganizations({})).organizations, []);
      assert.deepEqual((await orgs(admin).listOrganizations({})).organizations, []);
      assert.deepEqual([...(await roles(owner, slug)).keys()], [owner.email]);
    });

    it("refuses the last owner leaving or being removed; a second owner makes both possible", async () => {
      const { slug, owner } = await organization();
      await rejectsWith(orgs(owner).removeMember({ organizationSlug: slug, userId: owner.userId }), Code.FailedPrecondition, "last_owner");
      const second = await core().signUp("co-owner12@example.com");
      await join(owner, slug, second, Role.ADMIN);
      await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: second.userId, role: Role.OWNER });
      // An owner may remove another owner while one remains.
      await orgs(second).removeMember({ organizationSlug: slug, userId: owner.userId });
      assert.deepEqual((await orgs(owner).listOrganizations({})).organizations, []);
      await rejectsWith(orgs(second).removeMember({ organizationSlug: slug, userId: second.userId }), Code.FailedPrecondition, "last_owner");
      assert.deepEqual([...(await roles(second, slug)).entries()], [[second.email, Role.OWNER]]);
    });

    it("deletes a removed member's access grants, so re-adding them grants nothing", async () => {
      const { slug, owner } = await organization();
      const member = await core().signUp("granted13@example.com");
      await join(owner, slug, member, Role.MEMBER);
      const servers = core().client(ServersService, { session: owner.token });
      const { server } = await servers.createServer({ organizationSlug: slug, name: "Survival", game: Game.MINECRAFT });
      await orgs(owner).createAccessGrant({ organizationSlug: slug, userId: member.userId, serverId: server!.id, actions: allActions });
      const memberServers = core().client(ServersService, { session: member.token });
      assert.deepEqual(
        (await memberServers.listServers({ organizationSlug: slug })).servers.map((s) => s.id),
        [server!.id],
      );

      await orgs(owner).removeMember({ organizationSlug: slug, userId: member.userId });
      assert.deepEqual((await orgs(owner).listAccessGrants({ organizationSlug: slug, userId: member.userId })).accessGrants, []);
      const rows = await core().orm.em.fork().getConnection().execute(`select count(*)::int as n from access_grants where user_id = ?`, [member.userId]);
      assert.equal(rows[0].n, 0);

      await join(owner, slug, member, Role.MEMBER);
      assert.deepEqual((await memberServers.listServers({ organizationSlug: slug })).servers, []);
      await rejectsWith(memberServers.getServer({ serverId: server!.id }), Code.PermissionDenied);
    });
  });
});
