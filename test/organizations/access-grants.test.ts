import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startTestCore, type TestCore } from "../support/core.ts";
import { joinOrganization } from "../support/fixtures.ts";
import { rejectsWith } from "../support/errors.ts";
import { allActions } from "../support/grants.ts";

type Account = { token: string; userId: string; email: string };

describe("organizations: server access grants", () => {
  let t: TestCore;
  let owner: Account;
  let admin: Account;
  let member: Account;
  let member2: Account;
  let outsider: Account;
  let survival: string;
  let creative: string;
  let foreignServer: string;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const servers = (who: Account) => t.client(ServersService, { session: who.token });
  const visible = async (who: Account) => (await servers(who).listServers({ organizationSlug: "acme" })).servers.map((s) => s.id).sort();

  before(async () => {
    t = await startTestCore();
    owner = await t.signUp("owner@example.com");
    admin = await t.signUp("admin@example.com");
    member = await t.signUp("member@example.com");
    member2 = await t.signUp("member2@example.com");
    outsider = await t.signUp("outsider@example.com");
    await orgs(owner).createOrganization({ name: "Acme", slug: "acme" });
    await joinOrganization(t, owner, "acme", admin, Role.ADMIN);
    await joinOrganization(t, owner, "acme", member, Role.MEMBER);
    await joinOrganization(t, owner, "acme", member2, Role.MEMBER);
    survival = (await servers(owner).createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT })).server!.id;
    creative = (await servers(owner).createServer({ organizationSlug: "acme", name: "Creative", game: Game.HYTALE })).server!.id;
    await orgs(outsider).createOrganization({ name: "Elsewhere", slug: "elsewhere" });
    foreignServer = (await servers(outsider).createServer({ organizationSlug: "elsewhere", name: "Theirs", game: Game.MINECRAFT })).server!.id;
  });
  after(async () => {
    await t?.close();
  });

  describe("create", () => {
    it("lets an owner grant a member a server", async () => {
      const { accessGrant } = await orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: survival, actions: allActions });
      assert.equal(accessGrant?.userId, member.userId);
      assert.equal(accessGrant?.serverId, survival);
      assert.match(accessGrant!.id, /^[0-9a-f-]{36}$/);
      assert.deepEqual(await visible(member), [survival]);
    });

    it("lets an admin grant a member a server", async () => {
      await orgs(admin).createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: creative, actions: allActions });
      assert.deepEqual(await visible(member), [survival, creative].sort());
    });

    it("refuses a member granting (permission_denied), even to themselves, and a non-member (not_found)", async () => {
      await rejectsWith(
        orgs(member).createAccessGrant({ organizationSlug: "acme", userId: member2.userId, serverId: survival, actions: allActions }),
        Code.PermissionDenied,
        "permission_denied",
      );
      await rejectsWith(
        orgs(member2).createAccessGrant({ organizationSlug: "acme", userId: member2.userId, serverId: survival, actions: allActions }),
        Code.PermissionDenied,
        "permission_denied",
      );
      await rejectsWith(
        orgs(outsider).createAccessGrant({ organizationSlug: "acme", userId: outsider.userId, serverId: survival, actions: allActions }),
        Code.NotFound,
        "not_found",
      );
      assert.deepEqual(await visible(member2), []);
    });

    it("refuses a user who is not a member of the organization (not_found)", async () => {
      await rejectsWith(
        orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: outsider.userId, serverId: survival, actions: allActions }),
        Code.NotFound,
        "not_found",
      );
      await rejectsWith(
        orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: "00000000-0000-4000-8000-000000000000", serverId: survival, actions: allActions }),
        Code.NotFound,
        "not_found",
      );
    });

    it("refuses a server of another organization, as if it did not exist (not_found)", async () => {
      const foreign = await rejectsWith(
        orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: member2.userId, serverId: foreignServer, actions: allActions }),
        Code.NotFound,
        "not_found",
      );
      const unknown = await rejectsWith(
        orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: member2.userId, serverId: "00000000-0000-4000-8000-000000000000", actions: allActions }),
        Code.NotFound,
        "not_found",
      );
      assert.equal(foreign.rawMessage, unknown.rawMessage);
      await rejectsWith(servers(member2).getServer({ serverId: foreignServer }), Code.NotFound);
    });

    it("refuses granting to an owner or admin, who already see every server (failed_precondition)", async () => {
      await rejectsWith(
        orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: admin.userId, serverId: survival, actions: allActions }),
        Code.FailedPrecondition,
        "failed_precondition",
      );
      await rejectsWith(
        orgs(admin).createAccessGrant({ organizationSlug: "acme", userId: owner.userId, serverId: survival, actions: allActions }),
        Code.FailedPrecondition,
        "failed_precondition",
      );
    });

    it("refuses a duplicate grant (already_exists)", async () => {
      await rejectsWith(
        orgs(admin).createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: survival, actions: allActions }),
        Code.AlreadyExists,
        "grant_exists",
      );
      const { accessGrants } = await orgs(owner).listAccessGrants({ organizationSlug: "acme", userId: member.userId, serverId: survival });
      assert.equal(accessGrants.length, 1);
    });

    it("validates ids, naming the field", async () => {
      const error = await rejectsWith(
        orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: "nope", serverId: survival, actions: allActions }),
        Code.InvalidArgument,
      );
      assert.match(error.rawMessage, /user_id/);
    });
  });

  describe("list", () => {
    before(async () => {
      await orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: member2.userId, serverId: creative, actions: allActions });
    });

    it("lists all of the organization's grants for an owner or admin", async () => {
      for (const who of [owner, admin]) {
        const { accessGrants } = await orgs(who).listAccessGrants({ organizationSlug: "acme" });
        const pairs = accessGrants.map((g) => `${g.userId}:${g.serverId}`).sort();
        assert.deepEqual(pairs, [`${member.userId}:${survival}`, `${member.userId}:${creative}`, `${member2.userId}:${creative}`].sort());
      }
    });

    it("filters by user and by server", async () => {
      const byUser = await orgs(owner).listAccessGrants({ organizationSlug: "acme", userId: member2.userId });
      assert.deepEqual(
        byUser.accessGrants.map((g) => [g.userId, g.serverId]),
        [[member2.userId, creative]],
      );
      const byServer = await orgs(owner).listAccessGrants({ organizationSlug: "acme", serverId: creative });
      assert.deepEqual(byServer.accessGrants.map((g) => g.userId).sort(), [member.userId, member2.userId].sort());
      const both = await orgs(owner).listAccessGrants({ organizationSlug: "acme", userId: member2.userId, serverId: survival });
      assert.deepEqual(both.accessGrants, []);
    });

    it("does not show another organization's grants", async () => {
      const { accessGrants } = await orgs(owner).listAccessGrants({ organizationSlug: "acme", serverId: foreignServer });
      assert.deepEqual(accessGrants, []);
      assert.deepEqual((await orgs(outsider).listAccessGrants({ organizationSlug: "elsewhere" })).accessGrants, []);
    });

    it("refuses a member (permission_denied) and a non-member (not_found)", async () => {
      await rejectsWith(orgs(member).listAccessGrants({ organizationSlug: "acme" }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(orgs(member).listAccessGrants({ organizationSlug: "acme", userId: member.userId }), Code.PermissionDenied);
      await rejectsWith(orgs(outsider).listAccessGrants({ organizationSlug: "acme" }), Code.NotFound, "not_found");
    });
  });

  describe("revoke", () => {
    it("refuses a member (permission_denied) and a non-member (not_found), and the grant stays", async () => {
      await rejectsWith(
        orgs(member).revokeAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: survival }),
        Code.PermissionDenied,
        "permission_denied",
      );
      await rejectsWith(orgs(outsider).revokeAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: survival }), Code.NotFound, "not_found");
      assert.deepEqual(await visible(member), [survival, creative].sort());
    });

    it("lets an admin revoke: the member no longer sees the server", async () => {
      await orgs(admin).revokeAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: survival });
      assert.deepEqual(await visible(member), [creative]);
      await rejectsWith(servers(member).getServer({ serverId: survival }), Code.PermissionDenied, "permission_denied");
      const { accessGrants } = await orgs(owner).listAccessGrants({ organizationSlug: "acme", userId: member.userId });
      assert.deepEqual(
        accessGrants.map((g) => g.serverId),
        [creative],
      );
    });

    it("lets an owner revoke; a grant that does not exist is not_found", async () => {
      await orgs(owner).revokeAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: creative });
      assert.deepEqual(await visible(member), []);
      await rejectsWith(orgs(owner).revokeAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: creative }), Code.NotFound, "not_found");
      // member2's grant on the same server is untouched.
      assert.deepEqual(await visible(member2), [creative]);
    });
  });
});
