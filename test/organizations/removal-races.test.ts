/**
 * Granting, and deciding a member's access request, while the member is being removed: whichever
 * comes first, a removed member keeps no grant (re-added, they would otherwise get it back), and
 * neither call fails as a deadlock.
 */
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startTestCore, type TestCore } from "../support/core.ts";
import { joinOrganization } from "../support/fixtures.ts";
import { allActions } from "../support/grants.ts";

type Account = { token: string; userId: string; email: string };

describe("organizations: grants and requests racing a removal", function () {
  this.timeout(120_000);
  let t: TestCore;
  let owner: Account;
  let admin: Account;
  let server: string;
  let n = 0;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const acme = { organizationSlug: "acme" };

  before(async () => {
    t = await startTestCore();
    owner = await t.signUp("owner@example.com");
    admin = await t.signUp("admin@example.com");
    await orgs(owner).createOrganization({ name: "Acme", slug: "acme" });
    await joinOrganization(t, owner, acme.organizationSlug, admin, Role.ADMIN);
    server = (await t.client(ServersService, { session: owner.token }).createServer({ ...acme, name: "Survival", game: Game.MINECRAFT })).server!.id;
  });
  after(async () => {
    await t?.close();
  });

  async function newMember(): Promise<Account> {
    const member = await t.signUp(`member${++n}@example.com`);
    await joinOrganization(t, owner, acme.organizationSlug, member, Role.MEMBER);
    return member;
  }

  /** Both settle; a refusal is a domain answer (not found, failed precondition), never internal. */
  async function race(calls: Promise<unknown>[]): Promise<void> {
    for (const result of await Promise.allSettled(calls)) {
      if (result.status === "rejected") {
        const code = ConnectError.from(result.reason).code;
        assert.ok(code === Code.NotFound || code === Code.FailedPrecondition, `refused with ${Code[code]}: ${String(result.reason)}`);
      }
    }
  }

  async function grantsOf(userId: string): Promise<number> {
    const [row] = await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from access_grants where user_id = ?`, [userId]);
    return row.n;
  }

  it("a grant made while its member is removed does not outlive the membership", async () => {
    for (let i = 0; i < 12; i++) {
      const member = await newMember();
      await race([
        orgs(admin).createAccessGrant({ ...acme, userId: member.userId, serverId: server, actions: allActions }),
        orgs(owner).removeMember({ ...acme, userId: member.userId }),
      ]);
      assert.equal(await grantsOf(member.userId), 0, `round ${i + 1}: the removed member kept a grant`);
    }
  });

  it("an approval or a denial decided while the member is removed: no grant left, no deadlock", async () => {
    for (let i = 0; i < 12; i++) {
      const member = await newMember();
      const { accessRequest } = await orgs(member).createAccessRequest({ ...acme, serverId: server, actions: allActions, reason: "" });
      const decide =
        i % 2
          ? orgs(admin).approveAccessRequest({ ...acme, requestId: accessRequest!.id, actions: [] })
          : orgs(admin).denyAccessRequest({ ...acme, requestId: accessRequest!.id, reason: "no" });
      await race([decide, orgs(owner).removeMember({ ...acme, userId: member.userId })]);
      assert.equal(await grantsOf(member.userId), 0, `round ${i + 1}: the removed member kept a grant`);
    }
  });

  it("an admin being removed cannot leave behind an organization key, an invitation or an access request", async () => {
    for (let i = 0; i < 8; i++) {
      const leaving = await t.signUp(`leaving${i}@example.com`);
      await joinOrganization(t, owner, acme.organizationSlug, leaving, Role.ADMIN);
      await race([
        orgs(leaving).createOrganizationApiKey({ ...acme, name: `ci ${i}` }),
        orgs(leaving).inviteMember({ ...acme, email: `friend${i}@example.com`, role: Role.MEMBER }),
        orgs(owner).removeMember({ ...acme, userId: leaving.userId }),
      ]);
      const sql = t.orm.em.fork().getConnection();
      const [keys] = await sql.execute(`select count(*)::int as n from api_keys where user_id = ? and organization_id is not null and revoked_at is null`, [
        leaving.userId,
      ]);
      const [invites] = await sql.execute(`select count(*)::int as n from invitations where invited_by_id = ? and accepted_at is null and revoked_at is null`, [
        leaving.userId,
      ]);
      assert.deepEqual([keys.n, invites.n], [0, 0], `round ${i + 1}: something of the removed admin's still works`);
    }
    for (let i = 0; i < 8; i++) {
      const member = await newMember();
      await race([
        orgs(member).createAccessRequest({ ...acme, serverId: server, actions: allActions, reason: "" }),
        orgs(owner).removeMember({ ...acme, userId: member.userId }),
      ]);
      const [pending] = await t.orm.em
        .fork()
        .getConnection()
        .execute(`select count(*)::int as n from access_requests where user_id = ? and status = 'pending'`, [member.userId]);
      assert.equal(pending.n, 0, `round ${i + 1}: a removed member's request is pending`);
    }
  });
});
