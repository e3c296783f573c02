import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { NotificationKind, NotificationsService } from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import { noticeExpiringKeys } from "../../core/notifications/expiring-keys.ts";
import { startTestCore, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { joinOrganization, type Account } from "../support/fixtures.ts";

describe("notifications", () => {
  let t: TestCore;
  let owner: Account;
  let ana: Account;
  let bo: Account;
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const notes = (who: Account) => t.client(NotificationsService, { session: who.token });
  const unread = async (who: Account) => (await notes(who).getUnreadCount({})).unread;
  /** A verified colleague of the owner (in their lobby organization), whom addMember adds at once, with a notification. */
  const colleague = (who: Account) => joinOrganization(t, owner, "lobby", who, Role.MEMBER);

  before(async () => {
    t = await startTestCore();
    owner = await t.signUp("owner@example.com");
    ana = await t.signUp("ana@example.com");
    bo = await t.signUp("bo@example.com");
    await orgs(owner).createOrganization({ name: "Acme", slug: "acme" });
    await orgs(owner).createOrganization({ name: "Lobby", slug: "lobby" });
    await colleague(ana);
    await colleague(bo);
  });
  after(async () => {
    await t?.close();
  });

  it("tells a user they were added, their role changed and they were removed, and not the one who did it", async () => {
    await orgs(owner).addMember({ organizationSlug: "acme", email: ana.email, role: Role.MEMBER });
    await orgs(owner).updateMemberRole({ organizationSlug: "acme", userId: ana.userId, role: Role.ADMIN });
    await orgs(owner).removeMember({ organizationSlug: "acme", userId: ana.userId });
    const { notifications } = await notes(ana).listNotifications({});
    assert.deepEqual(
      notifications.map((n) => n.title),
      ["You were removed from Acme", "Your role in Acme is now admin", "You were added to Acme"],
    );
    assert.ok(notifications.every((n) => n.kind === NotificationKind.MEMBERSHIP && n.readAt === undefined));
    assert.equal(notifications[2]!.link, "/app/o/acme");
    assert.match(notifications[2]!.body, /owner@example\.com added you as a member/);
    assert.equal(notifications[0]!.link, "", "a removed member no longer sees the organization: nothing to link");
    assert.equal(await unread(ana), 3);
    assert.equal(await unread(owner), 0);
  });

  it("marks only the caller's own as read, once", async () => {
    await orgs(owner).addMember({ organizationSlug: "acme", email: bo.email, role: Role.MEMBER });
    const [boNote] = (await notes(bo).listNotifications({})).notifications;
    const [anaNote] = (await notes(ana).listNotifications({})).notifications;
    assert.equal((await notes(ana).markRead({ notificationIds: [boNote!.id] })).marked, 0, "another user's id is not found, and changes nothing");
    assert.equal(await unread(bo), 1);
    assert.equal((await notes(ana).markRead({ notificationIds: [anaNote!.id] })).marked, 1);
    assert.equal((await notes(ana).markRead({ notificationIds: [anaNote!.id] })).marked, 0, "marking again is harmless");
    assert.equal(await unread(ana), 2);
    const read = (await notes(ana).listNotifications({})).notifications.find((n) => n.id === anaNote!.id);
    assert.ok(read?.readAt, "read_at is set");
    assert.equal((await notes(ana).listNotifications({ unreadOnly: true })).notifications.length, 2);
    assert.equal((await notes(ana).markAllRead({})).marked, 2);
    assert.equal(await unread(ana), 0);
    assert.equal(await unread(bo), 1);
  });

  it("pages newest first with an opaque cursor that stays put while new ones arrive", async () => {
    const dee = await t.signUp("dee@example.com");
    await colleague(dee);
    for (let i = 0; i < 5; i++) {
      await orgs(owner).addMember({ organizationSlug: "acme", email: dee.email, role: Role.MEMBER });
      await orgs(owner).removeMember({ organizationSlug: "acme", userId: dee.userId });
    }
    const first = await notes(dee).listNotifications({ limit: 4 });
    assert.equal(first.notifications.length, 4);
    assert.ok(first.nextCursor);
    await orgs(owner).addMember({ organizationSlug: "acme", email: dee.email, role: Role.MEMBER });
    const second = await notes(dee).listNotifications({ limit: 4, cursor: first.nextCursor });
    const third = await notes(dee).listNotifications({ limit: 4, cursor: second.nextCursor });
    assert.equal(third.nextCursor, "");
    const ids = [...first.notifications, ...second.notifications, ...third.notifications].map((n) => n.id);
    assert.equal(ids.length, 10, "every one of the ten before the first page, once, and not the one that came later");
    assert.equal(new Set(ids).size, 10);
    await rejectsWith(notes(dee).listNotifications({ cursor: "not-a-cursor" }), Code.InvalidArgument);
    const dashes = Buffer.from(`${new Date().toISOString()}|${"-".repeat(36)}`).toString("base64url");
    await rejectsWith(notes(dee).listNotifications({ cursor: dashes }), Code.InvalidArgument);
    await rejectsWith(notes(dee).listNotifications({ limit: 101 }), Code.InvalidArgument);
  });

  it("keeps nothing of a kind the user turned off, and says what is pushed", async () => {
    const eve = await t.signUp("eve@example.com");
    await colleague(eve);
    const defaults = (await notes(eve).getNotificationPreferences({})).preferences;
    assert.deepEqual(
      defaults.map((p) => [NotificationKind[p.kind], p.inApp, p.push]),
      [
        ["MEMBERSHIP", true, false],
        ["API_KEY", true, false],
        ["ALERT", true, false],
        ["ACCESS_REQUEST", true, false],
      ],
    );
    await notes(eve).updateNotificationPreferences({ preferences: [{ kind: NotificationKind.MEMBERSHIP, inApp: false, push: false }] });
    await notes(eve).updateNotificationPreferences({ preferences: [{ kind: NotificationKind.API_KEY, inApp: true, push: true }] });
    const now = (await notes(eve).getNotificationPreferences({})).preferences;
    assert.deepEqual(
      now.map((p) => [NotificationKind[p.kind], p.inApp, p.push]),
      [
        ["MEMBERSHIP", false, false],
        ["API_KEY", true, true],
        ["ALERT", true, false],
        ["ACCESS_REQUEST", true, false],
      ],
      "an update keeps the kinds it does not name",
    );
    await orgs(owner).addMember({ organizationSlug: "acme", email: eve.email, role: Role.MEMBER });
    assert.equal(await unread(eve), 0);
    await rejectsWith(
      notes(eve).updateNotificationPreferences({ preferences: [{ kind: NotificationKind.UNSPECIFIED, inApp: true, push: false }] }),
      Code.InvalidArgument,
    );
    await rejectsWith(
      notes(eve).updateNotificationPreferences({
        preferences: [
          { kind: NotificationKind.ALERT, inApp: true, push: false },
          { kind: NotificationKind.ALERT, inApp: false, push: false },
        ],
      }),
      Code.InvalidArgument,
    );
  });

  it("tells a user once of each API key that expires within a week, whichever instances look", async () => {
    const fay = await t.signUp("fay@example.com");
    const auth = t.client(AuthService, { session: fay.token });
    await auth.createApiKey({ name: "deploy script", expiry: { case: "expiresInDays", value: 7 } });
    await auth.createApiKey({ name: "later", expiry: { case: "expiresInDays", value: 30 } });
    await auth.createApiKey({ name: "forever" });
    const revoked = await auth.createApiKey({ name: "revoked", expiry: { case: "expiresInDays", value: 7 } });
    await auth.revokeApiKey({ apiKeyId: revoked.apiKey!.id });
    await Promise.all([noticeExpiringKeys(t.deps, t.clock.now()), noticeExpiringKeys(t.deps, t.clock.now())]);
    await noticeExpiringKeys(t.deps, t.clock.now());
    const { notifications } = await notes(fay).listNotifications({});
    assert.deepEqual(
      notifications.map((n) => [NotificationKind[n.kind], n.title]),
      [["API_KEY", 'Your API key "deploy script" expires soon']],
    );
    assert.equal(notifications[0]!.link, "/app/account/security");
  });

  it("streams the unread count at once and again when it changes", async () => {
    const gus = await t.signUp("gus@example.com");
    await colleague(gus);
    const abort = new AbortController();
    const stream = notes(gus).watchUnreadCount({}, { signal: abort.signal })[Symbol.asyncIterator]();
    try {
      assert.equal((await stream.next()).value?.unread, 0);
      await orgs(owner).addMember({ organizationSlug: "acme", email: gus.email, role: Role.MEMBER });
      assert.equal((await stream.next()).value?.unread, 1);
      await notes(gus).markAllRead({});
      assert.equal((await stream.next()).value?.unread, 0);
    } finally {
      abort.abort();
    }
  });

  it("refuses a caller without a credential", async () => {
    await rejectsWith(t.client(NotificationsService).getUnreadCount({}), Code.Unauthenticated);
  });
});
