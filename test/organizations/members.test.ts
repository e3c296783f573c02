import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startTestCore, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { allActions } from "../support/grants.ts";
import { joinOrganization, type Account } from "../support/fixtures.ts";

describe("organizations: members and roles", () => {
  let t: TestCore;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const roles = async (who: Account, slug: string) =>
    new Map((await orgs(who).listMembers({ organizationSlug: slug })).members.map((m) => [m.email, m.role]));

  /** `who` joins as a new person does: verified, invited by `by`, accepting. */
  const join = (by: Account, slug: string, who: Account, role: Role) => joinOrganization(t, by, slug, who, role);
  /**
   * Makes `people` verified colleagues of `of` (in a small organization of theirs), whom `of` can
   * already see in a members list and so may add at once.
   */
  let lobbies = 0;
  async function colleagues(of: Account, ...people: Account[]): Promise<void> {
    const slug = `lobby-${++lobbies}`;
    await orgs(of).createOrganization({ name: `Lobby ${lobbies}`, slug });
    for (const who of people) await join(of, slug, who, Role.MEMBER);
  }

  /** A fresh organization owned by a fresh account, so each test starts from a known state. */
  let counter = 0;
  async function organization(): Promise<{ slug: string; owner: Account }> {
    const n = ++counter;
    const owner = await t.signUp(`owner${n}@example.com`);
    const slug = `team-${n}`;
    await orgs(owner).createOrganization({ name: `Team ${n}`, slug });
    return { slug, owner };
  }

  before(async () => {
    t = await startTestCore();
  });
  after(async () => {
    await t?.close();
  });

  describe("add", () => {
    it("lets an owner add a verified colleague as an admin and a member at once, by email in any case", async () => {
      const { slug, owner } = await organization();
      const admin = await t.signUp("add-admin@example.com", { name: "Ad Min" });
      const member = await t.signUp("add-member@example.com");
      await colleagues(owner, admin, member);
      const added = await orgs(owner).addMember({ organizationSlug: slug, email: "Add-Admin@Example.com", role: Role.ADMIN });
      assert.equal(added.member?.userId, admin.userId);
      assert.equal(added.member?.email, "add-admin@example.com");
      assert.equal(added.member?.name, "Ad Min");
      assert.equal(added.member?.role, Role.ADMIN);
      assert.equal(added.invitation, undefined);
      await orgs(owner).addMember({ organizationSlug: slug, email: member.email, role: Role.MEMBER });
      const { organizations } = await orgs(member).listOrganizations({});
      assert.deepEqual(organizations.map((o) => [o.slug, o.role]).filter(([s]) => s === slug), [[slug, Role.MEMBER]]);
    });

    it("lets an admin add a member but not an admin", async () => {
      const { slug, owner } = await organization();
      const admin = await t.signUp("adm2@example.com");
      await join(owner, slug, admin, Role.ADMIN);
      const newcomer = await t.signUp("newcomer2@example.com");
      const wouldBeAdmin = await t.signUp("wannabe2@example.com");
      await colleagues(admin, newcomer, wouldBeAdmin);
      const added = await orgs(admin).addMember({ organizationSlug: slug, email: newcomer.email, role: Role.MEMBER });
      assert.equal(added.member?.role, Role.MEMBER);
      await rejectsWith(
        orgs(admin).addMember({ organizationSlug: slug, email: wouldBeAdmin.email, role: Role.ADMIN }),
        Code.PermissionDenied,
        "permission_denied",
      );
      assert.equal((await roles(owner, slug)).has(wouldBeAdmin.email), false);
    });

    it("refuses a member adding anyone, and a non-member as if the organization did not exist", async () => {
      const { slug, owner } = await organization();
      const member = await t.signUp("plain3@example.com");
      const outsider = await t.signUp("outsider3@example.com");
      const someone = await t.signUp("someone3@example.com");
      await join(owner, slug, member, Role.MEMBER);
      await rejectsWith(
        orgs(member).addMember({ organizationSlug: slug, email: someone.email, role: Role.MEMBER }),
        Code.PermissionDenied,
        "permission_denied",
      );
      await rejectsWith(
        orgs(outsider).addMember({ organizationSlug: slug, email: outsider.email, role: Role.MEMBER }),
        Code.NotFound,
        "not_found",
      );
      const members = await roles(owner, slug);
      assert.equal(members.has(someone.email), false);
      assert.equal(members.has(outsider.email), false);
    });

    it("invites an unknown email instead of refusing it; refuses an existing member (already_exists) and the owner role", async () => {
      const { slug, owner } = await organization();
      const member = await t.signUp("dup4@example.com");
      const invited = await orgs(owner).addMember({ organizationSlug: slug, email: "nobody@example.com", role: Role.MEMBER });
      assert.equal(invited.member, undefined);
      assert.equal(invited.invitation?.email, "nobody@example.com");
      await join(owner, slug, member, Role.MEMBER);
      await rejectsWith(
        orgs(owner).addMember({ organizationSlug: slug, email: "DUP4@example.com", role: Role.ADMIN }),
        Code.AlreadyExists,
        "already_member",
      );
      await rejectsWith(orgs(owner).addMember({ organizationSlug: slug, email: owner.email, role: Role.MEMBER }), Code.AlreadyExists);
      assert.equal((await roles(owner, slug)).get(member.email), Role.MEMBER);
      const other = await t.signUp("other4@example.com");
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
      const admin = await t.signUp("list-admin@example.com");
      const member = await t.signUp("list-member@example.com");
      const outsider = await t.signUp("list-outsider@example.com");
      await join(owner, slug, admin, Role.ADMIN);
      await join(owner, slug, member, Role.MEMBER);
      const expected = [
        [owner.email, Role.OWNER],
        [admin.email, Role.ADMIN],
        [member.email, Role.MEMBER],
      ];
      for (const who of [owner, admin, member]) {
        const { members } = await orgs(who).listMembers({ organizationSlug: slug });
        assert.deepEqual(members.map((m) => [m.email, m.role]), expected);
      }
      await rejectsWith(orgs(outsider).listMembers({ organizationSlug: slug }), Code.NotFound, "not_found");
    });
  });

  describe("change role", () => {
    it("lets an owner promote and demote", async () => {
      const { slug, owner } = await organization();
      const member = await t.signUp("promote5@example.com");
      await join(owner, slug, member, Role.MEMBER);
      const promoted = await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: member.userId, role: Role.ADMIN });
      assert.equal(promoted.member?.role, Role.ADMIN);
      assert.equal((await orgs(member).getOrganization({ organizationSlug: slug })).organization?.role, Role.ADMIN);
      await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: member.userId, role: Role.MEMBER });
      assert.equal((await roles(owner, slug)).get(member.email), Role.MEMBER);
    });

    it("refuses an admin and a member changing roles, and a non-member with not_found", async () => {
      const { slug, owner } = await organization();
      const admin = await t.signUp("role-admin6@example.com");
      const member = await t.signUp("role-member6@example.com");
      const outsider = await t.signUp("role-outsider6@example.com");
      await join(owner, slug, admin, Role.ADMIN);
      await join(owner, slug, member, Role.MEMBER);
      await rejectsWith(
        orgs(admin).updateMemberRole({ organizationSlug: slug, userId: member.userId, role: Role.ADMIN }),
        Code.PermissionDenied,
        "permission_denied",
      );
      await rejectsWith(
        orgs(admin).updateMemberRole({ organizationSlug: slug, userId: admin.userId, role: Role.OWNER }),
        Code.PermissionDenied,
        "permission_denied",
      );
      await rejectsWith(
        orgs(member).updateMemberRole({ organizationSlug: slug, userId: member.userId, role: Role.ADMIN }),
        Code.PermissionDenied,
        "permission_denied",
      );
      await rejectsWith(
        orgs(outsider).updateMemberRole({ organizationSlug: slug, userId: member.userId, role: Role.ADMIN }),
        Code.NotFound,
        "not_found",
      );
      const current = await roles(owner, slug);
      assert.equal(current.get(admin.email), Role.ADMIN);
      assert.equal(current.get(member.email), Role.MEMBER);
    });

    it("refuses changing the role of someone who is not a member (not_found)", async () => {
      const { slug, owner } = await organization();
      const stranger = await t.signUp("stranger7@example.com");
      await rejectsWith(
        orgs(owner).updateMemberRole({ organizationSlug: slug, userId: stranger.userId, role: Role.ADMIN }),
        Code.NotFound,
        "not_found",
      );
    });

    it("refuses to demote the last owner; with two owners one can step down", async () => {
      const { slug, owner } = await organization();
      for (const role of [Role.ADMIN, Role.MEMBER]) {
        await rejectsWith(
          orgs(owner).updateMemberRole({ organizationSlug: slug, userId: owner.userId, role }),
          Code.FailedPrecondition,
          "last_owner",
        );
      }
      assert.equal((await roles(owner, slug)).get(owner.email), Role.OWNER);
      const second = await t.signUp("second-owner8@example.com");
      await join(owner, slug, second, Role.ADMIN);
      await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: second.userId, role: Role.OWNER });
      const stepped = await orgs(owner).updateMemberRole({ organizationSlug: slug, userId: owner.userId, role: Role.ADMIN });
      assert.equal(stepped.member?.role, Role.ADMIN);
      // The former owner is now an admin: no longer allowed to change roles.
      await rejectsWith(
        orgs(owner).updateMemberRole({ organizationSlug: slug, userId: second.userId, role: Role.ADMIN }),
        Code.PermissionDenied,
      );
      // And the new sole owner cannot be demoted either.
      await rejectsWith(
        orgs(second).updateMemberRole({ organizationSlug: slug, userId: second.userId, role: Role.MEMBER }),
        Code.FailedPrecondition,
        "last_owner",
      );
      const current = await roles(second, slug);
      assert.equal(current.get(second.email), Role.OWNER);
      assert.equal(current.get(owner.email), Role.ADMIN);
    });

    it("leaves one owner when two owners demote each other at the same time", async () => {
      const { slug, owner } = await organization();
      const second = await t.signUp("race-owner@example.com");
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
      const admin = await t.signUp("rm-admin9@example.com");
      const admin2 = await t.signUp("rm-admin9b@example.com");
      const member = await t.signUp("rm-member9@example.com");
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
      const admin = await t.signUp("rm-admin10@example.com");
      const member = await t.signUp("rm-member10@example.com");
      const member2 = await t.signUp("rm-member10b@example.com");
      const outsider = await t.signUp("rm-outsider10@example.com");
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
      const admin = await t.signUp("leave-admin11@example.com");
      const member = await t.signUp("leave-member11@example.com");
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
      const second = await t.signUp("co-owner12@example.com");
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
      const member = await t.signUp("granted13@example.com");
      await join(owner, slug, member, Role.MEMBER);
      const servers = t.client(ServersService, { session: owner.token });
      const { server } = await servers.createServer({ organizationSlug: slug, name: "Survival", game: Game.MINECRAFT });
      await orgs(owner).createAccessGrant({ organizationSlug: slug, userId: member.userId, serverId: server!.id, actions: allActions });
      const memberServers = t.client(ServersService, { session: member.token });
      assert.deepEqual((await memberServers.listServers({ organizationSlug: slug })).servers.map((s) => s.id), [server!.id]);

      await orgs(owner).removeMember({ organizationSlug: slug, userId: member.userId });
      assert.deepEqual((await orgs(owner).listAccessGrants({ organizationSlug: slug, userId: member.userId })).accessGrants, []);
      const rows = await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from access_grants where user_id = ?`, [member.userId]);
      assert.equal(rows[0].n, 0);

      await join(owner, slug, member, Role.MEMBER);
      assert.deepEqual((await memberServers.listServers({ organizationSlug: slug })).servers, []);
      await rejectsWith(memberServers.getServer({ serverId: server!.id }), Code.PermissionDenied);
    });
  });
});
