import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { AccessRequestStatus, Role, ServerAction } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { NotificationKind, NotificationsService } from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { acmeWithMembers, joinOrganization, type Account } from "../support/fixtures.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

const config = { ...testConfig, plans: { free: { ...testConfig.plans.free, servers: 50, gameOAuthClients: 2 } } };

/**
 * Access requests: a member asks, an owner or admin approves (only ever narrowing) or denies,
 * the member may cancel while it is pending; each decision happens once, and the people concerned
 * are told by notification.
 */
describe("organizations: access requests", function () {
  this.timeout(60_000);
  let t: TestCore;
  let owner: Account;
  let admin: Account;
  let member: Account;
  let member2: Account;
  let outsider: Account;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const newServer = async (name: string) =>
    (await t.client(ServersService, { session: owner.token }).createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT })).server!.id;
  const inMinutes = (minutes: number) => timestampFromDate(new Date(t.clock.now().getTime() + minutes * 60_000));
  const ask = (serverId: string, who = member, extra: { actions?: ServerAction[]; maxUses?: number; expiresAt?: ReturnType<typeof inMinutes> } = {}) =>
    orgs(who).createAccessRequest({
      organizationSlug: "acme",
      serverId,
      actions: extra.actions ?? [ServerAction.CONSOLE_READ, ServerAction.CONSOLE_COMMAND],
      constraints: { maxUses: extra.maxUses ?? 10, expiresAt: extra.expiresAt },
      reason: "to help with the event",
    });
  const notifications = async (who: Account) => (await t.client(NotificationsService, { session: who.token }).listNotifications({})).notifications;

  before(async () => {
    t = await startTestCore(config);
    ({ owner, admin, member, outsider } = await acmeWithMembers(t));
    member2 = await t.signUp("member2@example.com");
    await joinOrganization(t, owner, "acme", member2, Role.MEMBER);
  });
  after(async () => {
    await t?.close();
  });

  it("runs a request from asking to an approved, narrowed grant, telling the managers and the member", async () => {
    const serverId = await newServer("Asked");
    const { accessRequest } = await ask(serverId);
    assert.equal(accessRequest!.status, AccessRequestStatus.PENDING);
    assert.deepEqual(accessRequest!.actions, [ServerAction.VIEW, ServerAction.CONSOLE_READ, ServerAction.CONSOLE_COMMAND]);
    assert.equal(accessRequest!.userEmail, member.email);
    for (const manager of [owner, admin]) {
      const [note] = await notifications(manager);
      assert.equal(note.kind, NotificationKind.ACCESS_REQUEST);
      assert.match(note.title, /member@example\.com asks for access to Asked/);
      assert.equal(note.link, "/app/o/acme/access");
    }

    // A second pending request for the same server is refused; another server is fine.
    await rejectsWith(ask(serverId), Code.AlreadyExists, "request_pending");

    const approved = await orgs(admin).approveAccessRequest({
      organizationSlug: "acme",
      requestId: accessRequest!.id,
      actions: [ServerAction.CONSOLE_READ],
      constraints: { maxUses: 4 },
    });
    assert.equal(approved.accessRequest!.status, AccessRequestStatus.APPROVED);
    assert.equal(approved.accessRequest!.decidedByEmail, admin.email);
    assert.deepEqual(approved.accessGrant!.actions, [ServerAction.VIEW, ServerAction.CONSOLE_READ]);
    assert.equal(approved.accessGrant!.constraints?.maxUses, 4);
    const mine = await orgs(member).getCurrentMember({ organizationSlug: "acme" });
    assert.deepEqual(
      mine.accessGrants.map((g) => g.serverId),
      [serverId],
    );
    const [told] = await notifications(member);
    assert.match(told.title, /Your access to Asked was approved/);
    assert.equal(told.kind, NotificationKind.ACCESS_REQUEST);

    // Approved, it is decided: neither another approval nor a cancel changes it.
    const again = await rejectsWith(
      orgs(owner).approveAccessRequest({ organizationSlug: "acme", requestId: accessRequest!.id }),
      Code.FailedPrecondition,
      "failed_precondition",
    );
    assert.match(again.rawMessage, /already approved by admin@example\.com/);
    await rejectsWith(orgs(member).cancelAccessRequest({ organizationSlug: "acme", requestId: accessRequest!.id }), Code.FailedPrecondition);

    const { events } = await t.client(ActivityService, { session: owner.token }).listOrganizationActivity({ organizationSlug: "acme", serverId });
    assert.deepEqual(
      events
        .map((e) => e.action)
        .filter((a) => a.startsWith("access_"))
        .reverse(),
      ["access_request.created", "access_grant.created", "access_request.approved"],
    );
  });

  it("replaces the member's existing grant to the server on approval", async () => {
    const serverId = await newServer("Regranted");
    await orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId, actions: [ServerAction.VIEW] });
    const { accessRequest } = await ask(serverId, member, { actions: [ServerAction.CONSOLE_COMMAND] });
    const { accessGrant } = await orgs(owner).approveAccessRequest({ organizationSlug: "acme", requestId: accessRequest!.id });
    const { accessGrants } = await orgs(owner).listAccessGrants({ organizationSlug: "acme", userId: member.userId, serverId });
    assert.deepEqual(
      accessGrants.map((g) => [g.id, g.actions]),
      [[accessGrant!.id, [ServerAction.VIEW, ServerAction.CONSOLE_COMMAND]]],
    );
  });

  it("never lets an approval widen the request (invalid_argument), and leaves it pending", async () => {
    const serverId = await newServer("Narrow");
    const { accessRequest } = await ask(serverId, member, { actions: [ServerAction.CONSOLE_READ], maxUses: 5, expiresAt: inMinutes(60) });
    const requestId = accessRequest!.id;
    const widen = async (
      init: { actions?: ServerAction[]; constraints?: { maxUses?: number; expiresAt?: ReturnType<typeof inMinutes>; durationSeconds?: number } },
      message: RegExp,
    ) => {
      const error = await rejectsWith(orgs(owner).approveAccessRequest({ organizationSlug: "acme", requestId, ...init }), Code.InvalidArgument, "invalid_argument");
      assert.match(error.rawMessage, message);
    };
    await widen({ actions: [ServerAction.CONSOLE_COMMAND] }, /did not ask for console_command/);
    await widen({ constraints: { maxUses: 6, expiresAt: inMinutes(30) } }, /at most 5 uses/);
    await widen({ constraints: { maxUses: 5 } }, /expires at/);
    await widen({ constraints: { maxUses: 5, expiresAt: inMinutes(90) } }, /expires at/);
    const listed = await orgs(owner).listAccessRequests({ organizationSlug: "acme", serverId });
    assert.equal(listed.accessRequests[0].status, AccessRequestStatus.PENDING);
    // Tightening, and adding a constraint it did not have, is allowed.
    const { accessGrant } = await orgs(owner).approveAccessRequest({
      organizationSlug: "acme",
      requestId,
      constraints: { maxUses: 2, expiresAt: inMinutes(30), durationSeconds: 600 },
    });
    assert.deepEqual([accessGrant!.constraints?.maxUses, accessGrant!.constraints?.durationSeconds], [2, 600]);
  });

  it("makes exactly one grant when two admins approve at once; the other is told who did", async () => {
    const serverId = await newServer("Raced");
    const { accessRequest } = await ask(serverId, member2);
    const results = await Promise.allSettled([
      orgs(owner).approveAccessRequest({ organizationSlug: "acme", requestId: accessRequest!.id }),
      orgs(admin).approveAccessRequest({ organizationSlug: "acme", requestId: accessRequest!.id }),
    ]);
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    const error = await rejectsWith(Promise.reject(lost.reason), Code.FailedPrecondition, "failed_precondition");
    assert.match(error.rawMessage, /already approved by (owner|admin)@example\.com/);
    const { accessGrants } = await orgs(owner).listAccessGrants({ organizationSlug: "acme", userId: member2.userId, serverId });
    assert.equal(accessGrants.length, 1);
  });

  it("refuses approving or denying one's own request, even after a promotion (permission_denied)", async () => {
    const serverId = await newServer("Self");
    const { accessRequest } = await ask(serverId, member2);
    await orgs(owner).updateMemberRole({ organizationSlug: "acme", userId: member2.userId, role: Role.ADMIN });
    try {
      await rejectsWith(orgs(member2).approveAccessRequest({ organizationSlug: "acme", requestId: accessRequest!.id }), Code.PermissionDenied, "permission_denied");
      await rejectsWith(
        orgs(member2).denyAccessRequest({ organizationSlug: "acme", requestId: accessRequest!.id, reason: "no" }),
        Code.PermissionDenied,
        "permission_denied",
      );
      // Managers need no requests.
      await rejectsWith(ask(await newServer("Admin asks"), member2), Code.FailedPrecondition, "failed_precondition");
    } finally {
      await orgs(owner).updateMemberRole({ organizationSlug: "acme", userId: member2.userId, role: Role.MEMBER });
    }
    // A member cannot decide at all.
    await rejectsWith(orgs(member).approveAccessRequest({ organizationSlug: "acme", requestId: accessRequest!.id }), Code.PermissionDenied, "permission_denied");
  });

  it("denies with a reason the member is told; cancels only the requester's pending request", async () => {
    const serverId = await newServer("Denied");
    const { accessRequest } = await ask(serverId);
    await rejectsWith(orgs(owner).denyAccessRequest({ organizationSlug: "acme", requestId: accessRequest!.id, reason: "" }), Code.InvalidArgument);
    const denied = await orgs(owner).denyAccessRequest({ organizationSlug: "acme", requestId: accessRequest!.id, reason: "not during the event" });
    assert.deepEqual([denied.accessRequest!.status, denied.accessRequest!.decisionReason], [AccessRequestStatus.DENIED, "not during the event"]);
    const [told] = await notifications(member);
    assert.match(told.title, /was denied/);
    assert.match(told.body, /not during the event/);

    const second = (await ask(serverId)).accessRequest!;
    await rejectsWith(orgs(member2).cancelAccessRequest({ organizationSlug: "acme", requestId: second.id }), Code.NotFound, "not_found");
    await rejectsWith(orgs(admin).cancelAccessRequest({ organizationSlug: "acme", requestId: second.id }), Code.PermissionDenied, "permission_denied");
    const cancelled = await orgs(member).cancelAccessRequest({ organizationSlug: "acme", requestId: second.id });
    assert.equal(cancelled.accessRequest!.status, AccessRequestStatus.CANCELLED);
    await rejectsWith(orgs(owner).approveAccessRequest({ organizationSlug: "acme", requestId: second.id }), Code.FailedPrecondition, "failed_precondition");
    await rejectsWith(orgs(outsider).createAccessRequest({ organizationSlug: "acme", serverId, actions: [ServerAction.VIEW] }), Code.NotFound, "not_found");
  });

  it("ends a removed member's pending requests", async () => {
    const leaver = await t.signUp("leaver@example.com");
    await joinOrganization(t, owner, "acme", leaver, Role.MEMBER);
    const { accessRequest } = await ask(await newServer("Left behind"), leaver);
    await orgs(admin).removeMember({ organizationSlug: "acme", userId: leaver.userId });
    const { accessRequests } = await orgs(owner).listAccessRequests({ organizationSlug: "acme", userId: leaver.userId });
    assert.deepEqual(
      accessRequests.map((r) => [r.id, r.status, r.decidedByEmail]),
      [[accessRequest!.id, AccessRequestStatus.CANCELLED, admin.email]],
    );
  });

  it("lists: managers all of the organization's with filters and pages; a member only their own", async () => {
    const all: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await orgs(owner).listAccessRequests({ organizationSlug: "acme", limit: 2, cursor });
      all.push(...page.accessRequests.map((r) => r.id));
      cursor = page.nextCursor || undefined;
    } while (cursor);
    const whole = (await orgs(owner).listAccessRequests({ organizationSlug: "acme" })).accessRequests;
    assert.deepEqual(
      all,
      whole.map((r) => r.id),
    );
    assert.equal(whole.length, 8);
    assert.ok(whole.some((r) => r.userId === member2.userId));

    const pending = await orgs(admin).listAccessRequests({ organizationSlug: "acme", status: AccessRequestStatus.PENDING });
    assert.ok(pending.accessRequests.every((r) => r.status === AccessRequestStatus.PENDING));
    const byMember2 = await orgs(admin).listAccessRequests({ organizationSlug: "acme", userId: member2.userId });
    assert.ok(byMember2.accessRequests.length >= 1 && byMember2.accessRequests.every((r) => r.userId === member2.userId));

    const own = await orgs(member).listAccessRequests({ organizationSlug: "acme" });
    assert.ok(own.accessRequests.length >= 1 && own.accessRequests.every((r) => r.userId === member.userId));
    await rejectsWith(orgs(member).listAccessRequests({ organizationSlug: "acme", userId: member2.userId }), Code.PermissionDenied, "permission_denied");
    await rejectsWith(orgs(owner).listAccessRequests({ organizationSlug: "acme", cursor: "nope!" }), Code.InvalidArgument);
    await rejectsWith(orgs(outsider).listAccessRequests({ organizationSlug: "acme" }), Code.NotFound);
  });
});
